//go:build unix

package main

import (
	"fmt"
	"os"
	"syscall"
)

// oNoFollow makes an open fail on a symlink.
const oNoFollow = syscall.O_NOFOLLOW

// openPrivateFile opens path for reading without following a symlink or
// blocking on a FIFO, and refuses anything but a regular file owned by
// this user and readable by no one else.
func openPrivateFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if pe, ok := err.(*os.PathError); ok && pe.Err == syscall.ELOOP {
			return nil, fmt.Errorf("is a symlink; refusing it")
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.Mode().IsRegular():
		err = fmt.Errorf("is not a regular file (%s); refusing it", fi.Mode().Type())
	case st != nil && int(st.Uid) != os.Getuid():
		err = fmt.Errorf("is owned by uid %d, not by this user (uid %d); refusing it", st.Uid, os.Getuid())
	case fi.Mode().Perm()&0o077 != 0:
		err = fmt.Errorf("has mode %04o: others may have read the token; delete it to make a new one", fi.Mode().Perm())
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// checkPrivateDir refuses a directory that is a symlink, is not this
// user's, or that others may write to (where they could swap the file).
func checkPrivateDir(dir string) error {
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
