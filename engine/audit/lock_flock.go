//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package audit

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"
)

// openLock opens the lock file that serializes the writers of the log at
// path.
func openLock(path string) (*os.File, error) {
	return os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
}

// lockFile takes an exclusive flock on f, waiting until it is free or ctx
// ends. Writers hold it for one append (or Options.HoldLock), so waits
// are short. wait runs before the first wait.
func lockFile(ctx context.Context, f *os.File, wait func()) error {
	delay := 50 * time.Microsecond
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			return err
		}
		wait()
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		delay = min(2*delay, 10*time.Millisecond)
	}
}

// unlockFile releases the flock lockFile took.
func unlockFile(f *os.File) {
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}
