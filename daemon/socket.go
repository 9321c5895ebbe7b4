package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"time"
)

// ListenSocket listens on a unix socket at path, for the daemon and for
// `voltmcp serve --socket`: in a directory only this user can enter
// (made 0700 when missing; refused, naming it, when it is a symlink, is
// another user's, or others may enter or write it), mode 0600, with each
// connection's peer checked to run as this user where the system tells
// (SO_PEERCRED on Linux). A socket left by a process that is gone (one
// no one answers) is replaced; a live one, or anything else at path, is
// refused, naming path.
func ListenSocket(path string) (net.Listener, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	if err := CheckPrivateDir(dir); err != nil {
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	if fi, err := os.Lstat(dir); err == nil && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("socket %s: directory %s has mode %04o: others could reach the socket; use a directory only you can enter (chmod 700)", path, dir, fi.Mode().Perm())
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("socket %s: exists and is not a socket; refusing to replace it", path)
		}
		if err := checkOwner(fi); err != nil {
			return nil, fmt.Errorf("socket %s: %w", path, err)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("socket %s: another process is serving on it", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("socket %s: remove the stale socket: %w", path, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	// The directory keeps others out until the mode is set.
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	return &ownerListener{Listener: ln}, nil
}

// ownerListener accepts only connections whose peer runs as this user,
// where the system says (peerUID).
type ownerListener struct {
	net.Listener
}

func (l *ownerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if uid, ok := peerUID(c); ok && uid != os.Getuid() {
			c.Close()
			continue
		}
		return c, nil
	}
}
