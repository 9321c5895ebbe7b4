package transport

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/engine/internal/jsonwire"
	"github.com/voltmcp/voltmcp/engine/internal/line"
)

// exitWait is how long an error that ended a stdio connection waits for
// the server's exit status, to report it.
const exitWait = time.Second

// Peer is what [Explain] knows of the server at the other end of a
// connection.
type Peer struct {
	// Server is the server's id, quoted in what Explain says.
	Server string
	// Stdio is set for a stdio server: its exit status and stderr tail
	// say why a connection ended.
	Stdio bool
	// Last returns the last process started for the server and the last
	// HTTP transport made for it, either nil. Explain calls it only for
	// an error that ended the connection; nil is a server with neither.
	Last func() (*Process, *HeaderTransport)
	// Stderr is what the server wrote to stderr, or nil.
	Stderr *Ring
	// Log says where the server's whole log is, such as "voltmcp logs
	// NAME (~/.volt/agent/mcp/logs/ID.log)"; an error that quotes a
	// stderr tail names it. "" names none.
	Log string
	// Scrub removes the server's resolved secrets from what Explain
	// says; it must not be nil.
	Scrub *Scrubber
}

// explainedError is an error that says which server, during which
// operation and why; it unwraps to the error it explains.
type explainedError struct {
	msg   string
	cause error
}

func (e *explainedError) Error() string { return e.msg }
func (e *explainedError) Unwrap() error { return e.cause }

// Explain words an error that ended an exchange with the server p
// during op (a JSON-RPC method, such as "tools/call"; "" for none) so
// that it names the server, the operation and the cause: for a stdio
// server that exited, its exit status or signal, the lines of its stderr
// that say why ([StderrTail], scrubbed) and where its whole log is; for an HTTP server, the HTTP status or how the
// connection ended; for an answer nested too deep, the limit. Other
// errors (a timeout, the server's own error answer), and those Explain
// worded already, come back as they are. It is for error paths: a call
// that succeeds never needs it.
func Explain(p Peer, op string, err error) error {
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
		return &explainedError{msg: fmt.Sprintf("server %q: %s nests deeper than %d levels of JSON (%s); the connection was closed", p.Server, what, limit, whose), cause: err}
	}
	if !connectionEnded(err) {
		return err
	}
	var proc *Process
	var ht *HeaderTransport
	if p.Last != nil {
		proc, ht = p.Last()
	}
	if p.Stdio && proc != nil {
		if how, ok := proc.ExitStatus(exitWait); ok {
			msg := fmt.Sprintf("server %q exited (%s)%s", p.Server, how, during)
			if p.Stderr != nil {
				if tail := p.Scrub.Text(p.Stderr.Tail()); tail != "" {
					msg += "; stderr tail: " + tail
					if p.Log != "" {
						msg += "; whole log: " + p.Log
					}
				}
			}
			return &explainedError{msg: p.Scrub.Text(msg), cause: err}
		}
		return &explainedError{msg: p.Scrub.Text(fmt.Sprintf("server %q closed its connection%s but is still running: %v", p.Server, during, err)), cause: err}
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
	return &explainedError{msg: p.Scrub.Text(fmt.Sprintf("server %q: %s%s: %v", p.Server, why, during, err)), cause: err}
}

// Explained reports whether err is, or wraps, an error [Explain] worded.
func Explained(err error) bool {
	var done *explainedError
	return errors.As(err, &done)
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
