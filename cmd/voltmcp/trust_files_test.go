package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/internal/mcptest"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// policyServerProject writes a project whose .volt/mcp.json defines the
// mcptest server "demo" and names a policy directory, ../policy, holding
// team.rego and nested/deep.rego (and a test file and a README, which the
// policy loader does not read). It returns the project's root.
func policyServerProject(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd, args, env := mcptest.Command(mcptest.ModeBehave)
	doc := map[string]any{"version": 1, "settings": map[string]any{"policies": []string{"../policy"}},
		"servers": map[string]any{"demo": map[string]any{"command": cmd, "args": args, "env": env, "connectTimeoutMs": testTimeoutMs, "discoveryTimeoutMs": testTimeoutMs}}}
	data, _ := json.Marshal(doc)
	for name, body := range map[string]string{
		".volt/mcp.json":          string(data),
		"policy/team.rego":        "package voltmcp.tools\n\ndeny contains \"no deletes here\" if input.risk == \"destructive\"\n",
		"policy/nested/deep.rego": "package voltmcp.remote\n\ndeny contains \"never\" if false\n",
		"policy/team_test.rego":   "package voltmcp.tools_test\n\ntest_x if true\n",
		"policy/README.md":        "notes\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestTrustListsAndCoversPolicyFiles runs `voltmcp trust` on a project
// whose config names a policy directory: the listing names and counts
// every file trust covers (the config file and each policy file the
// loader reads), the record holds them all, and each kind of change to
// a policy file makes the project untrusted again until `voltmcp trust`
// runs again, which refuses a file it cannot read.
func TestTrustListsAndCoversPolicyFiles(t *testing.T) {
	project := policyServerProject(t)
	home := t.TempDir()
	env := fakeEnv(t, map[string]string{"HOME": home})
	g := []string{"--home", home, "--project", project}
	r := runCLI(t, env, append([]string{"trust", "--yes"}, g...)...)
	if r.code != exitOK {
		t.Fatalf("trust:\n%s", r)
	}
	team, deep := filepath.Join(project, "policy", "team.rego"), filepath.Join(project, "policy", "nested", "deep.rego")
	for _, want := range []string{"3 files:", "file " + filepath.Join(project, ".volt", "mcp.json"), "file " + team, "file " + deep,
		"(policy, named by " + filepath.Join(project, ".volt", "mcp.json") + ")", "trusted " + project + " (3 files)"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the listing lacks %q:\n%s", want, r.stdout)
		}
	}
	for _, not := range []string{"team_test.rego", "README.md"} {
		if strings.Contains(r.stdout, not) {
			t.Errorf("the listing names %s, which is never loaded:\n%s", not, r.stdout)
		}
	}
	r = runCLI(t, env, append([]string{"trust", "--yes", "--json"}, g...)...)
	var out struct {
		Record struct {
			Files []struct{ Path, SHA256 string }
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || len(out.Record.Files) != 3 {
		t.Fatalf("trust --json: %v\n%s", err, r)
	}

	// A user policy makes the voltmcp.trust Rego policy decide trust
	// rather than the built-in rule; both must agree.
	userPolicy := filepath.Join(t.TempDir(), "org.rego")
	if err := os.WriteFile(userPolicy, []byte("package voltmcp.tools\n\ndeny contains \"org\" if false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	status := func() string {
		t.Helper()
		var got []string
		for _, extra := range [][]string{nil, {"--policy", userPolicy}} {
			r := runCLI(t, env, append(append([]string{"servers", "--json"}, g...), extra...)...)
			var list []struct{ ID, Status string }
			if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list) != 1 {
				t.Fatalf("servers --json %v: %v\n%s", extra, err, r)
			}
			got = append(got, list[0].Status)
		}
		if (got[0] == "untrusted") != (got[1] == "untrusted") {
			t.Fatalf("the built-in rule and the trust policy disagree: %v", got)
		}
		return got[0]
	}
	if s := status(); s == "untrusted" {
		t.Fatalf("trusted project: demo is %s", s)
	}
	write := func(p, s string) error { return os.WriteFile(p, []byte(s), 0o644) }
	for _, tc := range []struct {
		name   string
		change func() error
		refuse string // what trust says when it cannot trust the change
	}{
		{"edit", func() error { return write(team, "package voltmcp.tools\n\ndeny contains \"x\" if false\n") }, ""},
		{"add", func() error { return write(filepath.Join(project, "policy", "new.rego"), "package voltmcp.tools\n") }, ""},
		{"delete", func() error { return os.Remove(filepath.Join(project, "policy", "new.rego")) }, ""},
		{"nested directory", func() error {
			if err := os.MkdirAll(filepath.Join(project, "policy", "a", "b"), 0o755); err != nil {
				return err
			}
			return write(filepath.Join(project, "policy", "a", "b", "c.rego"), "package voltmcp.tools\n")
		}, ""},
		{"symlink", func() error {
			other := filepath.Join(t.TempDir(), "other.rego")
			if err := write(other, "package voltmcp.tools\n\ndeny contains \"y\" if false\n"); err != nil {
				return err
			}
			if err := os.Remove(deep); err != nil {
				return err
			}
			return os.Symlink(other, deep)
		}, ""},
		{"fifo", func() error {
			if runtime.GOOS == "windows" {
				t.Skip("no FIFOs")
			}
			if err := os.Remove(team); err != nil {
				return err
			}
			return syscall.Mkfifo(team, 0o600)
		}, "not a regular file (fifo)"},
	} {
		if err := tc.change(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if s := status(); s != "untrusted" {
			t.Fatalf("%s: after the change demo is %s, want untrusted", tc.name, s)
		}
		r := runCLI(t, env, append([]string{"trust", "--yes"}, g...)...)
		if tc.refuse != "" {
			if r.code == exitOK || !strings.Contains(r.stderr, tc.refuse) || !strings.Contains(r.stderr, "team.rego") {
				t.Fatalf("%s: trust over a file it cannot read:\n%s", tc.name, r)
			}
			continue
		}
		if r.code != exitOK {
			t.Fatalf("%s: trust again:\n%s", tc.name, r)
		}
		if s := status(); s == "untrusted" {
			t.Fatalf("%s: trusted again, demo is still untrusted", tc.name)
		}
	}
}

// TestServeNoticesUntrust runs a serve of a project whose config names a
// policy directory, while its trust changes in another terminal: after
// `voltmcp untrust` the project's server is refused, with an error that
// names voltmcp trust; trusted again, it answers again; after an edit of
// one of its policy files it is refused as not trusted, and once
// `voltmcp trust` covers the new content, serve loads it and it answers
// (live config, engine.Engine.Watch).
func TestServeNoticesUntrust(t *testing.T) {
	project := policyServerProject(t)
	home := t.TempDir()
	env := fakeEnv(t, map[string]string{"HOME": home})
	cli := func(args ...string) cliResult {
		return runCLI(t, env, append(args, "--home", home, "--project", project)...)
	}
	if r := cli("trust", "--yes"); r.code != exitOK {
		t.Fatalf("trust:\n%s", r)
	}
	ctx, cancel := context.WithDeadline(context.Background(), testwait.Deadline(t))
	defer cancel()
	cs := connectCommand(t, cliCommand("serve", "--home", home, "--project", project), "2025-11-25")
	call := func() (bool, string) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp", Arguments: map[string]any{
			"action": "call", "server": "demo", "tool": "echo", "arguments": map[string]any{"text": "hi"}}})
		if err != nil || len(res.Content) == 0 {
			t.Fatalf("call: %v %+v", err, res)
		}
		return res.IsError, res.Content[0].(*mcp.TextContent).Text
	}
	// until calls until the answer is refused (or not), as the serving
	// process looks at the trust files at most once a second.
	until := func(refused bool, want string) {
		t.Helper()
		for {
			isErr, text := call()
			if isErr == refused && strings.Contains(text, want) {
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("the call never became refused=%v with %q: %s", refused, want, text)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	until(false, "hi")
	if r := cli("untrust"); r.code != exitOK {
		t.Fatalf("untrust:\n%s", r)
	}
	until(true, "not trusted")
	if _, text := call(); !strings.Contains(text, "voltmcp trust") {
		t.Errorf("the refusal does not name voltmcp trust: %s", text)
	}
	if r := cli("trust", "--yes"); r.code != exitOK {
		t.Fatalf("trust again:\n%s", r)
	}
	until(false, "hi")
	if err := os.WriteFile(filepath.Join(project, "policy", "team.rego"), []byte("package voltmcp.tools\n\ndeny contains \"edited\" if false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	until(true, "not trusted")
	if r := cli("trust", "--yes"); r.code != exitOK {
		t.Fatalf("trust of the edit:\n%s", r)
	}
	until(false, "hi")
}
