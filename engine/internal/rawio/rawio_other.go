//go:build !linux

package rawio

import (
	"io"
	"os"
)

// Wrap returns f: raw system calls are used on Linux only.
func Wrap(f *os.File) io.ReadWriteCloser { return f }
