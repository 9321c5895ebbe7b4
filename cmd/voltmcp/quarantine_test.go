package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voltmcp/voltmcp/internal/mcptest"
)

func TestApproveQuarantinedServer(t *testing.T) {
	t.Parallel()
	url := mcptest.ServeStreamableOnly(t, mcptest.ModeBehave)
	dir := t.TempDir()
	doc := map[string]any{"version": 1, "servers": map[string]any{"fresh": map[string]any{"url": url}}}
	data, _ := json.Marshal(doc)
	if err := os.MkdirAll(filepath.Join(dir, ".volt"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".volt", "mcp.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	policy := filepath.Join(t.TempDir(), "quarantine.rego")
	if err := os.WriteFile(policy, []byte("package voltmcp.tools\n\nquarantine_new_servers if true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	env := fakeEnv(t, map[string]string{"HOME": home, "PATH": os.Getenv("PATH")})
	cli := func(args ...string) cliResult {
		return runCLI(t, env, append(args, "--home", home, "--project", dir, "--approve", "--policy", policy)...)
	}
	if r := cli("refresh", "fresh"); r.code != exitOK {
		t.Fatalf("refresh:\n%s", r)
	}
	r := cli("pins", "fresh")
	if r.code != exitOK || !strings.Contains(r.stdout, "pinned (quarantined)") || !strings.Contains(r.stdout, "approve: voltmcp approve fresh") {
		t.Fatalf("pins of a quarantined server:\n%s", r)
	}
	if r := cli("search", "echo text back", "--json"); r.code != exitOK || !strings.Contains(r.stdout, `"pending"`) || !strings.Contains(r.stdout, "quarantined") {
		t.Errorf("search does not show the tools as pending:\n%s", r)
	}
	if r := cli("call", "fresh", "echo", "--args", `{"text":"hi"}`); r.code == exitOK || !strings.Contains(r.stdout+r.stderr, "held for approval") {
		t.Errorf("call to a quarantined server:\n%s", r)
	}
	r = cli("approve", "fresh")
	if r.code != exitOK || strings.Contains(r.stdout, "quarantined") {
		t.Fatalf("approve:\n%s", r)
	}
	if r := cli("call", "fresh", "echo", "--args", `{"text":"hi"}`); r.code != exitOK || !strings.Contains(r.stdout, "hi") {
		t.Errorf("call after approval:\n%s", r)
	}
	r = cli("audit", "query", "--kind", "approve", "--json")
	if r.code != exitOK || !strings.Contains(r.stdout, `"server":"fresh"`) {
		t.Errorf("the approval is not audited:\n%s", r)
	}
}
