//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package safefile

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// openNonblock opens path read-only with O_NONBLOCK, so that opening a
// FIFO with no writer or a device returns at once, and with O_NOFOLLOW
// when noFollow is set. A regular file ignores O_NONBLOCK, so reads of
// one behave as usual.
func openNonblock(path string, noFollow bool) (*os.File, error) {
	flags := os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_CLOEXEC
	if noFollow {
		flags |= syscall.O_NOFOLLOW
	}
	f, err := os.OpenFile(path, flags, 0)
	if noFollow {
		return f, linkRefused(path, err)
	}
	return f, err
}

// linkRefused names the error of an O_NOFOLLOW open that met a
// symbolic link at path: a [*NotRegularError] of kind symlink. Any other
// error, or none, is returned as it is.
func linkRefused(path string, err error) error {
	if err != nil && errors.Is(err, syscall.ELOOP) {
		if info, lerr := os.Lstat(path); lerr == nil && info.Mode()&fs.ModeSymlink != 0 {
			return &NotRegularError{Path: path, Kind: "symlink"}
		}
	}
	return err
}

// openAppend opens path read-write for appending, creating it, with
// O_NONBLOCK (a FIFO or device opens at once; a regular file ignores it)
// and O_NOFOLLOW.
func openAppend(path string, perm fs.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE|syscall.O_NONBLOCK|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, perm)
	return f, linkRefused(path, err)
}

// openLockFile opens (creating, 0600) the lock file at path. It refuses
// to follow a link or open anything but a regular file.
func openLockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NONBLOCK|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = &NotRegularError{Path: path, Kind: kindOf(info.Mode())}
		}
		return nil, err
	}
	return f, nil
}

// LockFile takes an exclusive flock on the open file f, waiting until it
// is free or ctx ends. wait, when not nil, runs before each wait. The
// wait polls (from 50µs, doubling to 10ms), since a blocking flock cannot
// be cancelled.
func LockFile(ctx context.Context, f *os.File, wait func()) error {
	delay := firstLockDelay
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			return err
		}
		if wait != nil {
			wait()
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		delay = min(2*delay, maxLockDelay)
	}
}

// UnlockFile releases the flock [LockFile] took.
func UnlockFile(f *os.File) {
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}
