package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestConcurrentDisableLosesNothing runs real `voltmcp disable` and
// `voltmcp enable` processes at once, each on its own server of one
// voltmcp-owned file, and checks that every change landed: the
// read-modify-write of the file is serialized between processes.
func TestConcurrentDisableLosesNothing(t *testing.T) {
	home, project := t.TempDir(), t.TempDir()
	const n = 8
	servers := map[string]any{}
	for i := range n {
		servers[fmt.Sprintf("s%d", i)] = map[string]any{"command": "true"}
	}
	data, _ := json.Marshal(map[string]any{"version": 1, "servers": servers})
	file := filepath.Join(home, ".volt", "agent", "mcp.json")
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	for round, verb := range []string{"disable", "enable", "disable"} {
		type proc struct {
			id  string
			out []byte
			err error
		}
		done := make(chan proc, n)
		for i := range n {
			id := fmt.Sprintf("s%d", i)
			cmd := cliCommand(verb, id, "--home", home, "--project", project)
			cmd.Env = append(cmd.Env, "HOME="+home, "XDG_CACHE_HOME="+testCacheDir)
			go func() {
				out, err := cmd.CombinedOutput()
				done <- proc{id, out, err}
			}()
		}
		for range n {
			if p := <-done; p.err != nil {
				t.Fatalf("round %d: voltmcp %s %s: %v\n%s", round, verb, p.id, p.err, p.out)
			}
		}
		got, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Servers map[string]struct {
				Enabled *bool `json:"enabled"`
			} `json:"servers"`
		}
		if err := json.Unmarshal(got, &doc); err != nil {
			t.Fatalf("round %d: %v\n%s", round, err, got)
		}
		want := verb == "enable"
		for i := range n {
			id := fmt.Sprintf("s%d", i)
			if e := doc.Servers[id].Enabled; e == nil || *e != want {
				t.Errorf("round %d: after %d concurrent `voltmcp %s`, server %s has enabled %v: an update was lost", round, n, verb, id, e)
			}
		}
		if t.Failed() {
			t.Fatalf("file:\n%s", got)
		}
	}
}
