package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/engine/audit"
	"github.com/voltmcp/voltmcp/internal/mcptest"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// serveGateway starts `voltmcp serve` over stdio on home and project with
// the SDK's client, and returns a function that runs one action of its
// mcp tool and decodes the answer (a call's text as "text"), with
// whether it is an error. The
// session closes, and serve exits, when the test ends.
func serveGateway(t *testing.T, ctx context.Context, home, project string) func(args map[string]any) (map[string]any, bool) {
	t.Helper()
	cmd := cliCommand("serve", "--home", home, "--project", project, "--approve")
	cs := connectCommand(t, cmd, "2025-11-25")
	return func(args map[string]any) (map[string]any, bool) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp", Arguments: args})
		if err != nil || len(res.Content) == 0 {
			t.Fatalf("%v: %v %+v", args, err, res)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		if res.IsError {
			return map[string]any{"error": text}, true
		}
		var out map[string]any
		if err := json.Unmarshal([]byte(text), &out); err != nil {
			return map[string]any{"text": text}, false // a call's text
		}
		return out, false
	}
}

// found reports whether a search answer has server's tool.
func found(r map[string]any, server, tool string) bool {
	ms, _ := r["matches"].([]any)
	for _, m := range ms {
		if m, _ := m.(map[string]any); m["server"] == server && m["tool"] == tool {
			return true
		}
	}
	return false
}

// stillListed returns the servers a search answer's note says are still
// being listed.
func stillListed(r map[string]any) string {
	note, _ := r["note"].(string)
	note = note[strings.LastIndex(note, "; ")+1:]
	if i := strings.Index(note, " still being listed"); i >= 0 {
		return strings.TrimSpace(note[:i])
	}
	return ""
}

// serverStatus returns the list_servers entry of id.
func serverStatus(t *testing.T, gateway func(map[string]any) (map[string]any, bool), id string) map[string]any {
	t.Helper()
	l, _ := gateway(map[string]any{"action": "list_servers"})
	ss, _ := l["servers"].([]any)
	for _, s := range ss {
		if s, _ := s.(map[string]any); s["server"] == id {
			return s
		}
	}
	t.Fatalf("list_servers has no %s: %v", id, l)
	return nil
}

// TestServeListsUnlistedServersAtStart runs `voltmcp serve` over stdio on
// a fresh home with a project whose lazy server was never listed: the
// agent's first search finds its echo tool, listed in the background at
// start (or, on a loaded machine, says it is still being listed, and a
// later search finds it), and the server is stopped again (cold) after
// its listing. With settings.listAtStart false the first search finds
// nothing and says the server was never listed.
func TestServeListsUnlistedServersAtStart(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(map[bool]string{true: "on", false: "off"}[on], func(t *testing.T) {
			home, project := t.TempDir(), benchProject(t)
			if !on {
				userSettings(t, home, map[string]any{"listAtStart": false})
			}
			ctx, cancel := context.WithDeadline(context.Background(), testwait.Deadline(t))
			defer cancel()
			gateway := serveGateway(t, ctx, home, project)
			search := map[string]any{"action": "search", "query": "echo"}
			r, _ := gateway(search)
			if !on {
				if hint, _ := r["hint"].(string); found(r, "up", "echo") || !strings.Contains(hint, "never been listed") {
					t.Fatalf("listAtStart false: the first search %v", r)
				}
				return
			}
			for !found(r, "up", "echo") {
				if stillListed(r) != "up" {
					t.Fatalf("the search found nothing and says nothing of a listing: %v", r)
				}
				if ctx.Err() != nil {
					t.Fatalf("never found echo: %v", r)
				}
				time.Sleep(100 * time.Millisecond)
				r, _ = gateway(search)
			}
			// The lazy server is stopped again after its listing.
			for s := serverStatus(t, gateway, "up"); s["status"] != "cold"; s = serverStatus(t, gateway, "up") {
				if ctx.Err() != nil {
					t.Fatalf("server after its listing at start: %v", s)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

// TestServeCallsAtStart: the agent's first request to a serve that is
// listing a never-listed server in the background is a call of that
// server's tool: it waits for the listing and succeeds, every time. Then
// the server's metadata cache is removed (its pins are kept) and its
// tool starts claiming to destroy: the listing at the next start finds
// the escalation, and the call made at once is held, as
// TestServeHoldsTheCallThatFindsAChange expects of a call that finds a
// change.
func TestServeCallsAtStart(t *testing.T) {
	t.Run("call", func(t *testing.T) {
		for round := range 3 {
			home, project := t.TempDir(), benchProject(t)
			ctx, cancel := context.WithDeadline(context.Background(), testwait.Deadline(t))
			gateway := serveGateway(t, ctx, home, project)
			if r, isErr := gateway(map[string]any{"action": "call", "server": "up", "tool": "echo", "arguments": map[string]any{"text": "hi"}}); isErr || r["text"] != "hi" {
				t.Errorf("round %d: the call at start: %v", round, r)
			}
			cancel()
		}
	})
	t.Run("pin change", func(t *testing.T) {
		project, policy, write := hintsProject(t, map[string]string{"records": `{"readOnlyHint":true}`})
		home := t.TempDir()
		if failed, text := serveCall(t, home, project, policy, "records"); failed {
			t.Fatalf("first run: %s", text)
		}
		write(map[string]string{"records": `{"destructiveHint":true}`})
		// The cache files are named by the server's identity; db is the
		// project's one server.
		files, _ := filepath.Glob(filepath.Join(home, ".volt", "agent", "mcp", "cache", "*.json"))
		if len(files) != 1 {
			t.Fatalf("cache files: %v", files)
		}
		if err := os.Remove(files[0]); err != nil {
			t.Fatal(err)
		}
		since := time.Now()
		if failed, text := serveCall(t, home, project, policy, "records"); !failed || !strings.Contains(text, "held for approval") {
			t.Errorf("the call at start after the change: %s", text)
		}
		recs, probs, err := audit.Read(audit.DefaultPath(filepath.Join(home, ".volt", "agent")), audit.Query{Server: "db", Since: since})
		if err != nil || len(probs) != 0 {
			t.Fatalf("read audit log: %v %v", err, probs)
		}
		var kinds []string
		for _, rec := range recs {
			kinds = append(kinds, rec.Kind+"/"+rec.Status)
		}
		if got := strings.Join(kinds, " "); got != "pin_change/held call/denied" {
			t.Errorf("audit after the change: %s", got)
		}
	})
}

// TestServeListsAtStartPastAHangingServer: of three never-listed
// servers, one hangs in initialize (its connect timeout is ten minutes)
// and one cannot start. The first search waits no longer than its
// bound, finds the good server's tool (or says it is still being
// listed), and names the hanging one as still being listed; the failed
// one's status says why; serve exits when the agent goes away, the hang
// notwithstanding.
func TestServeListsAtStartPastAHangingServer(t *testing.T) {
	project := t.TempDir()
	up, upArgs, upEnv := mcptest.Command(mcptest.ModeBehave)
	hang, hangArgs, hangEnv := mcptest.Command(mcptest.ModeHangInit)
	doc := map[string]any{"version": 1, "servers": map[string]any{
		"up":   map[string]any{"command": up, "args": upArgs, "env": upEnv, "connectTimeoutMs": testTimeoutMs, "discoveryTimeoutMs": testTimeoutMs},
		"hang": map[string]any{"command": hang, "args": hangArgs, "env": hangEnv, "connectTimeoutMs": 600000},
		"bad":  map[string]any{"command": filepath.Join(t.TempDir(), "no-such-server")},
	}}
	data, _ := json.Marshal(doc)
	if err := os.MkdirAll(filepath.Join(project, ".volt"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, ".volt", "mcp.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithDeadline(context.Background(), testwait.Deadline(t))
	defer cancel()
	cmd := cliCommand("serve", "--home", t.TempDir(), "--project", project, "--approve")
	cs := connectCommand(t, cmd, "2025-11-25")
	gateway := func(args map[string]any) (map[string]any, bool) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp", Arguments: args})
		if err != nil || res.IsError || len(res.Content) == 0 {
			t.Fatalf("%v: %v %+v", args, err, res)
		}
		var out map[string]any
		if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &out); err != nil {
			t.Fatal(err)
		}
		return out, false
	}
	search := map[string]any{"action": "search", "query": "echo"}
	r, _ := gateway(search)
	if pending := stillListed(r); !strings.Contains(pending, "hang") {
		t.Errorf("the first search does not name hang as still being listed: %v", r)
	}
	for !found(r, "up", "echo") {
		if ctx.Err() != nil {
			t.Fatalf("never found echo: %v", r)
		}
		time.Sleep(100 * time.Millisecond)
		r, _ = gateway(search)
	}
	for s := serverStatus(t, gateway, "bad"); s["status"] != "error" || !strings.Contains(fmt.Sprint(s["error"]), "no-such-server"); s = serverStatus(t, gateway, "bad") {
		if ctx.Err() != nil {
			t.Fatalf("bad: %v", s)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if s := serverStatus(t, gateway, "hang"); s["status"] != "connecting" {
		t.Errorf("hang: %v", s)
	}
	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	waitExited(ctx, t, cmd)
}
