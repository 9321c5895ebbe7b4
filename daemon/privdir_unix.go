//go:build unix

package daemon

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// CheckPrivateDir refuses a directory that is a symlink, is not this
// user's, or that others may write to (where they could swap a file or
// socket in it), naming it.
func CheckPrivateDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory (a symlink?); refusing it", dir)
	case st != nil && int(st.Uid) != os.Getuid():
		return fmt.Errorf("directory %s is owned by uid %d, not by this user; refusing it", dir, st.Uid)
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("directory %s has mode %04o: others can write to it; use a directory only you can write (chmod 700)", dir, fi.Mode().Perm())
	}
	return nil
}

// checkOwner refuses a file of another user.
func checkOwner(fi fs.FileInfo) error {
	if st, _ := fi.Sys().(*syscall.Stat_t); st != nil && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("is owned by uid %d, not by this user (uid %d); refusing it", st.Uid, os.Getuid())
	}
	return nil
}
