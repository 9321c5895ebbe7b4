package main

import (
	"context"
	"encoding/json"
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

// hintsProject writes a project whose one server, "db", is the mcptest
// server in mode hints-file, and a team policy that refuses destructive
// tools. It returns the project's root, the policy file and a function
// that rewrites the server's hints (tool name to annotations JSON).
func hintsProject(t *testing.T, hints map[string]string) (dir, policy string, write func(map[string]string)) {
	t.Helper()
	dir = t.TempDir()
	file := filepath.Join(t.TempDir(), "hints.json")
	write = func(hints map[string]string) {
		t.Helper()
		doc := map[string]json.RawMessage{}
		for name, a := range hints {
			doc[name] = json.RawMessage(a)
		}
		data, _ := json.Marshal(doc)
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(hints)
	cmd, args, env := mcptest.Command(mcptest.ModeHintsFile, mcptest.EnvHintsFile+"="+file)
	doc := map[string]any{"version": 1, "servers": map[string]any{"db": map[string]any{"command": cmd, "args": args, "env": env, "connectTimeoutMs": testTimeoutMs, "discoveryTimeoutMs": testTimeoutMs}}}
	data, _ := json.Marshal(doc)
	if err := os.MkdirAll(filepath.Join(dir, ".volt"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".volt", "mcp.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	policy = filepath.Join(t.TempDir(), "team.rego")
	rule := "package voltmcp.tools\n\ndeny contains \"destructive tools are not allowed here\" if input.risk == \"destructive\"\n"
	if err := os.WriteFile(policy, []byte(rule), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, policy, write
}

// serveCall runs `voltmcp serve` as its own process, makes one call of
// db's tool through its mcp tool (the lean path), and waits for serve
// to exit. It returns whether the call failed, and its text.
func serveCall(t *testing.T, home, project, policy, tool string) (bool, string) {
	t.Helper()
	cmd := cliCommand("serve", "--home", home, "--project", project, "--approve", "--policy", policy)
	cs := connectCommand(t, cmd, "2025-11-25")
	ctx, cancel := context.WithDeadline(context.Background(), testwait.Deadline(t))
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp", Arguments: map[string]any{
		"action": "call", "server": "db", "tool": tool, "arguments": map[string]any{}}})
	if err != nil {
		t.Fatal(err)
	}
	var text []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text = append(text, tc.Text)
		}
	}
	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	waitExited(ctx, t, cmd)
	return res.IsError, strings.Join(text, "\n")
}

// TestServeHoldsTheCallThatFindsAChange: the first call a restarted
// `voltmcp serve` makes to a tool whose hints escalated since the last
// run is held, not forwarded; the audit shows the held pin change and a
// denied call, never a completed one. `voltmcp call` (the CLI path) holds
// it too.
func TestServeHoldsTheCallThatFindsAChange(t *testing.T) {
	for _, via := range []string{"serve", "cli"} {
		t.Run(via, func(t *testing.T) {
			t.Parallel()
			project, policy, write := hintsProject(t, map[string]string{"records": `{"readOnlyHint":true}`})
			home := t.TempDir()
			env := fakeEnv(t, map[string]string{"HOME": home, "PATH": os.Getenv("PATH")})
			call := func() (bool, string) {
				if via == "serve" {
					return serveCall(t, home, project, policy, "records")
				}
				r := runCLI(t, env, "call", "db", "records", "--home", home, "--project", project, "--approve", "--policy", policy)
				return r.code != exitOK, r.stdout + r.stderr
			}
			if failed, text := call(); failed {
				t.Fatalf("first run: %s", text)
			}
			write(map[string]string{"records": `{"destructiveHint":true}`})
			since := time.Now()
			if failed, text := call(); !failed || !strings.Contains(text, "held for approval") {
				t.Errorf("first call after the change: %s", text)
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
}

// TestServeKeepsPolicyOverHints: through a serve process and a team
// policy that refuses destructive tools, a destructive name stays
// refused whatever it claims, and a known destructive tool that starts
// claiming readOnlyHint stays refused until approved.
func TestServeKeepsPolicyOverHints(t *testing.T) {
	t.Parallel()
	project, policy, write := hintsProject(t, map[string]string{
		"delete_all_records": `{"readOnlyHint":true}`,
		"records":            `{"destructiveHint":true}`,
	})
	home := t.TempDir()
	if failed, text := serveCall(t, home, project, policy, "delete_all_records"); !failed || !strings.Contains(text, "destructive tools are not allowed") {
		t.Errorf("delete_all_records claiming readOnlyHint: %s", text)
	}
	if failed, text := serveCall(t, home, project, policy, "records"); !failed || !strings.Contains(text, "destructive tools are not allowed") {
		t.Errorf("records claiming destructiveHint: %s", text)
	}
	write(map[string]string{"delete_all_records": `{"readOnlyHint":true}`, "records": `{"readOnlyHint":true}`})
	env := fakeEnv(t, map[string]string{"HOME": home, "PATH": os.Getenv("PATH")})
	cli := func(args ...string) cliResult {
		return runCLI(t, env, append(args, "--home", home, "--project", project, "--approve", "--policy", policy)...)
	}
	// A refused call starts nothing; a refresh lists the change.
	if r := cli("refresh", "db"); r.code != exitOK {
		t.Fatalf("refresh:\n%s", r)
	}
	if failed, text := serveCall(t, home, project, policy, "records"); !failed || !strings.Contains(text, "destructive tools are not allowed") {
		t.Errorf("records after it started claiming readOnlyHint: %s", text)
	}
	r := cli("pins", "db")
	if r.code != exitOK || !strings.Contains(r.stdout, "escalation") || !strings.Contains(r.stdout, "readOnlyHint now claims less risk") {
		t.Errorf("pins:\n%s", r)
	}
	// Approved, the listed version decides: unknown, with hints not
	// trusted, which this policy lets through.
	if r := cli("approve", "db", "records"); r.code != exitOK {
		t.Fatalf("approve:\n%s", r)
	}
	if failed, text := serveCall(t, home, project, policy, "records"); failed {
		t.Errorf("records after approval: %s", text)
	}
}
