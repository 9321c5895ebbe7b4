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

// openAppend opens path read-write for appending, creating it. Without
// O_NOFOLLOW, a link is refused by an lstat before the open.
func openAppend(path string, perm fs.FileMode) (*os.File, error) {
	if info, err := os.Lstat(path); err == nil && !info.Mode().IsRegular() {
		return nil, &NotRegularError{Path: path, Kind: kindOf(info.Mode())}
	}
	return os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, perm)
}

// openLockFile returns nil: without flock, locks serialize nothing.
func openLockFile(string) (*os.File, error) { return nil, nil }

// LockFile does nothing without flock.
func LockFile(context.Context, *os.File, func()) error { return nil }

// UnlockFile does nothing without flock.
func UnlockFile(*os.File) {}
