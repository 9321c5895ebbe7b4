package cue

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestTrustRecordBindsToContent(t *testing.T) {
	loc := layers(t, map[Layer]string{
		LayerProjectShared: `{"servers":{"x":{"command":"x"}}}`,
		LayerProject:       `{"version":1,"servers":{"y":{"command":"y"}}}`,
	})
	first, err := Load(context.Background(), loc, &Options{Schema: testSchema(), Surface: SurfaceServe})
	if err != nil {
		t.Fatal(err)
	}
	if first.Trust.Trusted {
		t.Fatalf("trusted with no record: %+v", first.Trust)
	}
	rec := TrustRecord{Project: loc.Project, TrustedAt: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}
	for _, f := range first.Files {
		if f.Layer.IsProject() && f.Found {
			rec.Files = append(rec.Files, TrustedFile{Path: f.Path, SHA256: f.SHA256})
		}
	}
	opts := &Options{Schema: testSchema(), Surface: SurfaceServe, TrustRecords: []TrustRecord{
		{Project: "/elsewhere", Files: rec.Files}, rec,
	}}
	res, err := Load(context.Background(), loc, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Trust.Trusted || len(res.Config.Servers) != 2 || !strings.Contains(res.Trust.Reason, "2026-11-01") {
		t.Fatalf("recorded trust ignored: %+v, %d servers", res.Trust, len(res.Config.Servers))
	}

	// One byte changed: trust is gone, and the reason names the file.
	p := loc.Path(LayerProject)
	if err := os.WriteFile(p, []byte(`{"version":1,"servers":{"y":{"command":"z"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err = Load(context.Background(), loc, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Trust.Trusted || !res.Trust.Changed || !strings.Contains(res.Trust.Reason, filepath.Base(p)) || len(res.Config.Servers) != 0 {
		t.Fatalf("changed file still trusted: %+v", res.Trust)
	}

	// A removed file is a change too.
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	res, _ = Load(context.Background(), loc, opts)
	if res.Trust.Trusted || !strings.Contains(res.Trust.Reason, "removed") {
		t.Fatalf("removed file: %+v", res.Trust)
	}
}

func TestDecideTrustOrder(t *testing.T) {
	files := []FileStatus{{Layer: LayerProject, Path: "/p/.mcp.json", Found: true, SHA256: "aa"}}
	good := []TrustRecord{{Project: "/p", Files: []TrustedFile{{"/p/.mcp.json", "aa"}}}}
	stale := []TrustRecord{{Project: "/p", Files: []TrustedFile{{"/p/.mcp.json", "bb"}}}}
	for _, tt := range []struct {
		name    string
		in      TrustInput
		trusted bool
		changed bool
	}{
		{"record", TrustInput{Files: files, TrustedProjects: good, DefaultProjectTrust: "ask"}, true, false},
		{"no-approve beats record", TrustInput{Files: files, TrustedProjects: good, NoApprove: true}, false, false},
		{"never beats record", TrustInput{Files: files, TrustedProjects: good, DefaultProjectTrust: "never"}, false, false},
		{"stale record", TrustInput{Files: files, TrustedProjects: stale, DefaultProjectTrust: "ask"}, false, true},
		{"always beats stale record", TrustInput{Files: files, TrustedProjects: stale, DefaultProjectTrust: "always"}, true, false},
		{"approve beats stale record", TrustInput{Files: files, TrustedProjects: stale, Approve: true}, true, false},
	} {
		got := DecideTrust(tt.in)
		if got.Trusted != tt.trusted || got.Changed != tt.changed || got.Reason == "" {
			t.Errorf("%s: %+v", tt.name, got)
		}
	}
}

func TestPoliciesAddUpAcrossLayers(t *testing.T) {
	loc := layers(t, map[Layer]string{
		LayerUserShared: `{"mcpServers":{}}`,
		LayerUser:       `{"version":1,"settings":{"policies":["org", "/abs/team.rego"]}}`,
		LayerProject:    `{"version":1,"settings":{"policies":["policies"]}}`,
	})
	res, err := Load(context.Background(), loc, &Options{Schema: testSchema(), Approve: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range res.Diagnostics {
		t.Logf("%s", d)
	}
	got := res.Config.Policies
	if len(got) != 3 {
		t.Fatalf("policies = %+v", got)
	}
	if got[0].Path != filepath.Join(filepath.Dir(loc.Path(LayerUser)), "org") || got[0].Layer != LayerUser || got[0].At.Line != 1 {
		t.Errorf("user policy = %+v", got[0])
	}
	if got[1].Path != "/abs/team.rego" {
		t.Errorf("absolute policy = %+v", got[1])
	}
	if got[2].Path != filepath.Join(loc.Project, ".volt", "policies") || !got[2].Layer.IsProject() {
		t.Errorf("project policy = %+v", got[2])
	}

	// Untrusted, the project's policies are left out, and the user's go to
	// the trust decision.
	var seen TrustInput
	res, err = Load(context.Background(), loc, &Options{Schema: testSchema(), Trust: func(in TrustInput) TrustDecision {
		seen = in
		return TrustDecision{Reason: "no"}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Config.Policies) != 2 || len(seen.UserPolicies) != 2 {
		t.Fatalf("untrusted: policies %+v, trust input %+v", res.Config.Policies, seen.UserPolicies)
	}
}

// TestSaveTrustRecordConcurrently saves records of different projects at
// once, each save with its own lock file descriptor as another process's
// would be, and checks that none was lost.
func TestSaveTrustRecordConcurrently(t *testing.T) {
	path := filepath.Join(t.TempDir(), TrustStoreFile)
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- SaveTrustRecord(path, TrustRecord{Project: fmt.Sprintf("/p/%d", i), TrustedAt: time.Now()})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	recs, err := ReadTrustRecords(path)
	if err != nil || len(recs) != n {
		t.Fatalf("%d records after %d concurrent saves (%v): updates were lost", len(recs), n, err)
	}
}
