package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeRefusesToRunUnderItsGateway configures the gateway as one of
// its own servers, under a name the config's gateway-entry check cannot
// know (this test binary, run as the CLI): the child sees the run mark
// the engine gives every stdio server and refuses to serve, so the
// gateway does not start itself again and again; the refresh names why.
func TestServeRefusesToRunUnderItsGateway(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	home, project := t.TempDir(), t.TempDir()
	doc := map[string]any{"version": 1, "servers": map[string]any{"loop": map[string]any{
		"command": exe, "args": []string{"serve", "--home", home, "--project", project},
		"env": map[string]string{cliChildEnv: "1", "HOME": home, "XDG_CACHE_HOME": testCacheDir},
	}}}
	data, _ := json.Marshal(doc)
	if err := os.MkdirAll(filepath.Join(home, ".volt", "agent"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".volt", "agent", "mcp.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	env := fakeEnv(t, map[string]string{"HOME": home, "PATH": os.Getenv("PATH")})
	r := runCLI(t, env, "refresh", "loop", "--home", home, "--project", project)
	if r.code == exitOK {
		t.Fatalf("the gateway listed itself as a server:\n%s", r)
	}
	if !strings.Contains(r.stdout+r.stderr, "not serving: this process was started by a voltmcp gateway") {
		t.Errorf("the refresh does not say why the server failed:\n%s", r)
	}
	// Outside a gateway, the same serve runs (and ends with its stdin).
	if r := runCLI(t, fakeEnv(t, map[string]string{"HOME": home}), "serve", "--home", home, "--project", project); r.code != exitOK {
		t.Errorf("serve outside a gateway:\n%s", r)
	}
}
