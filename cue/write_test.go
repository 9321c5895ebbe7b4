package cue

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSetServerEnabled(t *testing.T) {
	ctx := context.Background()
	loc := layers(t, map[Layer]string{
		LayerUserShared: `{"mcpServers":{"GitHub":{"command":"gh-mcp"}}}`,
		LayerUser: `{
  "version": 1,
  "x-team-note": {"owner": "platform", "keep": [1, 2, 3]},
  "settings": {"maxOutputLines": 500},
  "servers": {"Other": {"command": "o", "args": ["--a"]}}
}
`,
	})
	if err := SetServerEnabled(ctx, loc, LayerUser, "github", false, nil); err != nil {
		t.Fatal(err)
	}
	if err := SetServerEnabled(ctx, loc, LayerUser, "other", false, nil); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(loc.Path(LayerUser))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	// Unknown-to-us content and key order survive; the existing key
	// spelling "Other" is reused rather than adding "other".
	for _, want := range []string{`"x-team-note"`, `"owner": "platform"`, `"maxOutputLines": 500`, `"Other"`, `"--a"`} {
		if !strings.Contains(text, want) {
			t.Errorf("lost %s:\n%s", want, text)
		}
	}
	if strings.Index(text, "x-team-note") > strings.Index(text, "settings") || strings.Contains(text, `"other"`) {
		t.Errorf("order or key spelling changed:\n%s", text)
	}
	entries, _ := os.ReadDir(filepath.Dir(loc.Path(LayerUser)))
	// The file and the directory of locks (see Locations.LockFile),
	// nothing else.
	if len(entries) != 2 || entries[0].Name() != "locks" || entries[1].Name() != filepath.Base(loc.Path(LayerUser)) {
		t.Errorf("temporary files left behind: %v", entries)
	}
	if _, err := os.Stat(loc.LockFile(loc.Path(LayerUser))); err != nil {
		t.Errorf("the lock: %v", err)
	}
	// The overlay takes effect through the normal load.
	res, err := Load(ctx, loc, &Options{Schema: testSchema()})
	if err != nil {
		t.Fatal(err)
	}
	noErrors(t, res)
	for _, id := range []string{"github", "other"} {
		if s := mustServer(t, res, id); s.Enabled {
			t.Errorf("%s still enabled", id)
		}
	}
	if err := SetServerEnabled(ctx, loc, LayerUser, "github", true, nil); err != nil {
		t.Fatal(err)
	}
	res, _ = Load(ctx, loc, &Options{Schema: testSchema()})
	if !mustServer(t, res, "github").Enabled {
		t.Error("re-enable did not take")
	}
}

func TestSetServerEnabledCreatesFile(t *testing.T) {
	loc := layers(t, nil)
	if err := SetServerEnabled(context.Background(), loc, LayerProject, "x", false, nil); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(loc.Path(LayerProject))
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v", info.Mode().Perm())
	}
	// The project's .volt holds the file alone: its lock is in the agent
	// directory, not in the project.
	if ents, _ := os.ReadDir(filepath.Dir(loc.Path(LayerProject))); len(ents) != 1 {
		t.Errorf(".volt holds %v", ents)
	}
	if _, err := os.Stat(loc.LockFile(loc.Path(LayerProject))); err != nil {
		t.Errorf("the lock: %v", err)
	}
	data, _ := os.ReadFile(loc.Path(LayerProject))
	if !strings.Contains(string(data), `"version": 1`) || !strings.Contains(string(data), `"enabled": false`) {
		t.Errorf("new file:\n%s", data)
	}
}

func TestSetServerEnabledRefuses(t *testing.T) {
	ctx := context.Background()
	broken := `{"servers": {"x": {"command": "x"},}`
	loc := layers(t, map[Layer]string{LayerUser: broken, LayerProject: `{"mcpServers":{}}`})
	if err := SetServerEnabled(ctx, loc, LayerProjectShared, "x", false, nil); err == nil {
		t.Error("wrote a shared layer")
	}
	err := SetServerEnabled(ctx, loc, LayerUser, "x", false, nil)
	if err == nil || !strings.Contains(err.Error(), "not changed") || !strings.Contains(err.Error(), "1:36") {
		t.Errorf("err = %v", err)
	}
	if data, _ := os.ReadFile(loc.Path(LayerUser)); string(data) != broken {
		t.Error("a file that does not parse was rewritten")
	}
	if err := SetServerEnabled(ctx, loc, LayerProject, "x", false, nil); err == nil || !strings.Contains(err.Error(), "dialect") {
		t.Errorf("err = %v", err)
	}
	if err := SetServerEnabled(ctx, loc, LayerUser, "!!!", false, nil); err == nil {
		t.Error("accepted an invalid id")
	}
}
