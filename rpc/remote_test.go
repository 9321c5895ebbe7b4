package rpc

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestRemoteClientIsDecided serves a remote client (Options.Remote): the
// voltmcp.remote policy decides every request before its method runs. The
// remote-safe commands on a configured server run, and so does watching
// the events; a tool call, a command on a server not in trusted config,
// one with no server and the browser-redirect completion are refused
// with CodeRefused and the policy's reason. The owner's connection runs
// them. (A remote auth start asks the policy for the device flow, which
// Auth holds it to: see the daemon's HTTP test.)
func TestRemoteClientIsDecided(t *testing.T) {
	eng := newEngine(t)
	remote := dial(t, NewServer(eng, &Options{Remote: true}))
	owner := dial(t, NewServer(eng, nil))
	for _, c := range []struct {
		method string
		params string
		why    string // "" for allowed
	}{
		{"get_mcp_capabilities", `{}`, ""},
		{"list_mcp_servers", `{}`, ""},
		{"get_mcp_server", `{"id":"demo"}`, ""},
		{"list_mcp_recent_calls", `{"id":"demo"}`, ""},
		{"get_mcp_server", `{"id":"nope"}`, "not in trusted config"},
		{"call_mcp_tool", `{"id":"demo","tool":"echo","arguments":{"text":"hi"}}`, "not on the remote-safe list"},
		{"approve_mcp_server", `{"id":"demo"}`, "not on the remote-safe list"},
		{"list_mcp_pins", `{"id":"demo"}`, "not on the remote-safe list"},
		{"read_mcp_server_log", `{"id":"demo"}`, "not on the remote-safe list"},
		{"gateway", `{"action":"call","server":"demo","tool":"echo","arguments":{"text":"hi"}}`, "not on the remote-safe list"},
		{"complete_mcp_server_auth", `{"id":"demo","callbackUrl":"http://127.0.0.1:1/cb?code=x"}`, "only for local callers"},
		{"start_mcp_server_auth", `{"id":"nope"}`, "not in trusted config"},
		{"subscribe_mcp_events", `{}`, ""},
		{"unsubscribe_mcp_events", `{}`, ""},
	} {
		remote.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`, c.method, c.params))
		m := remote.read()
		e, _ := m["error"].(map[string]any)
		switch {
		case c.why == "" && e != nil:
			t.Errorf("remote %s: refused: %v", c.method, e)
		case c.why != "" && (e == nil || e["code"] != float64(CodeRefused) || !strings.Contains(fmt.Sprint(e["message"]), c.why)):
			t.Errorf("remote %s: %v, want a refusal naming %q", c.method, m, c.why)
		}
	}
	// The owner runs a tool call.
	if res := owner.call("call_mcp_tool", json.RawMessage(`{"id":"demo","tool":"echo","arguments":{"text":"hi"}}`)); res == nil {
		t.Error("the owner's tool call has no result")
	}
}
