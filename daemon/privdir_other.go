//go:build !unix

package daemon

import (
	"fmt"
	"io/fs"
	"os"
)

// CheckPrivateDir refuses a directory that is not one. There are no
// Unix owners or modes to check here.
func CheckPrivateDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory; refusing it", dir)
	}
	return nil
}

// checkOwner has no owner to check here.
func checkOwner(fs.FileInfo) error { return nil }
