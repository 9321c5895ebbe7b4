package pollio

import (
	"io"
	"os"
)

// Stdio returns the process's standard input and output for a server
// that speaks on them: Reader(os.Stdin, os.Stdout) and
// Writer(os.Stdout, os.Stdin, os.Stderr). restore puts back both modes.
func Stdio() (in io.ReadCloser, out io.WriteCloser, restore func()) {
	in, restoreIn := Reader(os.Stdin, os.Stdout)
	out, restoreOut := Writer(os.Stdout, os.Stdin, os.Stderr)
	return in, out, func() {
		restoreOut()
		restoreIn()
	}
}

// nopWriteCloser is a writer whose Close does nothing.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
