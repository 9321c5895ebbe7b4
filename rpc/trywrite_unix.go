//go:build unix

package rpc

import (
	"errors"
	"io"
	"syscall"
)

// tryWriter returns a write that writes what conn takes at once and
// never waits, when conn is a socket or pipe in the runtime's poller
// (a syscall.Conn, such as a *net.UnixConn); nil otherwise. The write
// returns how many bytes were written: fewer than asked when the
// connection's buffer is full.
func tryWriter(conn io.ReadWriteCloser) func([]byte) (int, error) {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return func(b []byte) (int, error) {
		var n int
		var werr error
		err := rc.Write(func(fd uintptr) bool {
			n, werr = syscall.Write(int(fd), b)
			return true // one attempt: never wait for the poller
		})
		switch {
		case err != nil:
			return 0, err
		case errors.Is(werr, syscall.EAGAIN), errors.Is(werr, syscall.EINTR):
			return 0, nil
		case werr != nil:
			return 0, werr
		}
		return max(n, 0), nil
	}
}
