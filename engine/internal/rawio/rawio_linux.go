package rawio

import (
	"io"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// file is an *os.File read and written with raw system calls.
type file struct {
	f      *os.File
	rc     syscall.RawConn
	closed atomic.Bool
}

// Wrap returns f, read and written with raw system calls when f is a
// descriptor in non-blocking mode that Go's poller watches (a pipe from
// os.Pipe, or a non-blocking pipe or socket given to os.NewFile), and f
// itself otherwise. Closing the result closes f.
func Wrap(f *os.File) io.ReadWriteCloser {
	rc, err := f.SyscallConn()
	if err != nil {
		return f
	}
	ok := false
	if rc.Control(func(fd uintptr) {
		flags, _, errno := syscall.RawSyscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
		if errno != 0 || flags&syscall.O_NONBLOCK == 0 {
			return
		}
		var st syscall.Stat_t
		if syscall.Fstat(int(fd), &st) != nil {
			return
		}
		kind := st.Mode & syscall.S_IFMT
		ok = kind == syscall.S_IFIFO || kind == syscall.S_IFSOCK
	}) != nil || !ok {
		return f
	}
	return &file{f: f, rc: rc}
}

// Read reads up to len(p) bytes, waiting in the poller while there are
// none; it returns io.EOF at the end of the stream.
func (r *file) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	err := r.rc.Read(func(fd uintptr) bool {
		for {
			m, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // wait in the poller, then call again
			}
			n, errno = int(m), e
			return true
		}
	})
	switch {
	case err != nil:
		return 0, r.wrap("read", err)
	case errno != 0:
		return 0, &os.PathError{Op: "read", Path: r.f.Name(), Err: errno}
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// Write writes all of p, waiting in the poller while the descriptor is
// full. A write to a pipe whose reader is gone fails with EPIPE.
func (r *file) Write(p []byte) (int, error) {
	var n int
	var errno syscall.Errno
	err := r.rc.Write(func(fd uintptr) bool {
		for n < len(p) {
			m, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[n])), uintptr(len(p)-n))
			switch e {
			case 0:
				n += int(m)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false
			default:
				errno = e
				return true
			}
		}
		return true
	})
	switch {
	case err != nil:
		return n, r.wrap("write", err)
	case errno != 0:
		return n, &os.PathError{Op: "write", Path: r.f.Name(), Err: errno}
	}
	return n, nil
}

// Close closes the file, ending a Read or Write waiting on it.
func (r *file) Close() error {
	r.closed.Store(true)
	return r.f.Close()
}

// wrap returns the error of the poller's wait: os.ErrClosed, as os.File
// says, when the file was closed.
func (r *file) wrap(op string, err error) error {
	if r.closed.Load() {
		err = os.ErrClosed
	}
	return &os.PathError{Op: op, Path: r.f.Name(), Err: err}
}
