package engine

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/engine/internal/line"
	"github.com/voltmcp/voltmcp/internal/mcptest"
)

// TestBoundedBody checks the bound of one message in an HTTP response:
// the whole body of JSON, each event of an event stream, whatever its
// line endings.
func TestBoundedBody(t *testing.T) {
	event := func(data, eol string) string { return "event: message" + eol + "data: " + data + eol + eol }
	for _, c := range []struct {
		name   string
		body   string
		events bool
		fails  bool
	}{
		{"json under", strings.Repeat("x", 100), false, false},
		{"json over", strings.Repeat("x", 101), false, true},
		// Many small events add up past the bound, each under it.
		{"events LF", strings.Repeat(event(strings.Repeat("a", 50), "\n"), 20), true, false},
		{"events CRLF", strings.Repeat(event(strings.Repeat("a", 50), "\r\n"), 20), true, false},
		{"events CR", strings.Repeat(event(strings.Repeat("a", 50), "\r"), 20), true, false},
		{"one event over", event(strings.Repeat("a", 120), "\n"), true, true},
		// A CRLF is one line end, not an empty line.
		{"CRLF lines of one event", "data: " + strings.Repeat("a\r\n", 60), true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := &boundedBody{rc: io.NopCloser(&slowReader{s: c.body}), max: 100, events: c.events, eol: true}
			got, err := io.ReadAll(b)
			if fails := errors.Is(err, line.ErrMessageTooLarge); fails != c.fails || (err != nil && !fails) {
				t.Fatalf("read %d bytes, error %v; want failure %v", len(got), err, c.fails)
			}
			if !c.fails && string(got) != c.body {
				t.Errorf("read %q", got)
			}
		})
	}
}

// slowReader returns at most 7 bytes a read, so that events and line
// ends straddle reads.
type slowReader struct{ s string }

func (r *slowReader) Read(p []byte) (int, error) {
	if r.s == "" {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), 7)], r.s)
	r.s = r.s[n:]
	return n, nil
}

// TestHostileHTTPFloodResult has an HTTP server answer a call with 50 MiB
// of text, over Streamable HTTP and over legacy SSE: the read stops at
// maxMessageBytes, the call fails saying why, and the server and the
// others still serve.
func TestHostileHTTPFloodResult(t *testing.T) {
	streamable, sse := mcptest.ServeHTTP(t, mcptest.ModeFloodResult)
	for _, c := range []struct{ name, url, transport string }{
		{"streamable", streamable, "streamable-http"},
		{"sse", sse, "sse"},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := workspace(t, map[string]server{
				"bad":  {"url": c.url, "transport": c.transport},
				"good": stdio(mcptest.ModeBehave, nil),
			}, map[string]any{"limits": map[string]any{"maxMessageBytes": 4 << 20}})
			e := start(t, opts)
			ctx := ctxT(t, 60*time.Second)
			r := e.Gateway(ctx, GatewayInput{Action: "call", Server: "bad", Tool: mcptest.ToolFloodResult})
			if !r.IsError || !strings.Contains(r.Text, "maxMessageBytes") || len(r.Text) > 64<<10 {
				t.Errorf("error %v, %d bytes: %s", r.IsError, len(r.Text), clip(r.Text, 300))
			}
			goodStillServes(t, e)
			r = e.Gateway(ctx, GatewayInput{Action: "call", Server: "bad", Tool: "echo", Arguments: map[string]any{"text": "small"}})
			if r.IsError || !strings.Contains(r.Text, "small") {
				t.Errorf("a small call to the same server: %s", clip(r.Text, 300))
			}
		})
	}
}
