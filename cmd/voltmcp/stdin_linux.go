package main

import (
	"io"
	"os"
	"syscall"
)

// pollStdin returns the reader `voltmcp serve` reads the agent's
// messages from. When in is a pipe or a socket in blocking mode (as an
// agent starts a server), it returns a duplicate of its descriptor in
// non-blocking mode, whose reads wait in Go's poller: a read blocked in
// the kernel holds a thread in a system call, which the runtime then
// hands its processor away from and back to on every message, a cost
// that shows in each call's latency on a small machine
// (docs/benchmarks.md). Closing the duplicate also ends a read in
// progress, which closing a blocking descriptor does not. The engine
// reads such a file with raw system calls (engine.ServeStdio).
//
// Non-blocking mode belongs to the open file, which other processes may
// share: restore puts the mode back, and must run when serving ends.
// A terminal, a regular file, or a stdin that is also stdout (one
// socket both ways) is left as it is, as is any reader that is not a
// file; restore then does nothing.
func pollStdin(in io.Reader, out io.Writer) (r io.ReadCloser, restore func()) {
	f, restore, ok := pollable(in, "stdin", out)
	if !ok {
		return io.NopCloser(in), restore
	}
	return f, restore
}

// pollStdout is pollStdin for the writer of serve's answers, so that an
// answer is written without the runtime's system call bookkeeping too.
// Besides what pollStdin leaves alone, a stdout that is also stderr (as
// after 2>&1) is left as it is: stderr's writes, which do not wait in
// the poller, would fail when the pipe is full.
func pollStdout(out io.Writer, in io.Reader, errOut io.Writer) (w io.WriteCloser, restore func()) {
	f, restore, ok := pollable(out, "stdout", in, errOut)
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
