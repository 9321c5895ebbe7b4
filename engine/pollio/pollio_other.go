//go:build !linux

package pollio

import "io"

// Reader returns in as it is: waiting for a pipe in Go's poller
// (pollio_linux.go) is done on Linux only.
func Reader(in io.Reader, _ ...any) (io.ReadCloser, func()) {
	return io.NopCloser(in), func() {}
}

// Writer returns out as it is, as Reader does.
func Writer(out io.Writer, _ ...any) (io.WriteCloser, func()) {
	return nopWriteCloser{out}, func() {}
}
