//go:build !unix

package main

import (
	"fmt"
	"os"
)

// oNoFollow is 0 here: the file is checked with Lstat instead.
const oNoFollow = 0

// openPrivateFile opens path for reading, refusing a symlink and
// anything but a regular file. There are no Unix owners or modes to
// check here: the file lives in the user's profile.
func openPrivateFile(path string) (*os.File, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("is not a regular file (%s); refusing it", fi.Mode().Type())
	}
	return os.Open(path)
}
