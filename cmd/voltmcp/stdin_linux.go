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
// progress, which closing a blocking descriptor does not.
//
// Non-blocking mode belongs to the open file, which other processes may
// share: restore puts the mode back, and must run when serving ends.
// A terminal, a regular file, or a stdin that is also stdout (one
// socket both ways) is left as it is, as is any reader that is not a
// file; restore then does nothing.
func pollStdin(in io.Reader, out io.Writer) (r io.ReadCloser, restore func()) {
	keep := func() (io.ReadCloser, func()) { return io.NopCloser(in), func() {} }
	fd, ok := fileDescriptor(in)
	if !ok {
		return keep()
	}
	var st syscall.Stat_t
	if syscall.Fstat(fd, &st) != nil {
		return keep()
	}
	if kind := st.Mode & syscall.S_IFMT; kind != syscall.S_IFIFO && kind != syscall.S_IFSOCK {
		return keep()
	}
	if ofd, ok := fileDescriptor(out); ok {
		var ost syscall.Stat_t
		if syscall.Fstat(ofd, &ost) == nil && ost.Dev == st.Dev && ost.Ino == st.Ino {
			return keep()
		}
	}
	flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFL, 0)
	if errno != 0 || flags&syscall.O_NONBLOCK != 0 {
		return keep() // already non-blocking: Go's poller waits for it
	}
	dup, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_DUPFD_CLOEXEC, 0)
	if errno != 0 {
		return keep()
	}
	if syscall.SetNonblock(int(dup), true) != nil {
		syscall.Close(int(dup))
		return keep()
	}
	// NewFile sees the non-blocking mode and registers the descriptor
	// with the poller.
	return os.NewFile(dup, "stdin"), func() { _ = syscall.SetNonblock(fd, false) }
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
