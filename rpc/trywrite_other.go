//go:build !unix

package rpc

import "io"

// tryWriter is nil where the connection's descriptor is not written
// directly: every line goes through the writer.
func tryWriter(io.ReadWriteCloser) func([]byte) (int, error) { return nil }
