//go:build linux

package daemon

import (
	"net"
	"syscall"
)

// peerUID returns the uid of the process at the other end of a unix
// socket connection (SO_PEERCRED). When the kernel does not answer it
// returns -1, which matches no user: the connection is refused.
func peerUID(c net.Conn) (uid int, ok bool) {
	uc, isUnix := c.(*net.UnixConn)
	if !isUnix {
		return 0, false
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0, false
	}
	var cred *syscall.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil || cerr != nil {
		return -1, true // unknown peer: refused
	}
	return int(cred.Uid), true
}
