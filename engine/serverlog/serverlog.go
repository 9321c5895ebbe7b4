// Package serverlog keeps the log of each upstream server: what a stdio
// server writes to stderr, line by line, and the transport errors of an
// HTTP server (a refused connection, an error status, a stream that
// ended), one record a line.
//
// A log is a file of JSON lines ([Record]) under the agent directory,
// <agent-dir>/mcp/logs/<identity>.log, 0600 in a 0700 directory, with one
// older generation beside it (<identity>.log.1): when an append would
// take the file past [Options.MaxBytes] (1 MiB by default), the file is
// renamed to the older generation, replacing it, and a new one is
// started, so a server's log never takes more than twice the cap
// however much it prints. Every line is cleaned (see
// [sanitize.Output]) and scrubbed by the caller's redactor
// ([Options.Scrub]) before it is written, and a stderr line is cut at
// [MaxLineBytes].
//
// Several processes (serve sessions, CLI commands) may write the log of
// one server at once: each batch of lines is one write(2) to a file
// opened with O_APPEND, and the size check and rotation are serialized
// between processes by an exclusive lock on <identity>.log.lock (see
// [safefile.Lock]). The file is opened without following a link and
// without blocking: a FIFO, a device or a link planted at the log's path
// is refused, and the failure is kept for [Writer.Err].
//
// A [Writer] never slows the server it logs: [Writer.Write] and
// [Writer.Record] queue the lines and return at once, and one goroutine
// writes them to the file. When the queue is full (a server that floods
// stderr faster than the disk takes it), lines are dropped and counted,
// and the log says how many.
//
// A log is found by the server's identity, so a server renamed or
// redefined starts a log of its own; engine.Forget deletes the log of a
// removed server.
//
// [Read] and [Follow] read a log back, both generations in order, for
// `voltmcp logs`.
package serverlog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/voltmcp/voltmcp/safefile"
	"github.com/voltmcp/voltmcp/sanitize"
)

// Bounds of a log.
const (
	// DefaultMaxBytes is the size at which a log is rotated when
	// Options.MaxBytes is zero.
	DefaultMaxBytes = 1 << 20
	// MaxLineBytes bounds the text of one record: a longer stderr line
	// is cut, ending in "…".
	MaxLineBytes = 4 << 10
	// scanBytes bounds the bytes of one stderr line read before it is
	// cut: the whole of it is scrubbed before the cut, so that a secret
	// across the cut is removed whole.
	scanBytes = 64 << 10
	// queueBytes bounds the encoded lines waiting for the file.
	queueBytes = 256 << 10
	// lockWait bounds the wait for another process's lock on the log.
	lockWait = 2 * time.Second
)

// Kinds of record.
const (
	// KindStderr is a line a stdio server wrote to stderr.
	KindStderr = "stderr"
	// KindError is a failure of the server's connection as the gateway
	// saw it: an HTTP server's transport error (a connection refused or
	// ended, an error status), a stdio server's exit.
	KindError = "error"
	// KindNote is what the gateway says of the log itself, such as lines
	// dropped when the queue was full.
	KindNote = "note"
)

// Record is one line of a log.
type Record struct {
	Time   time.Time `json:"time"`
	Server string    `json:"server"`
	Kind   string    `json:"kind"`
	Text   string    `json:"text"`
}

// Dir returns the directory of the server logs under the agent
// directory agentDir.
func Dir(agentDir string) string { return filepath.Join(agentDir, "mcp", "logs") }

// Path returns the log file of the server whose identity is identity
// (see cue.Server.Identity) under the agent directory agentDir.
func Path(agentDir, identity string) string {
	return filepath.Join(Dir(agentDir), identity+".log")
}

// Remove deletes the log at path, its older generation and its lock
// file, and reports whether there was a log.
func Remove(path string) (bool, error) {
	var found bool
	var errs []error
	for _, p := range []string{path, path + ".1", path + ".lock"} {
		switch err := os.Remove(p); {
		case err == nil:
			found = found || p != path+".lock"
		case !errors.Is(err, os.ErrNotExist):
			errs = append(errs, fmt.Errorf("server log: %w", err))
		}
	}
	return found, errors.Join(errs...)
}

// Options configure a [Writer].
type Options struct {
	// Server is the server's id, recorded in each line.
	Server string
	// Scrub removes the server's secrets from a text; every line goes
	// through it before it is written. It must be safe for concurrent
	// use. Nil writes nothing at all: a log is never written unscrubbed.
	Scrub func(string) string
	// MaxBytes is the size at which the log is rotated; zero is
	// DefaultMaxBytes.
	MaxBytes int64
	// Now is the clock of the records; nil is time.Now.
	Now func() time.Time
}

// Writer appends to the log of one server. Its methods are safe for
// concurrent use and never block on the file. The zero value is not
// usable; a nil *Writer logs nothing.
type Writer struct {
	path string
	opts Options

	mu      sync.Mutex
	partial []byte // a stderr line not ended yet, at most scanBytes
	cut     bool   // the stderr line in progress was cut: skip to its end
	queue   []byte // encoded lines waiting for the file
	dropped int    // lines dropped since the last write, the queue full
	running bool   // the goroutine that writes the queue runs
	idle    *sync.Cond
	err     error // the last write's failure, nil after one succeeds
}

// New returns a writer of the log at path (see [Path]). It touches
// nothing until a line is written.
func New(path string, opts Options) *Writer {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	w := &Writer{path: path, opts: opts}
	w.idle = sync.NewCond(&w.mu)
	return w
}

// Path returns the file w writes.
func (w *Writer) Path() string {
	if w == nil {
		return ""
	}
	return w.path
}

// Write takes what a server wrote to stderr and logs each line of it as
// a [KindStderr] record once its newline comes. It always returns
// len(p), nil: a log that cannot be written never fails the server.
func (w *Writer) Write(p []byte) (int, error) {
	if w == nil || w.opts.Scrub == nil {
		return len(p), nil
	}
	n := len(p)
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if !w.cut {
			room := scanBytes - len(w.partial)
			w.partial = append(w.partial, chunk[:min(room, len(chunk))]...)
			if len(chunk) > room {
				// Too long to keep: log what there is, the rest of the
				// line is skipped.
				w.lineLocked(w.partial, true)
				w.partial, w.cut = w.partial[:0], true
			}
		}
		if i < 0 {
			break
		}
		if !w.cut {
			w.lineLocked(w.partial, false)
		}
		w.partial, w.cut = w.partial[:0], false
		p = p[i+1:]
	}
	return n, nil
}

// Record logs text as one record of kind (such as [KindError]).
func (w *Writer) Record(kind, text string) {
	if w == nil || w.opts.Scrub == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fullLocked() {
		return
	}
	w.enqueueLocked(kind, clean(text, w.opts.Scrub, false))
}

// fullLocked reports whether the queue is full, counting the line that
// finds it so; w.mu is held. It is asked before a line is cleaned, so
// that a flood of lines costs little once the queue is full.
func (w *Writer) fullLocked() bool {
	if len(w.queue) < queueBytes {
		return false
	}
	w.dropped++
	return true
}

// lineLocked queues one stderr line; w.mu is held.
func (w *Writer) lineLocked(line []byte, cut bool) {
	if w.fullLocked() {
		return
	}
	w.enqueueLocked(KindStderr, clean(string(line), w.opts.Scrub, cut))
}

// clean returns text as a record keeps it: cleaned of escape sequences
// and control characters, on one line, scrubbed, then cut at
// MaxLineBytes. It is scrubbed whole before the cut, so that a secret
// across the cut is removed whole.
func clean(text string, scrub func(string) string, cut bool) string {
	text, _ = sanitize.Output(text)
	text = strings.TrimRight(text, "\r\n")
	text = strings.ReplaceAll(text, "\n", " ")
	text = scrub(text)
	if len(text) > MaxLineBytes {
		text, cut = text[:MaxLineBytes], true
	}
	if cut {
		text = strings.ToValidUTF8(text, "") + "…"
	}
	return text
}

// enqueueLocked queues a record and starts the goroutine that writes the
// queue; w.mu is held.
func (w *Writer) enqueueLocked(kind, text string) {
	line, err := encode(Record{Time: w.opts.Now().UTC(), Server: w.opts.Server, Kind: kind, Text: text})
	if err != nil || len(w.queue)+len(line) > queueBytes {
		w.dropped++
		return
	}
	w.queue = append(w.queue, line...)
	if !w.running {
		w.running = true
		go w.drain()
	}
}

// encode returns r as one line of JSON, HTML characters as they are.
func encode(r Record) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// drain writes the queue to the file until it is empty.
func (w *Writer) drain() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(w.queue) > 0 || w.dropped > 0 {
		batch := w.queue
		w.queue = nil
		if w.dropped > 0 {
			note, _ := encode(Record{Time: w.opts.Now().UTC(), Server: w.opts.Server, Kind: KindNote,
				Text: fmt.Sprintf("%d lines dropped: the server wrote faster than its log could be written", w.dropped)})
			batch = append(note, batch...)
			w.dropped = 0
		}
		w.mu.Unlock()
		err := appendLines(w.path, batch, w.opts.MaxBytes)
		w.mu.Lock()
		w.err = err
	}
	w.running = false
	w.idle.Broadcast()
}

// Err returns why the last write to the log failed, or nil when it
// succeeded (or nothing was written yet).
func (w *Writer) Err() error {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Flush waits until the lines queued so far are written (or their write
// failed) and returns [Writer.Err]. A stderr line without its newline
// yet is not written.
func (w *Writer) Flush() error {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.running {
		w.idle.Wait()
	}
	return w.err
}

// appendLines appends batch, whole lines, to the log at path with one
// write, rotating the log first when the batch would take it past max.
func appendLines(path string, batch []byte, max int64) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("server log: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), lockWait)
	defer cancel()
	unlock, err := safefile.Lock(ctx, path)
	if err != nil {
		return fmt.Errorf("server log: %w", err)
	}
	defer unlock()
	f, info, err := openLog(path)
	if err != nil {
		return err
	}
	if size := info.Size(); size > 0 && size+int64(len(batch)) > max {
		f.Close()
		if err := os.Rename(path, path+".1"); err != nil {
			return fmt.Errorf("server log: rotate: %w", err)
		}
		if f, _, err = openLog(path); err != nil {
			return err
		}
	}
	_, err = f.Write(batch)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("server log: %w", err)
	}
	return nil
}

// openLog opens the log at path for appending, as [safefile.OpenAppend]
// does, and makes it 0600 when it was not.
func openLog(path string) (*os.File, os.FileInfo, error) {
	f, info, err := safefile.OpenAppend(path, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("server log: %w", err)
	}
	if info.Mode().Perm() != 0o600 {
		if err := f.Chmod(0o600); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("server log: %w", err)
		}
	}
	return f, info, nil
}
