package engine

import (
	"strings"
	"testing"

	"github.com/voltmcp/voltmcp/internal/mcptest"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

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
			ctx := testwait.Context(t)
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
