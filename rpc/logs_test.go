package rpc

import (
	"fmt"
	"strings"
	"testing"

	"github.com/voltmcp/voltmcp/redact"
)

// TestReadServerLog reads the log of a server that wrote to stderr and
// died at start: its lines, scrubbed of its secret, then the error, and
// only the last of them when a limit asks for fewer.
func TestReadServerLog(t *testing.T) {
	const secret = "rpc_log_canary_5b2e71d0aa"
	t.Setenv("VOLTMCP_RPC_LOG_SECRET", secret)
	eng := newEngineWith(t, map[string]any{
		"crash": map[string]any{"command": "/bin/sh", "args": []string{"-c", `echo "starting with $T" >&2; echo "fatal: no config" >&2; exit 3`},
			"env": map[string]string{"T": "${env:VOLTMCP_RPC_LOG_SECRET}"}},
	})
	c := dial(t, NewServer(eng, nil))
	if m := c.callRaw("connect_mcp_server", map[string]any{"id": "crash"}); m["error"] == nil {
		t.Fatalf("connect of a server that exits: %v", m)
	}
	log := c.call("read_mcp_server_log", map[string]any{"id": "crash"})
	recs, _ := log["records"].([]any)
	var lines []string
	for _, r := range recs {
		m := r.(map[string]any)
		if m["time"] == "" {
			t.Errorf("record without a time: %v", m)
		}
		lines = append(lines, fmt.Sprintf("%v %v", m["kind"], m["text"]))
	}
	all := strings.Join(lines, "\n")
	if log["id"] != "crash" || log["truncated"] != false || len(lines) < 3 ||
		lines[0] != "stderr starting with [redacted]" || lines[1] != "stderr fatal: no config" || !strings.HasPrefix(lines[len(lines)-1], "error ") {
		t.Errorf("read_mcp_server_log: %v\n%s", log, all)
	}
	for _, form := range redact.Forms(secret) {
		if strings.Contains(all, form) {
			t.Errorf("the log's answer holds the secret as %q", form)
		}
	}
	last := c.call("read_mcp_server_log", map[string]any{"id": "crash", "limit": 1})
	if recs, _ := last["records"].([]any); len(recs) != 1 || last["truncated"] != true ||
		fmt.Sprintf("%v %v", recs[0].(map[string]any)["kind"], recs[0].(map[string]any)["text"]) != lines[len(lines)-1] {
		t.Errorf("read_mcp_server_log with limit 1: %v", last)
	}
	for _, bad := range []map[string]any{{"id": "nosuch"}, {"id": "crash", "limit": -1}, {"id": "crash", "limit": "5"}} {
		if m := c.callRaw("read_mcp_server_log", bad); m["error"] == nil {
			t.Errorf("read_mcp_server_log %v: %v", bad, m)
		}
	}
}
