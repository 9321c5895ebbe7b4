//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package audit

import (
	"context"
	"os"

	"github.com/voltmcp/voltmcp/safefile"
)

// openLock opens the lock file that serializes the writers of the log at
// path.
func openLock(path string) (*os.File, error) {
	return os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
}

// lockFile takes an exclusive flock on f, waiting until it is free or ctx
// ends (safefile.LockFile). Writers hold it for one append (or
// Options.HoldLock), so waits are short. wait runs before each wait.
func lockFile(ctx context.Context, f *os.File, wait func()) error {
	return safefile.LockFile(ctx, f, wait)
}

// unlockFile releases the flock lockFile took.
func unlockFile(f *os.File) { safefile.UnlockFile(f) }
