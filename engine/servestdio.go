package engine

import (
	"io"
	"os"
	"sync"

	"github.com/voltmcp/voltmcp/engine/internal/rawio"
	"github.com/voltmcp/voltmcp/engine/pollio"
)

// servedIn returns what ServeStdio reads in place of in: for an *os.File
// in blocking mode that is a pipe or socket, and not the same open file
// as out, a non-blocking duplicate whose reads wait in Go's poller
// (package pollio); then, on Linux, a file the poller watches is read
// with raw system calls (rawio). Anything else is in as it is.
func servedIn(in io.ReadCloser, out io.WriteCloser) io.ReadCloser {
	f, ok := in.(*os.File)
	if !ok {
		return in
	}
	r, restore := pollio.Reader(f, out)
	if dup, ok := r.(*os.File); ok {
		return &polled{ReadWriteCloser: rawio.Wrap(dup), restore: restore, orig: f}
	}
	return rawio.Wrap(f)
}

// servedOut is servedIn for out, which must not be the same open file as
// in or as the process's stderr (after 2>&1): stderr's own writes, which
// do not wait in the poller, would fail while the pipe is full.
func servedOut(out io.WriteCloser, in io.ReadCloser) io.WriteCloser {
	f, ok := out.(*os.File)
	if !ok {
		return out
	}
	w, restore := pollio.Writer(f, in, os.Stderr)
	if dup, ok := w.(*os.File); ok {
		return &polled{ReadWriteCloser: rawio.Wrap(dup), restore: restore, orig: f}
	}
	return rawio.Wrap(f)
}

// polled is the poller's duplicate of a file ServeStdio was given.
// Closing it closes the duplicate, which ends a read in progress, puts
// the file's blocking mode back and closes the file, once.
type polled struct {
	io.ReadWriteCloser
	restore func()
	orig    *os.File
	once    sync.Once
	err     error
}

func (p *polled) Close() error {
	p.once.Do(func() {
		p.err = p.ReadWriteCloser.Close()
		p.restore()
		if err := p.orig.Close(); p.err == nil {
			p.err = err
		}
	})
	return p.err
}
