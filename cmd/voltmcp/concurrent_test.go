package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/voltmcp/voltmcp/cue"
)

// TestConcurrentDisableLosesNothing runs real `voltmcp disable` and
// `voltmcp enable` processes at once, each on its own server of one
// voltmcp-owned file (the user's, then the project's), and checks that
// every change landed: the read-modify-write of the file is serialized
// between processes, by a lock in the agent directory that leaves
// nothing in the project.
func TestConcurrentDisableLosesNothing(t *testing.T) {
	t.Parallel()
	t.Run("user", func(t *testing.T) { concurrentDisable(t, cue.LayerUser) })
	t.Run("project", func(t *testing.T) { concurrentDisable(t, cue.LayerProject) })
}

func concurrentDisable(t *testing.T, layer cue.Layer) {
	home, project := t.TempDir(), t.TempDir()
	loc := cue.Locations{Home: home, Project: project}
	const n = 8
	servers := map[string]any{}
	for i := range n {
		servers[fmt.Sprintf("s%d", i)] = map[string]any{"command": "true"}
	}
	data, _ := json.Marshal(map[string]any{"version": 1, "servers": servers})
	file := loc.Path(layer)
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
			cmd := cliCommand(verb, id, "--home", home, "--project", project, "--approve")
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
	if ents, _ := os.ReadDir(filepath.Dir(file)); layer == cue.LayerProject && len(ents) != 1 {
		t.Errorf("beside %s: %v, want the file alone", file, ents)
	}
	if _, err := os.Stat(loc.LockFile(file)); err != nil {
		t.Errorf("the lock: %v", err)
	}
}
