package engine

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/engine/internal/line"
	"github.com/voltmcp/voltmcp/engine/internal/tasks"
	"github.com/voltmcp/voltmcp/engine/internal/transport"
	"github.com/voltmcp/voltmcp/internal/mcptest"
	"github.com/voltmcp/voltmcp/internal/npmpeers"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// TestDescribeTaskSupportOverHTTP: through serve, describe gives the
// task support of a tool listed over Streamable HTTP (answered with a
// JSON body, or with an event stream) and over legacy SSE (answered on
// the session's GET stream), as it does over stdio; a tool without any
// shows none.
func TestDescribeTaskSupportOverHTTP(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, url, transport string
	}{
		{"streamable json", mcptest.ServeStreamableOnly(t, mcptest.ModeDescribed), cue.TransportStreamableHTTP},
		{"streamable events", mcptest.ServeRawEvents(t, mcptest.ModeDescribed), cue.TransportStreamableHTTP},
		{"sse", mcptest.ServeSSEOnly(t, mcptest.ModeDescribed), cue.TransportSSE},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testwait.Context(t)
			e := start(t, workspace(t, map[string]server{"desc": httpServer(tt.url, tt.transport)}, nil))
			if err := e.Connect(ctx, "desc"); err != nil {
				t.Fatal(err)
			}
			if s, _ := e.Server("desc"); s.Transport != tt.transport {
				t.Fatalf("transport %q, want %q", s.Transport, tt.transport)
			}
			cs := servedClient(t, ctx, e)
			data, _ := askServed(t, ctx, cs, map[string]any{"action": "describe", "server": "desc", "tool": mcptest.ToolReport}, false)
			if data["taskSupport"] != mcptest.ReportTaskSupport {
				t.Errorf("taskSupport %v, want %q", data["taskSupport"], mcptest.ReportTaskSupport)
			}
			data, _ = askServed(t, ctx, cs, map[string]any{"action": "describe", "server": "desc", "tool": "lookup_0000"}, false)
			if _, ok := data["taskSupport"]; ok {
				t.Errorf("lookup_0000 has task support: %v", data)
			}
			teeChangesNothing(t, tt.url, tt.transport, mcptest.ToolReport)
		})
	}
}

// teeChangesNothing lists the tools of the HTTP server at url with a
// go-sdk client through a HeaderTransport that reads task support, and
// through one that does not: the listings are the same, so the SDK
// read through the tee the bytes the server sent, and the tee read the
// task support of tool.
func teeChangesNothing(t *testing.T, url, kind, tool string) {
	t.Helper()
	ctx := testwait.Context(t)
	mode := transport.Streamable
	if kind == cue.TransportSSE {
		mode = transport.SSE
	}
	list := func(l *tasks.Listings) []byte {
		base := http.DefaultTransport.(*http.Transport).Clone()
		defer base.CloseIdleConnections()
		ht := &transport.HeaderTransport{Base: base, Server: "desc", MaxMessage: maxLineLength, TooLarge: line.ErrMessageTooLarge, Listings: l}
		cs, _, err := transport.ConnectHTTP(ctx, mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil), url, mode, ht, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		var all []*mcp.Tool
		for tl, err := range cs.Tools(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, tl)
		}
		out, _ := json.Marshal(all)
		return out
	}
	l := &tasks.Listings{}
	with, without := list(l), list(nil)
	if string(with) != string(without) || len(with) < 100 {
		t.Errorf("the listing through the tee differs: %d bytes, %d without", len(with), len(without))
	}
	if got := l.Take(); got[tool] == "" {
		t.Errorf("the tee read no task support for %s: %v", tool, got)
	}
}

// TestPeerEverythingDescribeOverHTTP: describe, through serve, of
// server-everything's simulate-research-query over Streamable HTTP and
// over SSE gives its task support ("required").
func TestPeerEverythingDescribeOverHTTP(t *testing.T) {
	for _, tt := range []struct{ mode, path, transport string }{
		{"streamableHttp", "/mcp", cue.TransportStreamableHTTP},
		{"sse", "/sse", cue.TransportSSE},
	} {
		t.Run(tt.mode, func(t *testing.T) {
			peer := npmpeers.StartEverything(t, tt.mode)
			e := startWithPeers(t, workspace(t, map[string]server{"everything": httpServer(peer.URL(tt.path), tt.transport)}, nil), peer)
			ctx := testwait.Context(t)
			if err := e.Connect(ctx, "everything"); err != nil {
				t.Fatal(err)
			}
			cs := servedClient(t, ctx, e)
			// The task tool is registered once the session is
			// initialized, and announced with list_changed: the refresh
			// that follows lists it.
			var data map[string]any
			for ctx.Err() == nil {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: GatewayToolName,
					Arguments: map[string]any{"action": "describe", "server": "everything", "tool": "simulate-research-query"}})
				if err != nil {
					t.Fatal(err)
				}
				if !res.IsError {
					raw, _ := json.Marshal(res.StructuredContent)
					_ = json.Unmarshal(raw, &data)
					break
				}
				if err := e.Refresh(ctx, "everything"); err != nil {
					t.Fatal(err)
				}
			}
			if data["taskSupport"] != "required" {
				t.Errorf("simulate-research-query: %v", data)
			}
		})
	}
}
