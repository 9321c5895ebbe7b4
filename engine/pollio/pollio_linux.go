//go:build linux

package pollio

import (
	"io"
	"os"
	"syscall"
)

// Reader returns the reader to read in through: when in is an *os.File
// for a pipe or socket in blocking mode that is not the same open file as
// any of others (stdout, say: one socket both ways), a non-blocking
// duplicate of its descriptor, whose reads wait in Go's poller; otherwise
// in as it is. Closing the duplicate also ends a read in progress, which
// closing a blocking descriptor does not. A terminal, a regular file or a
// reader that is not a file is left as it is, and restore then does
// nothing.
func Reader(in io.Reader, others ...any) (r io.ReadCloser, restore func()) {
	f, restore, ok := pollable(in, "stdin", others...)
	if !ok {
		return io.NopCloser(in), restore
	}
	return f, restore
}

// Writer is Reader for a writer, such as stdout: its writes then wait in
// the poller when the pipe is full. Pass stderr among others when it may
// be the same open file (as after 2>&1): stderr's own writes, which do
// not wait in the poller, would fail when the pipe is full.
func Writer(out io.Writer, others ...any) (w io.WriteCloser, restore func()) {
	f, restore, ok := pollable(out, "stdout", others...)
	if !ok {
		return nopWriteCloser{out}, restore
	}
	return f, restore
}

// pollable returns a non-blocking duplicate of v's descriptor, named
// name, when v is a pipe or socket in blocking mode that is not the same
// open file as any of others, and a function that puts v's mode back.
func pollable(v any, name string, others ...any) (dup *os.File, restore func(), ok bool) {
	restore = func() {}
	fd, ok := fileDescriptor(v)
	if !ok {
		return nil, restore, false
	}
	var st syscall.Stat_t
	if syscall.Fstat(fd, &st) != nil {
		return nil, restore, false
	}
	if kind := st.Mode & syscall.S_IFMT; kind != syscall.S_IFIFO && kind != syscall.S_IFSOCK {
		return nil, restore, false
	}
	for _, o := range others {
		if ofd, ok := fileDescriptor(o); ok {
			var ost syscall.Stat_t
			if syscall.Fstat(ofd, &ost) == nil && ost.Dev == st.Dev && ost.Ino == st.Ino {
				return nil, restore, false
			}
		}
	}
	flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFL, 0)
	if errno != 0 || flags&syscall.O_NONBLOCK != 0 {
		return nil, restore, false // already non-blocking: Go's poller waits for it
	}
	d, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_DUPFD_CLOEXEC, 0)
	if errno != 0 {
		return nil, restore, false
	}
	if syscall.SetNonblock(int(d), true) != nil {
		syscall.Close(int(d))
		return nil, restore, false
	}
	// NewFile sees the non-blocking mode and registers the descriptor
	// with the poller.
	return os.NewFile(d, name), func() { _ = syscall.SetNonblock(fd, false) }, true
}

// fileDescriptor returns the descriptor of v when it is an *os.File,
// without changing its mode as (*os.File).Fd does.
func fileDescriptor(v any) (int, bool) {
	f, ok := v.(*os.File)
	if !ok || f == nil {
		return 0, false
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, false
	}
	fd := -1
	if rc.Control(func(d uintptr) { fd = int(d) }) != nil || fd < 0 {
		return 0, false
	}
	return fd, true
}
