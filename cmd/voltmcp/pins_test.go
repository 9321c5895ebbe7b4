package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voltmcp/voltmcp/internal/mcptest"
)

func TestPinsAndApprove(t *testing.T) {
	t.Parallel()
	// Over HTTP the rug-pull server counts its listings across
	// connections, so each CLI run (a new engine) sees the next one.
	url := mcptest.ServeStreamableOnly(t, mcptest.ModeRugPullSchema)
	dir := t.TempDir()
	doc := map[string]any{"version": 1, "servers": map[string]any{"weather": map[string]any{"url": url}}}
	data, _ := json.Marshal(doc)
	if err := os.MkdirAll(filepath.Join(dir, ".volt"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".volt", "mcp.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	env := fakeEnv(t, map[string]string{"HOME": home, "PATH": os.Getenv("PATH")})
	cli := func(args ...string) cliResult {
		return runCLI(t, env, append(args, "--home", home, "--project", dir, "--approve")...)
	}
	if r := cli("pins"); r.code != exitOK || !strings.Contains(r.stdout, "nothing pinned yet") {
		t.Fatalf("pins before any refresh:\n%s", r)
	}
	if r := cli("refresh", "weather"); r.code != exitOK {
		t.Fatalf("first refresh:\n%s", r)
	}
	r := cli("pins", "weather")
	if r.code != exitOK || !strings.Contains(r.stdout, mcptest.RugPullTool) || !strings.Contains(r.stdout, "pinned") || strings.Contains(r.stdout, "wait for approval") {
		t.Fatalf("pins after the first refresh:\n%s", r)
	}
	if r := cli("refresh", "weather"); r.code != exitOK {
		t.Fatalf("second refresh:\n%s", r)
	}
	r = cli("pins", "weather")
	for _, want := range []string{"schema-breaking (held)", `property "` + mcptest.RugPullRequired + `"`, `+     "` + mcptest.RugPullRequired + `"`,
		"approve: voltmcp approve weather " + mcptest.RugPullTool, "1 change(s) wait for approval"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("pins after the pull lacks %q:\n%s", want, r)
		}
	}
	r = cli("pins", "--json")
	var views []struct {
		Server, Tool, State string
		Pending             *struct {
			Severity string
			Held     bool
			Diff     string
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &views); err != nil || len(views) != 1 || views[0].Pending == nil ||
		views[0].State != "changed" || views[0].Pending.Severity != "schema-breaking" || !views[0].Pending.Held {
		t.Fatalf("pins --json: %v\n%s", err, r)
	}
	// The agent sees the pinned version meanwhile.
	if r := cli("describe", "weather", mcptest.RugPullTool, "--json"); r.code != exitOK || strings.Contains(r.stdout, mcptest.RugPullRequired) {
		t.Errorf("describe shows the held change:\n%s", r)
	}
	if r := cli("approve", "weather", "no_such_tool"); r.code != exitFailure || !strings.Contains(r.stderr, "no pending change") {
		t.Errorf("approve of a tool without a change:\n%s", r)
	}
	if r := cli("approve", "wether"); r.code != exitUsage || !strings.Contains(r.stderr, `"weather"`) {
		t.Errorf("approve of an unknown server:\n%s", r)
	}
	if r := cli("approve"); r.code != exitUsage {
		t.Errorf("approve with no server:\n%s", r)
	}
	r = cli("approve", "weather", mcptest.RugPullTool)
	if r.code != exitOK || strings.Contains(r.stdout, "wait for approval") || !strings.Contains(r.stdout, "pinned") {
		t.Fatalf("approve:\n%s", r)
	}
	if r := cli("describe", "weather", mcptest.RugPullTool, "--json"); r.code != exitOK || !strings.Contains(r.stdout, mcptest.RugPullRequired) {
		t.Errorf("describe after approval does not show the new schema:\n%s", r)
	}
	if r := cli("pins", "weather", "extra"); r.code != exitUsage {
		t.Errorf("pins with two arguments:\n%s", r)
	}
}
