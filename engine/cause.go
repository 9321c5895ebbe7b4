package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/engine/internal/jsonwire"
	"github.com/voltmcp/voltmcp/engine/internal/line"
	"github.com/voltmcp/voltmcp/sanitize"
)

// exitWait is how long an error that ended a stdio connection waits for
// the server's exit status, to report it.
const exitWait = time.Second

// stderrTailLines and stderrTailBytes bound the stderr tail an error
// quotes.
const (
	stderrTailLines = 3
	stderrTailBytes = 600
)

// explainedError is an error that says which server, during which
// operation and why; it unwraps to the error it explains.
type explainedError struct {
	msg   string
	cause error
}

func (e *explainedError) Error() string { return e.msg }
func (e *explainedError) Unwrap() error { return e.cause }

// explain words an error that ended an exchange with the server during
// op (a JSON-RPC method, such as "tools/call"; "" for none) so that it
// names the server, the operation and the cause: for a stdio server
// that exited, its exit status or signal and the last lines of its
// stderr (scrubbed); for an HTTP server, the HTTP status or how the
// connection ended; for an answer nested too deep, the limit. Other
// errors (a timeout, the server's own error answer) come back as they
// are. It runs only on an error path: a call that succeeds never gets
// here.
func (s *supervisor) explain(op string, err error) error {
	if err == nil {
		return nil
	}
	var done *explainedError
	if errors.As(err, &done) {
		return err // explained already
	}
	during := ""
	if op != "" {
		during = " during " + op
	}
	if limit, ok := jsonwire.NestDepth(err); ok {
		what, whose := "a message", "maxJSONDepth"
		if op != "" {
			what = "the answer to " + op
		}
		if limit == jsonwire.SDKDepth {
			whose = "the go-sdk's limit"
		}
		return &explainedError{msg: fmt.Sprintf("server %q: %s nests deeper than %d levels of JSON (%s); the connection was closed", s.cfg.ID, what, limit, whose), cause: err}
	}
	if !connectionEnded(err) {
		return err
	}
	s.mu.Lock()
	p, ht := s.proc, s.httpT
	s.mu.Unlock()
	if s.cfg.IsStdio() && p != nil {
		if how, ok := p.ExitStatus(exitWait); ok {
			msg := fmt.Sprintf("server %q exited (%s)%s", s.cfg.ID, how, during)
			if tail := s.stderrTail(); tail != "" {
				msg += "; stderr tail: " + tail
			}
			return &explainedError{msg: s.scrub.Text(msg), cause: err}
		}
		return &explainedError{msg: s.scrub.Text(fmt.Sprintf("server %q closed its connection%s but is still running: %v", s.cfg.ID, during, err)), cause: err}
	}
	why := "the connection ended"
	switch {
	case errors.Is(err, syscall.ECONNRESET):
		why = "the connection was reset"
	case errors.Is(err, syscall.ECONNREFUSED):
		why = "the connection was refused"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		why = "the server closed the connection"
	}
	if ht != nil {
		if status := ht.LastPOST(); status >= 400 {
			why += fmt.Sprintf(" (its last answer was HTTP %d)", status)
		}
	}
	return &explainedError{msg: s.scrub.Text(fmt.Sprintf("server %q: %s%s: %v", s.cfg.ID, why, during, err)), cause: err}
}

// connectionEnded reports whether err says the connection to a server
// ended (end of stream, a closed pipe, a reset), rather than something
// the server answered.
func connectionEnded(err error) bool {
	// A connection that ended because voltmcp refused what came has
	// that reason already.
	if se := (*json.SyntaxError)(nil); errors.Is(err, line.ErrMessageTooLarge) || errors.Is(err, jsonwire.ErrBatch) || errors.As(err, &se) {
		return false
	}
	for _, target := range []error{io.EOF, io.ErrUnexpectedEOF, io.ErrClosedPipe, line.ErrConnClosed, mcp.ErrConnectionClosed,
		syscall.EPIPE, syscall.ECONNRESET, syscall.ECONNREFUSED} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// stderrTail is the last lines the server wrote to stderr, joined by
// " | ", bounded and scrubbed.
func (s *supervisor) stderrTail() string {
	b := s.stderr.Bytes()
	if len(b) > stderrShow {
		b = b[len(b)-stderrShow:]
	}
	// Cleaned whole before it is split, so that an escape sequence
	// loses its parameters as well as its introducer.
	text, _ := sanitize.Output(string(b))
	text = strings.TrimRight(text, "\r\n\t ")
	lines := strings.Split(text, "\n")
	if len(lines) > stderrTailLines {
		lines = lines[len(lines)-stderrTailLines:]
	}
	for i, l := range lines {
		lines[i] = strings.ReplaceAll(strings.TrimRight(l, "\r"), "\t", " ")
	}
	tail := strings.Join(lines, " | ")
	if len(tail) > stderrTailBytes {
		tail = "…" + strings.ToValidUTF8(tail[len(tail)-stderrTailBytes:], "")
	}
	return s.scrub.Text(tail)
}
