package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runCLIStdin runs the CLI with the given standard input.
func runCLIStdin(t *testing.T, getenv func(string) string, stdin string, args ...string) cliResult {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(stdin), &out, &errb, getenv)
	return cliResult{code: code, stdout: out.String(), stderr: errb.String()}
}

func TestTrustBindsToContent(t *testing.T) {
	const canary = "canary-trust-9f3e1b"
	home, project := t.TempDir(), t.TempDir()
	cfg := `{"mcpServers":{"db":{"command":"npx","args":["-y","@acme/db-mcp@1.2.3"],"env":{"DB_TOKEN":"` + canary + `"}},` +
		`"remote":{"url":"https://user:` + canary + `@mcp.example.com/mcp?token=` + canary + `"}}}`
	if err := os.WriteFile(filepath.Join(project, ".mcp.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	env := fakeEnv(t, map[string]string{"HOME": home})
	g := []string{"--home", home, "--project", project}
	// servers returns the ids of the servers that load; those of an
	// untrusted project are listed as untrusted, by name only.
	servers := func() []string {
		r := runCLI(t, env, append([]string{"servers", "--json"}, g...)...)
		var list []struct{ ID, Status string }
		if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
			t.Fatalf("servers --json: %v\n%s", err, r)
		}
		if strings.Contains(r.stdout+r.stderr, canary) {
			t.Errorf("servers leaks a secret of the project:\n%s", r)
		}
		var ids []string
		for _, s := range list {
			if s.Status != "untrusted" {
				ids = append(ids, s.ID)
			}
		}
		return ids
	}
	if ids := servers(); len(ids) != 0 {
		t.Fatalf("untrusted project loaded: %v", ids)
	}

	// Declined: nothing is recorded.
	r := runCLIStdin(t, env, "n\n", append([]string{"trust"}, g...)...)
	if r.code != exitFindings || !strings.Contains(r.stderr, "not trusted") || strings.Contains(r.stderr, "--yes") {
		t.Fatalf("declined trust:\n%s", r)
	}
	// No answer at all (standard input ends): the refusal names --yes.
	if r := runCLIStdin(t, env, "", append([]string{"trust"}, g...)...); r.code != exitFindings || !strings.Contains(r.stderr, "voltmcp trust --yes") {
		t.Errorf("trust with nothing to read an answer from:\n%s", r)
	}
	for _, want := range []string{"server db", "npx -y @acme/db-mcp@1.2.3", "env      DB_TOKEN", "server remote", "mcp.example.com"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("listing lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout+r.stderr, canary) {
		t.Errorf("listing leaks a secret:\n%s", r)
	}
	if ids := servers(); len(ids) != 0 {
		t.Fatalf("declined trust loaded the project: %v", ids)
	}

	// Accepted: the project loads without --approve.
	if r := runCLIStdin(t, env, "y\n", append([]string{"trust"}, g...)...); r.code != exitOK || !strings.Contains(r.stdout, "trusted") {
		t.Fatalf("trust:\n%s", r)
	}
	if ids := servers(); strings.Join(ids, ",") != "db,remote" {
		t.Fatalf("trusted project: servers %v", ids)
	}
	store := filepath.Join(home, ".volt", "agent", "trusted-projects.json")
	if fi, err := os.Stat(store); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("trust store: %v %v", fi, err)
	}
	if data, _ := os.ReadFile(store); bytes.Contains(data, []byte(canary)) {
		t.Errorf("trust store holds a secret")
	}

	// An edit takes trust away, and vet says why.
	if err := os.WriteFile(filepath.Join(project, ".mcp.json"), []byte(strings.Replace(cfg, "1.2.3", "1.2.4", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if ids := servers(); len(ids) != 0 {
		t.Fatalf("changed project still loads: %v", ids)
	}
	r = runCLI(t, env, append([]string{"vet"}, g...)...)
	if !strings.Contains(r.stdout, ".mcp.json changed") {
		t.Errorf("vet does not say the file changed:\n%s", r)
	}

	// --yes records without asking; untrust removes it.
	if r := runCLI(t, env, append([]string{"trust", "--yes"}, g...)...); r.code != exitOK {
		t.Fatalf("trust --yes:\n%s", r)
	}
	if ids := servers(); len(ids) != 2 {
		t.Fatalf("re-trusted project: %v", ids)
	}
	if r := runCLI(t, env, append([]string{"untrust"}, g...)...); r.code != exitOK || !strings.Contains(r.stdout, "no longer trusted") {
		t.Fatalf("untrust:\n%s", r)
	}
	if ids := servers(); len(ids) != 0 {
		t.Fatalf("untrusted project loads: %v", ids)
	}
	if r := runCLI(t, env, append([]string{"untrust"}, g...)...); !strings.Contains(r.stdout, "was not trusted") {
		t.Fatalf("second untrust:\n%s", r)
	}
}

func TestTrustWithoutProjectConfig(t *testing.T) {
	home := t.TempDir()
	r := runCLI(t, fakeEnv(t, map[string]string{"HOME": home}), "trust", "--yes", "--home", home, "--project", t.TempDir())
	if r.code != exitFailure || !strings.Contains(r.stderr, "no project MCP config") {
		t.Fatalf("trust of an empty project:\n%s", r)
	}
}

func TestCorruptTrustStoreTrustsNothing(t *testing.T) {
	home, project := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(project, ".mcp.json"), []byte(`{"mcpServers":{"x":{"command":"x"}}}`), 0o644)
	store := filepath.Join(home, ".volt", "agent", "trusted-projects.json")
	os.MkdirAll(filepath.Dir(store), 0o700)
	os.WriteFile(store, []byte(`{"version":1,"projects":[{"project":`), 0o600)
	r := runCLI(t, fakeEnv(t, map[string]string{"HOME": home}), "vet", "--home", home, "--project", project)
	if r.code != exitFindings || !strings.Contains(r.stdout, "trusted-projects.json") {
		t.Fatalf("vet with a corrupt trust store:\n%s", r)
	}
}

// TestTrustListsEveryEnvReference: the listing names every host variable
// a project server reads, by field, whatever field holds the reference
// (issue 18, item 8).
func TestTrustListsEveryEnvReference(t *testing.T) {
	home, project := t.TempDir(), t.TempDir()
	cfg := `{"mcpServers":{
		"local":{"command":"${env:R_CMD}","args":["--db","${env:R_ARG}"],"cwd":"${env:R_CWD}","env":{"TOKEN":"${env:R_ENV}"}},
		"remote":{"url":"https://mcp.example.com/${env:R_URL}","headers":{"X-Team":"${env:R_HEADER}"},
			"auth":{"type":"bearer","token":"${env:R_AUTH}"}}}}`
	if err := os.WriteFile(filepath.Join(project, ".mcp.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	env := fakeEnv(t, map[string]string{"HOME": home})
	g := []string{"--home", home, "--project", project}
	r := runCLIStdin(t, env, "n\n", append([]string{"trust"}, g...)...)
	for _, want := range []string{
		"R_CMD from your environment, into command", "R_ARG from your environment, into args[1]",
		"R_CWD from your environment, into cwd", "R_ENV from your environment, into env.TOKEN",
		"R_URL from your environment, into url", "R_HEADER from your environment, into headers.X-Team",
		"R_AUTH from your environment, into auth.token",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("trust listing lacks %q:\n%s", want, r.stdout)
		}
	}
	r = runCLI(t, env, append([]string{"trust", "--json", "--yes"}, g...)...)
	var out struct {
		Servers []struct {
			ID      string
			EnvRefs []struct{ Name, Field string }
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("trust --json: %v\n%s", err, r)
	}
	got := map[string]string{}
	for _, s := range out.Servers {
		for _, ref := range s.EnvRefs {
			got[ref.Name] = s.ID + " " + ref.Field
		}
	}
	if got["R_HEADER"] != "remote headers.X-Team" || got["R_AUTH"] != "remote auth.token" || got["R_ENV"] != "local env.TOKEN" {
		t.Errorf("trust --json envRefs: %v", got)
	}
}
