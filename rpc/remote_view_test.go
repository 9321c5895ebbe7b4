package rpc

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/engine"
	"github.com/voltmcp/voltmcp/internal/mcptest"
)

// The canaries of TestRemoteAnswersHideConfig: a stdio server's
// argument and environment value, and an HTTP server's URL user info,
// path and query.
const (
	canaryArg   = "arg-canary-5b1c9e77d2"
	canaryEnv   = "env-canary-0f3a8d21c4"
	canaryUser  = "user-canary-77e0a1"
	canaryPath  = "path-canary-a61d3c"
	canaryQuery = "query-canary-c4e2b90f"
)

// remoteViewEngine is an engine whose "demo" is mcptest's server started
// with a canary argument and environment value, and whose "far" is an
// HTTP server at a closed loopback port, its URL holding canaries past
// its origin.
func remoteViewEngine(t *testing.T) *engine.Engine {
	t.Helper()
	root := t.TempDir()
	command, args, env := mcptest.Command(mcptest.ModeBehave, "VOLTMCP_CANARY="+canaryEnv)
	doc := map[string]any{"version": 1, "servers": map[string]any{
		"demo": map[string]any{"command": command, "args": append(args, "--key="+canaryArg), "env": env},
		"far": map[string]any{"url": "http://" + canaryUser + ":pw-" + canaryUser + "@127.0.0.1:1/" + canaryPath + "/mcp?key=" + canaryQuery,
			"transport": "streamable-http", "connectTimeoutMs": 2000},
	}}
	data, _ := json.Marshal(doc)
	if err := os.MkdirAll(filepath.Join(root, ".volt"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".volt", "mcp.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "home")
	eng, err := engine.New(context.Background(), &engine.Options{Home: home, Project: root, Approve: true,
		StopGrace: 300 * time.Millisecond, PluginCacheDir: filepath.Join(os.TempDir(), "voltmcp-rpc-test-wasm"),
		LookupEnv: func(k string) (string, bool) {
			if k == "HOME" {
				return home, true
			}
			return os.LookupEnv(k)
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return eng
}

// TestRemoteAnswersHideConfig serves the same engine to the owner and to
// a remote client, over a connection (Serve) and one request at a time
// (Answer). The owner's summaries show the command and the URL as
// configured (its credentials hidden); a remote client's show the command alone and the URL by
// its origin, and no answer, error or event it gets holds an argument,
// an environment value or a part of a URL past its origin, though the
// HTTP server's failure to connect quotes its URL.
func TestRemoteAnswersHideConfig(t *testing.T) {
	eng := remoteViewEngine(t)
	owner := NewServer(eng, &Options{Auth: NewAuth()})
	remote := NewServer(eng, &Options{Auth: NewAuth(), Remote: true})
	canaries := []string{canaryArg, canaryEnv, canaryUser, canaryPath, canaryQuery}

	// The owner sees what is configured: the test is not vacuous.
	o := dial(t, owner)
	far := o.call("get_mcp_server", map[string]any{"id": "far"})
	if u := fmt.Sprint(far["url"]); !strings.Contains(u, canaryPath) {
		t.Fatalf("the owner's url of far: %q, want it as configured", u)
	}
	o.send(`{"jsonrpc":"2.0","id":1,"method":"connect_mcp_server","params":{"id":"far"}}`)
	if m := o.read(); !strings.Contains(fmt.Sprint(m), "127.0.0.1:1") {
		t.Fatalf("far's connection by the owner: %v, want a failure naming its address", m)
	}

	r := dial(t, remote)
	r.send(`{"jsonrpc":"2.0","id":1,"method":"subscribe_mcp_events","params":{"sinceSeq":1}}`)
	var seen strings.Builder
	for _, req := range []string{
		`{"jsonrpc":"2.0","id":2,"method":"list_mcp_servers"}`,
		`{"jsonrpc":"2.0","id":3,"method":"get_mcp_server","params":{"id":"demo"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"get_mcp_server","params":{"id":"far"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"connect_mcp_server","params":{"id":"far"}}`,
		`{"jsonrpc":"2.0","id":6,"method":"connect_mcp_server","params":{"id":"demo"}}`,
		`{"jsonrpc":"2.0","id":7,"method":"list_mcp_recent_calls"}`,
	} {
		r.send(req)
	}
	answers := map[float64]map[string]any{}
	for len(answers) < 7 {
		line, err := r.r.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		seen.Write(line)
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatal(err)
		}
		if id, ok := m["id"].(float64); ok {
			answers[id] = m
		}
	}
	// One request at a time, as the daemon's HTTP listener asks.
	for _, req := range []string{
		`{"jsonrpc":"2.0","id":8,"method":"get_mcp_server","params":{"id":"far"}}`,
		`{"jsonrpc":"2.0","id":9,"method":"connect_mcp_server","params":{"id":"far"}}`,
		`{"jsonrpc":"2.0","id":10,"method":"call_mcp_tool","params":{"id":"demo","tool":"echo","arguments":{"text":"` + canaryArg + `"}}}`,
	} {
		seen.Write(remote.Answer(context.Background(), []byte(req)))
	}
	for _, c := range canaries {
		if strings.Contains(seen.String(), c) {
			t.Errorf("a remote client's answers or events hold %s:\n%s", c, seen.String())
		}
	}
	demo, _ := answers[3]["result"].(map[string]any)
	if demo["command"] == nil || demo["command"] == "" || demo["args"] != nil || demo["env"] != nil {
		t.Errorf("a remote client's summary of demo: command %v, args %v, env %v; want the command alone", demo["command"], demo["args"], demo["env"])
	}
	farR, _ := answers[4]["result"].(map[string]any)
	if farR["url"] != "http://127.0.0.1:1" {
		t.Errorf("a remote client's url of far: %v, want its origin", farR["url"])
	}
	if e, _ := answers[5]["error"].(map[string]any); e == nil || !strings.Contains(fmt.Sprint(e["message"]), "127.0.0.1:1") {
		t.Errorf("far's connection by a remote client: %v, want a failure that still names its origin", answers[5])
	}
}

// TestRemoteURLs cuts each URL of a text to its origin.
func TestRemoteURLs(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"no url here", "no url here"},
		{`Post "http://127.0.0.1:1/p/mcp?key=s": refused`, `Post "http://127.0.0.1:1/[hidden]": refused`},
		{"at https://u:p@example.com:8443/x#f.", "at https://example.com:8443/[hidden]"},
		{"bare https://example.com and https://example.com/", "bare https://example.com and https://example.com/"},
		{"two wss://h/a?b ftp://g/c", "two wss://h/[hidden] ftp://g/[hidden]"},
		{"bad http://[::1/x", "bad http://[hidden]"},
		{"no scheme ://host/path", "no scheme ://host/path"},
	} {
		if got := remoteURLs(c.in); got != c.want {
			t.Errorf("remoteURLs(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestAnswerIsServesLine answers one request at a time as Serve does:
// a bad request, an unknown method, a notification (no answer) and a
// subscription (which needs a connection).
func TestAnswerIsServesLine(t *testing.T) {
	srv := NewServer(newEngine(t), nil)
	for _, c := range []struct {
		req  string
		want string // "" for no answer
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"get_mcp_capabilities"}`, `"mcp_management.v1"`},
		{`{"jsonrpc":"2.0","id":2,"method":"nope"}`, `-32601`},
		{`{"jsonrpc":"2.0","method":"nope"}`, ``},
		{`{"jsonrpc":"2.0","id":3,"method":"get_mcp_server","params":{"ID":"demo"}}`, `-32602`},
		{`{"jsonrpc":"2.0","id":4,"method":"subscribe_mcp_events"}`, `GET /events`},
		{`{"jsonrpc":"2.0","id":5,"method":"list_mcp_servers"} x`, `trailing data`},
		{`not json`, `-32700`},
	} {
		got := string(srv.Answer(context.Background(), []byte(c.req)))
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("Answer(%s) = %s, want %q", c.req, got, c.want)
		}
	}
}
