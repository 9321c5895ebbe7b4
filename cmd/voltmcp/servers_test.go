package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/engine"
	"github.com/voltmcp/voltmcp/internal/mcptest"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

func TestMain(m *testing.M) {
	mcptest.RunIfChild()
	runIfCLIChild()
	dir, err := os.MkdirTemp("", "voltmcp-cli-test-cache-")
	if err != nil {
		panic(err)
	}
	testCacheDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// testCacheDir is the XDG_CACHE_HOME that fakeEnv gives every command, so
// the built-in plugin compiles once per test run, not once per command.
// Set by TestMain.
var testCacheDir string

// testTimeoutMs is the connect and discovery timeout of the test servers
// the CLI's tests configure: a race-built server starting on a loaded
// 2-core machine can take longer than the 10 s default, and the tests are
// about what the gateway does once it answers (testwait.Patience).
const testTimeoutMs = int64(testwait.Patience / time.Millisecond)

// serverProject writes a project whose one server is the mcptest server
// in mode behave.
func serverProject(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd, args, env := mcptest.Command("behave")
	doc := map[string]any{"version": 1, "servers": map[string]any{"demo": map[string]any{"command": cmd, "args": args, "env": env, "connectTimeoutMs": testTimeoutMs, "discoveryTimeoutMs": testTimeoutMs}}}
	data, _ := json.Marshal(doc)
	os.MkdirAll(filepath.Join(dir, ".volt"), 0o755)
	if err := os.WriteFile(filepath.Join(dir, ".volt", "mcp.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestServersRefreshEnableDisable(t *testing.T) {
	project := serverProject(t)
	home := t.TempDir()
	env := fakeEnv(t, map[string]string{"HOME": home, "PATH": os.Getenv("PATH")})
	cli := func(args ...string) cliResult {
		return runCLI(t, env, append(args, "--home", home, "--project", project, "--approve")...)
	}
	r := cli("servers")
	if r.code != exitOK || !strings.Contains(r.stdout, "demo") || !strings.Contains(r.stdout, "cold") {
		t.Fatalf("servers before refresh:\n%s", r)
	}
	// One server named prints the same progress line as every server.
	r = cli("refresh", "demo")
	if r.code != exitOK || !strings.HasPrefix(r.stdout, "[1/1] demo: 6 tools, ") {
		t.Fatalf("refresh:\n%s", r)
	}
	// The cache now lists the tools, with nothing running.
	r = cli("servers", "--json")
	var list []struct {
		ID         string `json:"id"`
		Status     string `json:"status"`
		ToolCounts struct {
			Cached int `json:"cached"`
		} `json:"toolCounts"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list) != 1 {
		t.Fatalf("servers --json: %v\n%s", err, r)
	}
	if list[0].Status != "cold" || list[0].ToolCounts.Cached < 6 {
		t.Errorf("after refresh: %+v", list[0])
	}
	if r := cli("disable", "demo"); r.code != exitOK || !strings.Contains(r.stdout, "disabled") {
		t.Fatalf("disable:\n%s", r)
	}
	if r := cli("refresh", "demo"); r.code != exitFailure || !strings.Contains(r.stderr, "disabled") {
		t.Errorf("refresh of a disabled server:\n%s", r)
	}
	if r := cli("enable", "demo"); r.code != exitOK || !strings.Contains(r.stdout, "cold") {
		t.Fatalf("enable:\n%s", r)
	}
	if r := cli("refresh", "dmeo"); r.code != exitUsage || !strings.Contains(r.stderr, `"demo"`) {
		t.Errorf("unknown server:\n%s", r)
	}
}

func TestGatewayCommands(t *testing.T) {
	project := serverProject(t)
	home := t.TempDir()
	env := fakeEnv(t, map[string]string{"HOME": home, "PATH": os.Getenv("PATH")})
	cli := func(args ...string) cliResult {
		return runCLI(t, env, append(args, "--home", home, "--project", project, "--approve")...)
	}
	if r := cli("refresh", "demo"); r.code != exitOK {
		t.Fatalf("refresh:\n%s", r)
	}
	r := cli("search", "echo the text", "--json")
	var res struct {
		Matches []struct{ Server, Tool string } `json:"matches"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || r.code != exitOK || len(res.Matches) == 0 || res.Matches[0].Tool != "echo" {
		t.Fatalf("search --json: %v\n%s", err, r)
	}
	if r := cli("call", "demo", "echo", "--args", `{"text":"from the cli"}`); r.code != exitOK || strings.TrimSpace(r.stdout) != "from the cli" {
		t.Errorf("call:\n%s", r)
	}
	if r := cli("describe", "demo", "ecoh"); r.code != exitFindings || !strings.Contains(r.stdout, "closest: echo") {
		t.Errorf("describe of a misspelt tool:\n%s", r)
	}
	if r := cli("status", "--json"); r.code != exitOK || !strings.Contains(r.stdout, `"servers": 1`) {
		t.Errorf("status:\n%s", r)
	}
	if r := cli("serve", "--http", "0.0.0.0:0"); r.code != exitUsage || !strings.Contains(r.stderr, "non-loopback") {
		t.Errorf("serve on all interfaces:\n%s", r)
	}
}

func TestRefreshEveryServerShowsProgress(t *testing.T) {
	dir := t.TempDir()
	cmd, args, env := mcptest.Command("behave")
	doc := map[string]any{"version": 1, "servers": map[string]any{
		"one":    map[string]any{"command": cmd, "args": args, "env": env},
		"two":    map[string]any{"command": cmd, "args": args, "env": env},
		"broken": map[string]any{"command": filepath.Join(dir, "no-such-program")},
		"off":    map[string]any{"command": cmd, "enabled": false},
	}}
	data, _ := json.Marshal(doc)
	os.MkdirAll(filepath.Join(dir, ".volt"), 0o755)
	os.WriteFile(filepath.Join(dir, ".volt", "mcp.json"), data, 0o644)
	home := t.TempDir()
	r := runCLI(t, fakeEnv(t, map[string]string{"HOME": home, "PATH": os.Getenv("PATH")}),
		"refresh", "--home", home, "--project", dir, "--approve")
	if r.code != exitFailure || !strings.Contains(r.stderr, "1 of 3 servers failed") {
		t.Fatalf("refresh all:\n%s", r)
	}
	for _, want := range []string{"[1/3] broken: failed", "[2/3] one: 6 tools", "[3/3] two: 6 tools"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("missing %q:\n%s", want, r.stdout)
		}
	}
}

// TestStatusShowsRecentCalls: `voltmcp status SERVER` shows the server's
// latest calls, which other commands made (a one-shot command made none
// of its own): read from the end of the audit log, newest first, with
// how each ended, in the table and in --json.
func TestStatusShowsRecentCalls(t *testing.T) {
	project := serverProject(t)
	home := t.TempDir()
	env := fakeEnv(t, map[string]string{"HOME": home, "PATH": os.Getenv("PATH")})
	cli := func(args ...string) cliResult {
		return runCLI(t, env, append(args, "--home", home, "--project", project, "--approve")...)
	}
	if r := cli("status", "demo"); r.code != exitOK || !strings.Contains(r.stdout, "recent calls: none recorded") {
		t.Errorf("status before any call:\n%s", r)
	}
	if r := cli("call", "demo", "echo", "--args", `{"text":"secret-argument-value"}`); r.code != exitOK {
		t.Fatalf("call:\n%s", r)
	}
	if r := cli("call", "demo", "nosuch"); r.code != exitFindings {
		t.Fatalf("call of no such tool:\n%s", r)
	}
	r := cli("status", "demo")
	if r.code != exitOK || !strings.Contains(r.stdout, "recent calls (2, newest first)") {
		t.Fatalf("status:\n%s", r)
	}
	table := r.stdout[strings.Index(r.stdout, "recent calls"):]
	nosuch, echo := strings.Index(table, "nosuch"), strings.Index(table, "echo")
	if nosuch < 0 || echo < nosuch || !strings.Contains(table, "failed (invalid)") || !strings.Contains(table, "completed") ||
		!strings.Contains(table, `has no tool "nosuch"`) || strings.Contains(r.stdout, "secret-argument-value") {
		t.Errorf("the recent calls:\n%s", table)
	}
	r = cli("status", "demo", "--json")
	var sum engine.ServerSummary
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil || r.code != exitOK {
		t.Fatalf("status --json: %v\n%s", err, r)
	}
	if len(sum.RecentCalls) != 2 || sum.RecentCalls[0].Tool != "nosuch" || sum.RecentCalls[0].Outcome != "invalid" ||
		sum.RecentCalls[1].Tool != "echo" || sum.RecentCalls[1].Status != "completed" || !strings.HasPrefix(sum.RecentCalls[1].ID, "call_") {
		t.Errorf("recentCalls: %+v", sum.RecentCalls)
	}
}
