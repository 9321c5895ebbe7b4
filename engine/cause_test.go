package engine

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/voltmcp/voltmcp/internal/mcptest"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// TestErrorsNameTheCause ends exchanges with servers in every way a
// transport can end (a crash with an exit status, death by a signal, an
// answer nested too deep, an HTTP connection dropped mid-call), during
// initialize, tools/list and tools/call, on the lean path and the SDK's:
// each error names the server, the operation and the cause, never a
// bare EOF, and the stderr tail it quotes is scrubbed of the server's
// secrets.
func TestErrorsNameTheCause(t *testing.T) {
	const secret = "tok_CANARY_segv_0123456789"
	t.Setenv("VOLTMCP_TEST_SEGV_SECRET", secret)
	t.Setenv(mcptest.EnvDeep, "call") // for the HTTP server, in this process
	deepHTTP := mcptest.ServeStreamableOnly(t, mcptest.ModeDeepAnswer)
	dropHTTP := dropCallServer(t)
	e := start(t, workspace(t, map[string]server{
		"exit3": stdio(mcptest.ModeCrashCall, nil),
		"segv": stdio(mcptest.ModeSegvCall, server{"env": map[string]string{
			mcptest.EnvSecret: "${env:VOLTMCP_TEST_SEGV_SECRET}"}}),
		"deeplist":  stdio(mcptest.ModeDeepAnswer, nil),
		"deepcall":  stdio(mcptest.ModeDeepAnswer, nil, mcptest.EnvDeep+"=call"),
		"deephttp":  {"url": deepHTTP, "transport": "streamable-http"},
		"drophttp":  {"url": dropHTTP, "transport": "streamable-http"},
		"initcrash": {"command": "/bin/sh", "args": []string{"-c", "echo 'cannot start: no config' >&2; exit 7"}},
	}, nil))
	ctx := testwait.Context(t)
	for _, c := range []struct {
		server, tool string // tool "" connects instead of calling
		want         []string
	}{
		{"exit3", "crash", []string{`server "exit3" exited (exit status 3) during tools/call`, "stderr tail: mcptest: crashing on purpose"}},
		{"segv", mcptest.ToolSegv, []string{`server "segv" exited (signal SIGSEGV) during tools/call`, "stderr tail: " + mcptest.SegvStderr}},
		{"deeplist", "", []string{`server "deeplist": the answer to tools/list nests deeper than 10000 levels of JSON (maxJSONDepth)`}},
		{"deepcall", mcptest.ToolDeepAnswer, []string{`server "deepcall": the answer to tools/call nests deeper than 10000 levels of JSON (maxJSONDepth)`}},
		{"deephttp", mcptest.ToolDeepAnswer, []string{`server "deephttp": the answer to tools/call nests deeper than 1000 levels of JSON`}},
		{"drophttp", "drop", []string{`server "drophttp": the server closed the connection during tools/call`}},
		{"initcrash", "", []string{`server "initcrash" exited (exit status 7) during initialize`, "stderr tail: cannot start: no config"}},
	} {
		var text string
		if c.tool == "" {
			err := e.Connect(ctx, c.server)
			if err == nil {
				t.Errorf("%s: connected", c.server)
				continue
			}
			text = err.Error()
		} else {
			r := e.Gateway(ctx, GatewayInput{Action: "call", Server: c.server, Tool: c.tool, Arguments: map[string]any{}})
			if !r.IsError {
				t.Errorf("%s: the call succeeded: %s", c.server, r.Text)
				continue
			}
			text = r.Text
		}
		for _, w := range c.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: %q\nwant %q", c.server, text, w)
			}
		}
		if strings.Contains(text, secret) {
			t.Errorf("%s: the secret leaks: %q", c.server, text)
		}
	}
	// The crash also shows in the server's status, once noticed.
	sum := waitStatus(t, e, "segv", StatusError)
	if !strings.Contains(sum.LastError, `server "segv" exited (signal SIGSEGV)`) || strings.Contains(sum.LastError, secret) {
		t.Errorf("last error %q", sum.LastError)
	}
}

// dropCallServer serves a Streamable HTTP MCP server on 127.0.0.1 that
// answers initialize and tools/list (one tool, "drop") with JSON and
// drops the connection, without an answer, on tools/call.
func dropCallServer(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost {
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
			return
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.NewDecoder(req.Body).Decode(&msg)
		var result string
		switch msg.Method {
		case "initialize":
			result = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"drop","version":"1.0.0"}}`
		case "tools/list":
			result = `{"tools":[{"name":"drop","inputSchema":{"type":"object"}}]}`
		case "tools/call":
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		default:
			if len(msg.ID) == 0 {
				w.WriteHeader(http.StatusAccepted)
				return
			}
			result = `{}`
		}
		w.Header().Set("Content-Type", "application/json")
		bw := bufio.NewWriter(w)
		bw.WriteString(`{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":` + result + "}\n")
		bw.Flush()
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}
