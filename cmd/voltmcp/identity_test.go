package main

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voltmcp/voltmcp/internal/mcptest"
)

// addArgs returns the arguments of `voltmcp add NAME` for the test
// server in mode, with extra arguments after the test binary's own (a
// program run with other arguments is another program).
func addArgs(name, mode string, extraEnv []string, extraArgs ...string) []string {
	cmd, args, env := mcptest.Command(mode, extraEnv...)
	out := []string{"add", name}
	for k, v := range env {
		out = append(out, "--env", k+"="+v)
	}
	return append(append(append(out, "--", cmd), args...), extraArgs...)
}

// stateFiles lists the files under the agent directory's state stores
// (pins, metadata cache, stored outputs, OAuth tokens, logs), lock files left
// out: what voltmcp keeps about servers.
func stateFiles(t *testing.T, home string) []string {
	t.Helper()
	var files []string
	for _, store := range []string{"pins", "cache", "outputs", "auth", "logs"} {
		root := filepath.Join(home, ".volt", "agent", "mcp", store)
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && !strings.HasSuffix(path, ".lock") {
				files = append(files, strings.TrimPrefix(path, home))
			}
			return nil
		})
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	return files
}

// TestRemovedServerLeavesNothingBehind runs the review's case: with new
// servers held (quarantine_new_servers), a server is approved, removed,
// and another program is added under its name. The other program is
// new: held until approved, with none of the old program's pins, which
// neither count against it nor show as its own; and remove left nothing
// of the old server in the agent directory. Two shapes: another
// program with other tools, and another program that lists a tool of
// the same name, changed.
func TestRemovedServerLeavesNothingBehind(t *testing.T) {
	t.Parallel()
	hints := func(t *testing.T, annotations string) string {
		file := filepath.Join(t.TempDir(), "hints.json")
		if err := os.WriteFile(file, []byte(`{"records":`+annotations+`}`), 0o644); err != nil {
			t.Fatal(err)
		}
		return mcptest.EnvHintsFile + "=" + file
	}
	for _, c := range []struct {
		name         string
		first, then  func(t *testing.T) []string
		firstTool    string
		thenTool     string
		oldToolsGone []string
	}{
		{
			name:         "other tools",
			first:        func(*testing.T) []string { return addArgs("srv", mcptest.ModeBehave, nil) },
			then:         func(*testing.T) []string { return addArgs("srv", mcptest.ModeRugPull, nil, "-test.count=1") },
			firstTool:    "echo",
			thenTool:     mcptest.RugPullTool,
			oldToolsGone: []string{"echo", "big"},
		},
		{
			name: "a tool of the same name, changed",
			first: func(t *testing.T) []string {
				return addArgs("srv", mcptest.ModeHintsFile, []string{hints(t, `{"readOnlyHint":true}`)})
			},
			then: func(t *testing.T) []string {
				return addArgs("srv", mcptest.ModeHintsFile, []string{hints(t, `{"destructiveHint":true}`)}, "-test.count=1")
			},
			firstTool: "records",
			thenTool:  "records",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			home, project := t.TempDir(), t.TempDir()
			policy := filepath.Join(t.TempDir(), "quarantine.rego")
			if err := os.WriteFile(policy, []byte("package voltmcp.tools\n\nquarantine_new_servers if true\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			env := fakeEnv(t, map[string]string{"HOME": home, "PATH": os.Getenv("PATH")})
			cli := func(args ...string) cliResult {
				// The flags go before add's "--".
				return runCLI(t, env, append([]string{args[0], "--home", home, "--project", project, "--policy", policy}, args[1:]...)...)
			}
			if r := cli(c.first(t)...); r.code != exitOK {
				t.Fatalf("add:\n%s", r)
			}
			if r := cli("call", "srv", c.firstTool, "--args", `{"text":"hi"}`); r.code == exitOK || !strings.Contains(r.stdout+r.stderr, "quarantined") {
				t.Fatalf("the first program is not held:\n%s", r)
			}
			if r := cli("approve", "srv"); r.code != exitOK {
				t.Fatalf("approve:\n%s", r)
			}
			if r := cli("call", "srv", c.firstTool, "--args", `{"text":"hi"}`); r.code != exitOK {
				t.Fatalf("call after approval:\n%s", r)
			}
			if c.firstTool == "echo" {
				// An output over maxOutputBytes goes to the output store.
				if r := cli("call", "srv", "big", "--args", `{"bytes":200000}`, "--json"); r.code != exitOK || !strings.Contains(r.stdout, "mcpout_") {
					t.Fatalf("a big output is not stored:\n%s", r)
				}
			}
			if files := stateFiles(t, home); len(files) == 0 {
				t.Fatal("nothing kept about the server before remove")
			}

			r := cli("remove", "srv")
			if r.code != exitOK {
				t.Fatalf("remove:\n%s", r)
			}
			if !strings.Contains(r.stdout, "Deleted its pins and approval") {
				t.Errorf("remove does not say what it deleted:\n%s", r)
			}
			if files := stateFiles(t, home); len(files) != 0 {
				t.Errorf("remove left state of the server behind: %v", files)
			}

			if r := cli(c.then(t)...); r.code != exitOK {
				t.Fatalf("add the other program:\n%s", r)
			}
			r = cli("call", "srv", c.thenTool, "--args", `{"city":"x"}`)
			out := r.stdout + r.stderr
			if r.code == exitOK || !strings.Contains(out, "quarantined") || !strings.Contains(out, "voltmcp approve srv") {
				t.Errorf("the other program under the old name is not held as new:\n%s", r)
			}
			if strings.Contains(out, "changed since") {
				t.Errorf("the other program is compared with the old program's pins:\n%s", r)
			}
			r = cli("pins", "srv", "--json")
			var views []struct {
				Tool, State string
				Pending     any
				Quarantined bool
			}
			if err := json.Unmarshal([]byte(r.stdout), &views); r.code != exitOK || err != nil || len(views) == 0 {
				t.Fatalf("pins: %v\n%s", err, r)
			}
			for _, v := range views {
				if v.Pending != nil || v.State != "pinned" || !v.Quarantined {
					t.Errorf("pins of the other program: %+v", v)
				}
				for _, old := range c.oldToolsGone {
					if v.Tool == old {
						t.Errorf("pins srv lists the old program's tool %s", old)
					}
				}
			}
		})
	}
}

// TestProjectsSharingAHomeKeepTheirOwnApproval runs the review's case
// through the CLI and through serve: two trusted projects that share one
// --home each define a server "db", with another command line; with new
// servers held, approving the first project's db does not make the
// second's callable.
func TestProjectsSharingAHomeKeepTheirOwnApproval(t *testing.T) {
	t.Parallel()
	project := func(t *testing.T, extraArgs ...string) string {
		dir := t.TempDir()
		cmd, args, env := mcptest.Command(mcptest.ModeBehave)
		doc := map[string]any{"version": 1, "servers": map[string]any{"db": map[string]any{
			"command": cmd, "args": append(args, extraArgs...), "env": env}}}
		data, _ := json.Marshal(doc)
		if err := os.MkdirAll(filepath.Join(dir, ".volt"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ".volt", "mcp.json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	for _, via := range []string{"cli", "serve"} {
		t.Run(via, func(t *testing.T) {
			home := t.TempDir()
			first, second := project(t), project(t, "-test.count=1")
			policy := filepath.Join(t.TempDir(), "quarantine.rego")
			if err := os.WriteFile(policy, []byte("package voltmcp.tools\n\nquarantine_new_servers if true\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			env := fakeEnv(t, map[string]string{"HOME": home, "PATH": os.Getenv("PATH")})
			cli := func(project string, args ...string) cliResult {
				return runCLI(t, env, append(args, "--home", home, "--project", project, "--approve", "--policy", policy)...)
			}
			call := func(project string) (bool, string) {
				if via == "serve" {
					return serveCall(t, home, project, policy, "env")
				}
				r := cli(project, "call", "db", "env")
				return r.code != exitOK, r.stdout + r.stderr
			}
			if r := cli(first, "approve", "db"); r.code != exitOK {
				t.Fatalf("approve the first project's db:\n%s", r)
			}
			if failed, text := call(first); failed {
				t.Fatalf("the first project's approved db: %s", text)
			}
			if failed, text := call(second); !failed || !strings.Contains(text, "quarantined") || !strings.Contains(text, "voltmcp approve db") {
				t.Errorf("the second project's db is callable on the first's approval: %s", text)
			}
		})
	}
}
