//go:build unix

package main

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/voltmcp/voltmcp/safefile"
)

// oNoFollow makes an open fail on a symlink.
const oNoFollow = syscall.O_NOFOLLOW

// openPrivateFile opens path for reading as package safefile does
// (without following a symlink or blocking on a FIFO, a regular file
// readable by no one else), and refuses a file owned by another user.
func openPrivateFile(path string) (*os.File, error) {
	f, info, err := safefile.Open(path, &safefile.ReadOptions{NoFollow: true, Private: true, MaxSize: -1})
	switch {
	case errors.Is(err, safefile.ErrNotPrivate):
		return nil, fmt.Errorf("%s: others may have read the token; delete it to make a new one", safefile.Pathless(err))
	case err != nil:
		return nil, safefile.Pathless(err)
	}
	if st, _ := info.Sys().(*syscall.Stat_t); st != nil && int(st.Uid) != os.Getuid() {
		f.Close()
		return nil, fmt.Errorf("is owned by uid %d, not by this user (uid %d); refusing it", st.Uid, os.Getuid())
	}
	return f, nil
}
