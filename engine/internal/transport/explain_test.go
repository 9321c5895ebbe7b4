package transport

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/engine/internal/jsonwire"
	"github.com/voltmcp/voltmcp/engine/internal/line"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

func TestExplainStdioExit(t *testing.T) {
	p := startChild(t, "exit3", time.Second)
	if _, ok := p.ExitStatus(testwait.Patience); !ok {
		t.Fatal("the child did not exit")
	}
	stderr := NewRing(1 << 10)
	fmt.Fprint(stderr, "starting\nusing token s3cret\n\x1b[31mfatal:\tno\x1b[0m config\n")
	var scrub Scrubber
	scrub.Add("s3cret")
	peer := Peer{Server: "fs", Stdio: true, Last: func() (*Process, *HeaderTransport) { return p, nil }, Stderr: stderr, Scrub: &scrub}
	err := Explain(peer, "tools/call", io.EOF)
	want := `server "fs" exited (exit status 3) during tools/call; stderr tail: starting | using token [redacted] | fatal: no config`
	if err == nil || err.Error() != want || !errors.Is(err, io.EOF) {
		t.Fatalf("Explain = %v, want %s", err, want)
	}
	if again := Explain(peer, "tools/list", err); again != err {
		t.Errorf("explained twice: %v", again)
	}
}

func TestExplainHTTPAndOthers(t *testing.T) {
	var scrub Scrubber
	peer := Peer{Server: "web", Last: func() (*Process, *HeaderTransport) { return nil, &HeaderTransport{} }, Scrub: &scrub}
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("read: %w", syscall.ECONNRESET), `server "web": the connection was reset during initialize: read: connection reset by peer`},
		{syscall.ECONNREFUSED, `server "web": the connection was refused during initialize: connection refused`},
		{io.ErrUnexpectedEOF, `server "web": the server closed the connection during initialize: unexpected EOF`},
		{line.ErrConnClosed, `server "web": the connection ended during initialize: ` + line.ErrConnClosed.Error()},
		{jsonwire.ErrTooDeep, fmt.Sprintf(`server "web": the answer to initialize nests deeper than %d levels of JSON (maxJSONDepth); the connection was closed`, jsonwire.MaxDepth)},
	} {
		if got := Explain(peer, "initialize", c.err); got == nil || got.Error() != c.want || !errors.Is(got, c.err) {
			t.Errorf("Explain(%v) = %v, want %s", c.err, got, c.want)
		}
	}
	// What the server answered, or why voltmcp refused what came, is
	// not a connection that ended: it comes back as it is.
	for _, err := range []error{errors.New("tool failed"), fmt.Errorf("%w: %w", line.ErrMessageTooLarge, io.EOF), jsonwire.ErrBatch, &json.SyntaxError{}} {
		if got := Explain(peer, "tools/call", err); got != err {
			t.Errorf("Explain(%v) = %v", err, got)
		}
	}
	if Explain(peer, "", nil) != nil {
		t.Error("a nil error explained")
	}
}

func TestRingTailAndLastLine(t *testing.T) {
	r := NewRing(64 << 10)
	if r.Tail() != "" || r.LastLine() != "" {
		t.Errorf("empty ring: %q %q", r.Tail(), r.LastLine())
	}
	fmt.Fprint(r, "one\ntwo\r\nthree\tand\u200b more\nfour\n\n")
	if got := r.Tail(); got != "two | three and more | four" {
		t.Errorf("Tail = %q", got)
	}
	if got := r.LastLine(); got != "four" {
		t.Errorf("LastLine = %q", got)
	}
	fmt.Fprint(r, strings.Repeat("x", 5000)+"é")
	// A line longer than a tail keeps its start.
	if got := r.Tail(); !strings.HasSuffix(got, "…") || len(got) > len("…")+tailLineCut || !strings.HasPrefix(got, "xxx") {
		t.Errorf("long Tail = %q (%d bytes)", got[:20], len(got))
	}
	if got := r.LastLine(); len(got) != 300 || !strings.HasSuffix(got, "é") {
		t.Errorf("long LastLine: %d bytes", len(got))
	}
}
