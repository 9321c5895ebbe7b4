//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package safefile

import (
	"context"
	"io/fs"
	"os"
)

// openNonblock opens path read-only. Without O_NOFOLLOW, a link is
// refused by an lstat before the open.
func openNonblock(path string, noFollow bool) (*os.File, error) {
	if noFollow {
		if info, err := os.Lstat(path); err == nil && info.Mode()&fs.ModeSymlink != 0 {
			return nil, &NotRegularError{Path: path, Kind: "symlink"}
		}
	}
	return os.Open(path)
}

// openLockFile returns nil: without flock, locks serialize nothing.
func openLockFile(string) (*os.File, error) { return nil, nil }

// LockFile does nothing without flock.
func LockFile(context.Context, *os.File, func()) error { return nil }

// UnlockFile does nothing without flock.
func UnlockFile(*os.File) {}
