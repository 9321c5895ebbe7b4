package engine

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// userServers writes servers to the user layer of the workspace of opts
// (<home>/.volt/agent/mcp.json), where fields that only a user may set
// (trustToolHints) count.
func userServers(t testing.TB, opts Options, servers map[string]server) {
	t.Helper()
	user := filepath.Join(opts.Home, ".volt", "agent", "mcp.json")
	data, err := json.Marshal(map[string]any{"version": 1, "servers": servers})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(user), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(user, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
