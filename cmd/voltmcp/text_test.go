package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voltmcp/voltmcp/internal/mcptest"
	"github.com/voltmcp/voltmcp/sanitize"
)

// TestArgvSecretsAreRedactedEverywhere: a literal credential in a stdio
// server's arguments, in each form it takes there, is flagged by vet and
// hidden by config show and the trust listing (issue 18, item 7).
func TestArgvSecretsAreRedactedEverywhere(t *testing.T) {
	const c = "hunter2canary" // not shaped like a token: only its place says it is one
	forms := []string{
		`"--password", "` + c + `1"`,
		`"--api-key", "` + c + `2"`,
		`"--token=` + c + `3"`,
		`"https://api.example.com/v1?key=` + c + `4&page=2"`,
		`"--header", "Authorization: Bearer ` + c + `5"`,
		`"--url", "https://bob:` + c + `6@api.example.com/"`,
	}
	project := t.TempDir()
	cfg := `{"mcpServers":{"argv":{"command":"node","args":["server.js", ` + strings.Join(forms, ", ") + `, "--port", "8080"]}}}`
	if err := os.WriteFile(filepath.Join(project, ".mcp.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	env := fakeEnv(t, map[string]string{"HOME": home})
	g := []string{"--home", home, "--project", project}
	for _, args := range [][]string{
		{"config", "show", "--approve"}, {"config", "show", "--json", "--approve"}, {"trust", "--json", "--yes"},
		{"vet", "--approve"}, {"vet", "--format", "json", "--approve"},
	} {
		r := runCLI(t, env, append(args, g...)...)
		if strings.Contains(r.stdout+r.stderr, c) {
			t.Errorf("%v shows a secret argument:\n%s", args, r)
		}
		if args[0] == "config" && !strings.Contains(r.stdout, "8080") {
			t.Errorf("%v lost the ordinary arguments:\n%s", args, r)
		}
	}
	v := decodeVetJSON(t, runCLI(t, env, append([]string{"vet", "--format", "json", "--approve"}, g...)...))
	found := map[string]bool{}
	for _, d := range v.Diagnostics {
		if d.Code == "literal-secret" {
			found[d.Path] = true
		}
	}
	for _, i := range []int{2, 4, 5, 6, 8, 10} {
		p := fmt.Sprintf("mcpServers.argv.args[%d]", i)
		if !found[p] {
			t.Errorf("vet does not report %s (found %v)", p, found)
		}
	}
}

// TestCLIPrintsHostileServerTextCleaned: what a hostile server says
// (its error messages, stderr, serverInfo) reaches the terminal through
// call, status and servers without escapes, controls or invisible
// characters (issue 18, item 10).
func TestCLIPrintsHostileServerTextCleaned(t *testing.T) {
	cmd, args, env := mcptest.Command(mcptest.ModeHostileWire)
	_, _, exitEnv := mcptest.Command(mcptest.ModeHostileWire, mcptest.WireExitEnv+"=1")
	doc := map[string]any{"version": 1, "servers": map[string]any{
		"wire":  map[string]any{"command": cmd, "args": args, "env": env},
		"crash": map[string]any{"command": cmd, "args": args, "env": exitEnv},
	}}
	data, _ := json.Marshal(doc)
	project := t.TempDir()
	os.MkdirAll(filepath.Join(project, ".volt"), 0o755)
	if err := os.WriteFile(filepath.Join(project, ".volt", "mcp.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	fenv := fakeEnv(t, map[string]string{"HOME": home, "PATH": os.Getenv("PATH")})
	cli := func(args ...string) cliResult {
		return runCLI(t, fenv, append(args, "--home", home, "--project", project, "--approve")...)
	}
	check := func(what string, r cliResult) {
		t.Helper()
		for _, ru := range r.stdout + r.stderr {
			if ru == '\n' || ru == '\t' {
				continue
			}
			if ru < 0x20 || ru == 0x7f || ru >= 0x80 && ru < 0xa0 || sanitize.Invisible(ru) {
				t.Errorf("%s prints %U:\n%q", what, ru, r.stdout+r.stderr)
				return
			}
		}
	}
	r := cli("call", "wire", mcptest.ToolWireFail)
	if !strings.Contains(r.stdout+r.stderr, mcptest.WireErrorMarker) {
		t.Fatalf("call did not print the server's error:\n%s", r)
	}
	check("call", r)
	r = cli("refresh", "crash")
	if !strings.Contains(r.stdout+r.stderr, mcptest.WireStderrMarker) {
		t.Errorf("refresh of a crashing server does not quote its stderr:\n%s", r)
	}
	check("refresh crash", r)
	for _, args := range [][]string{{"status"}, {"status", "wire"}, {"status", "crash"}, {"servers"}, {"refresh"}, {"describe", "wire", mcptest.ToolWireFail}, {"search", "fail"}, {"audit", "tail"}} {
		check(strings.Join(args, " "), cli(args...))
	}
}
