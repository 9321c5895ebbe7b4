package cue

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestLoadCarriesWhyFilesAndServersAreOut: the load result carries the
// diagnostic that kept each file out, the ids of an untrusted project's
// servers, and the first error of an invalid server.
func TestLoadCarriesWhyFilesAndServersAreOut(t *testing.T) {
	loc := layers(t, map[Layer]string{
		LayerUserShared:    "{\"mcpServers\": {\"a\": {\"command\": \"a\",}}}",
		LayerUser:          `{"version": 1, "servers": {"bad": {"command": "b", "lifecycle": "never"}}}`,
		LayerProjectShared: `{"mcpServers": {"Everything": {"command": "npx"}, "memory": {"command": "npx"}}}`,
	})
	res, err := Load(context.Background(), loc, &Options{Schema: testSchema()})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Files {
		switch f.Layer {
		case LayerUserShared:
			if f.Problem == nil || f.Problem.Code != CodeJSONSyntax || f.Problem.Line != 1 || f.Problem.Col == 0 {
				t.Errorf("user-shared: problem %+v", f.Problem)
			}
		case LayerProjectShared:
			if f.Problem == nil || f.Problem.Code != CodeProjectIgnored || strings.Join(f.IgnoredServers, ",") != "everything,memory" {
				t.Errorf("project-shared: problem %+v, ignored %v", f.Problem, f.IgnoredServers)
			}
		case LayerUser:
			if f.Problem != nil || f.IgnoredServers != nil {
				t.Errorf("user: problem %+v, ignored %v", f.Problem, f.IgnoredServers)
			}
		}
	}
	if s := mustServer(t, res, "bad"); !s.Invalid || !strings.Contains(s.Problem, ":1:") || !strings.Contains(s.Problem, "error[invalid-value]: servers.bad.lifecycle") {
		t.Errorf("invalid server: problem %q", s.Problem)
	}
}

// TestKeepTrustNeverCreatesTrust: keepTrust moves a record that trusts
// the old content to the new, adds a file that was absent on both sides,
// and leaves alone a project without a record or whose record trusts
// other content.
func TestKeepTrustNeverCreatesTrust(t *testing.T) {
	dir := t.TempDir()
	store, project := dir+"/trusted.json", dir+"/p"
	path := project + "/.volt/mcp.json"
	if err := keepTrust(store, project, path, nil, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(store); err == nil {
		t.Fatal("a project without a record became trusted")
	}
	rec := NewTrustRecord(project, []FileStatus{{Layer: LayerProjectShared, Path: project + "/.mcp.json", Found: true, SHA256: "x"}}, time.Now())
	if err := SaveTrustRecord(store, rec); err != nil {
		t.Fatal(err)
	}
	entry := func() string {
		recs, err := ReadTrustRecords(store)
		if err != nil || len(recs) != 1 {
			t.Fatalf("records: %v %v", recs, err)
		}
		for _, f := range recs[0].Files {
			if f.Path == absPath(path) {
				return f.SHA256
			}
		}
		return ""
	}
	if err := keepTrust(store, project, path, nil, []byte("one")); err != nil || entry() != "7692c3ad3540bb803c020b3aee66cd8887123234ea0c6e7143c0add73ff431ed" {
		t.Fatalf("absent file: %v, entry %q", err, entry())
	}
	if err := keepTrust(store, project, path, []byte("one"), []byte("two")); err != nil || entry() != "3fc4ccfe745870e2c0d99f71f30ff0656c8dedd41cc1d7d3d376b0dbe685e2f3" {
		t.Fatalf("trusted content: %v, entry %q", err, entry())
	}
	// Old content the record does not trust (an outside edit) is not
	// re-recorded.
	if err := keepTrust(store, project, path, []byte("edited outside"), []byte("three")); err != nil || entry() != "3fc4ccfe745870e2c0d99f71f30ff0656c8dedd41cc1d7d3d376b0dbe685e2f3" {
		t.Fatalf("untrusted content: %v, entry %q", err, entry())
	}
}
