package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/internal/testwait"
)

func TestDirectToolsArePinnedAndWithdrawn(t *testing.T) {
	t.Parallel()
	opts := workspace(t, map[string]server{
		"m":     stdio("list-changed", server{"directTools": []string{"echo"}}),
		"plain": stdio("behave", nil),
	}, map[string]any{"directTools": true})
	e := start(t, opts)
	ctx := testwait.Context(t)
	for _, id := range []string{"m", "plain"} {
		if err := e.Connect(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- e.ServeStdio(ctx, sr, sw) }()
	changed := make(chan struct{}, 8)
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: cr, Writer: cw}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cs.Close(); cw.Close(); <-done }()
	names := func() map[string]bool {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, tl := range res.Tools {
			out[tl.Name] = true
		}
		return out
	}
	got := names()
	if !got["mcp"] || !got["mcp__m__echo"] || len(got) != 2 {
		t.Fatalf("tools: %v", got)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__m__echo", Arguments: map[string]any{"text": "direct"}})
	if err != nil || res.IsError || text(res) != "direct" {
		t.Fatalf("direct call: %v %v", text(res), err)
	}
	// The server changes echo's description: the pinned tool goes away.
	if r := e.Gateway(ctx, GatewayInput{Action: "call", Server: "m", Tool: "mutate"}); r.IsError {
		t.Fatalf("mutate: %s", r.Text)
	}
	deadline := testwait.Deadline(t)
	for names()["mcp__m__echo"] {
		if time.Now().After(deadline) {
			t.Fatal("the changed direct tool was not withdrawn")
		}
		time.Sleep(50 * time.Millisecond)
	}
	select {
	case <-changed:
	case <-time.After(testwait.Patience):
		t.Error("no notifications/tools/list_changed reached the client")
	}
	// The changed version waits for review: it is not exposed in its place.
	for _, d := range e.directTools() {
		if d.name == "mcp__m__echo" {
			t.Errorf("the changed echo is exposed again before it was approved: %q", d.tool.Description)
		}
	}
}

// TestDirectToolsOfServersListedLater: direct tools of a server listed
// after serve started (the listing at start, then a server a reload
// adds, which the reload lists in the background) are added to serve's
// tools, with notifications/tools/list_changed, and can be called.
func TestDirectToolsOfServersListedLater(t *testing.T) {
	t.Parallel()
	opts := workspace(t, map[string]server{"m": stdio("behave", server{"directTools": []string{"echo"}})}, map[string]any{"directTools": true})
	e := start(t, opts)
	ctx := testwait.Context(t)
	changed := make(chan struct{}, 8)
	cs := serveClientWith(t, ctx, e, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}})
	names := func() map[string]bool {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, tl := range res.Tools {
			out[tl.Name] = true
		}
		return out
	}
	waitTool := func(name string) {
		t.Helper()
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("no notifications/tools/list_changed for %s", name)
		}
		deadline := testwait.Deadline(t)
		for !names()[name] {
			if time.Now().After(deadline) {
				t.Fatalf("%s was not added: %v", name, names())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if got := names(); len(got) != 1 || !got["mcp"] {
		t.Fatalf("tools before any listing: %v", got)
	}
	if got := e.ListUnlisted(ctx); len(got) != 1 || got[0] != "m" {
		t.Fatalf("listed at start: %v", got)
	}
	waitTool("mcp__m__echo")
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__m__echo", Arguments: map[string]any{"text": "listed later"}})
	if err != nil || res.IsError || text(res) != "listed later" {
		t.Fatalf("direct call: %v %v", text(res), err)
	}

	// A reload adds a server: it is listed in the background, and its
	// direct tool follows.
	doc := map[string]any{"version": 1, "settings": map[string]any{"directTools": true}, "servers": map[string]server{
		"m": stdio("behave", server{"directTools": []string{"echo"}}),
		"n": stdio("behave", server{"directTools": []string{"echo"}}),
	}}
	data, _ := json.Marshal(doc)
	if err := os.WriteFile(filepath.Join(opts.Project, ".volt", "mcp.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := e.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	waitTool("mcp__n__echo")
	if got := names(); !got["mcp__m__echo"] || len(got) != 3 {
		t.Errorf("tools after the reload: %v", got)
	}
}

func TestDirectToolsOffByDefault(t *testing.T) {
	t.Parallel()
	e := start(t, workspace(t, map[string]server{"m": stdio("behave", server{"directTools": true})}, nil))
	if err := e.Connect(testwait.Context(t), "m"); err != nil {
		t.Fatal(err)
	}
	if d := e.directTools(); len(d) != 0 {
		t.Errorf("direct tools without the setting: %v", d)
	}
}

// TestListChangedDuringRefreshIsNotLost checks that a server's
// notifications/tools/list_changed that comes while a refresh runs,
// which may have listed the tools before the change, brings another
// refresh rather than being dropped.
func TestListChangedDuringRefreshIsNotLost(t *testing.T) {
	t.Parallel()
	opts := workspace(t, map[string]server{"m": stdio("list-changed", nil)}, nil)
	logs := &syncWriter{w: &bytes.Buffer{}}
	opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e := start(t, opts)
	ctx := testwait.Context(t)
	if err := e.Connect(ctx, "m"); err != nil {
		t.Fatal(err)
	}
	s, err := e.supervisor("m")
	if err != nil {
		t.Fatal(err)
	}
	// The first starts a refresh; the second comes while it runs, as a
	// server's notification can.
	s.refreshAsync("first")
	s.refreshAsync("tools/list_changed")
	deadline := testwait.Deadline(t)
	for {
		s.mu.Lock()
		busy := s.refreshing
		s.mu.Unlock()
		if !busy {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the refreshes did not end")
		}
		time.Sleep(5 * time.Millisecond)
	}
	logs.mu.Lock()
	logged := logs.w.String()
	logs.mu.Unlock()
	if n := strings.Count(logged, "refreshing metadata"); n != 2 || !strings.Contains(logged, "changed while refreshing") {
		t.Fatalf("want the first refresh and one more, got %d:\n%s", n, logged)
	}
	// And the change itself, end to end: echo's new description is listed.
	if _, err := e.callUngated(ctx, "m", "mutate", nil); err != nil {
		t.Fatal(err)
	}
	for {
		m, err := e.Metadata("m")
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range m.Tools {
			if tl.Name == "echo" && strings.Contains(tl.Description, "revision 1") {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the change was never listed")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
