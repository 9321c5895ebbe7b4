//go:build !linux

package main

import "io"

// pollStdin returns in as it is: waiting for a pipe in Go's poller
// (stdin_linux.go) is done on Linux only.
func pollStdin(in io.Reader, _ io.Writer) (io.ReadCloser, func()) {
	return io.NopCloser(in), func() {}
}

// pollStdout returns out as it is, as pollStdin does.
func pollStdout(out io.Writer, _ io.Reader, _ io.Writer) (io.WriteCloser, func()) {
	return nopWriteCloser{out}, func() {}
}
