package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/policies"
)

// TestProjectPoliciesLoadTheBytesTrustHashed loads a project whose config
// names a policy directory, then rewrites and adds policy files before
// the policy set is built: the set decides by the files as they were
// read and hashed with the config, never by what is on disk later.
func TestProjectPoliciesLoadTheBytesTrustHashed(t *testing.T) {
	t.Parallel()
	home, project := t.TempDir(), t.TempDir()
	files := map[string]string{
		".volt/mcp.json":   `{"version":1,"settings":{"policies":["../policy"]}}`,
		"policy/team.rego": "package voltmcp.tools\n\ndeny contains \"hashed rule\" if input.risk == \"write\"\n",
	}
	for name, body := range files {
		p := filepath.Join(project, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	res, err := cue.Load(ctx, cue.Locations{Home: home, Project: project}, &cue.Options{Approve: true})
	if err != nil {
		t.Fatal(err)
	}
	// Swapped after the read: a rule that would deny differently, and a
	// new file the read never saw.
	if err := os.WriteFile(filepath.Join(project, "policy", "team.rego"), []byte("package voltmcp.tools\n\ndeny contains \"swapped rule\" if true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, "policy", "late.rego"), []byte("package voltmcp.tools\n\ndeny contains \"late rule\" if true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pol, err := LoadPolicies(ctx, nil, res.Config.Policies, nil)
	if err != nil {
		t.Fatal(err)
	}
	in := policies.ToolInput{Server: policies.Server{ID: "s", Scope: "project", Transport: "stdio", Command: "x"},
		Tool: policies.Tool{Name: "t"}, Risk: "write", IncludeTools: []string{}, ExcludeTools: []string{}, Pin: policies.Pin{State: "pinned"}, Surface: "serve"}
	d := pol.Tools(ctx, in)
	var reasons []string
	for _, r := range d.Reasons {
		reasons = append(reasons, r.String())
	}
	got := strings.Join(reasons, "; ")
	if d.Allowed || !strings.Contains(got, "hashed rule") || strings.Contains(got, "swapped") || strings.Contains(got, "late") {
		t.Fatalf("decision %+v: %s", d, got)
	}

	// A project source whose files were never read fails closed.
	src := res.Config.Policies[0]
	src.Files = nil
	pol, err = LoadPolicies(ctx, nil, []cue.PolicySource{src}, nil)
	if err == nil || !strings.Contains(err.Error(), "not read") {
		t.Fatalf("unread project policy: %v", err)
	}
	if d := pol.Tools(ctx, in); d.Allowed {
		t.Fatalf("an unread project policy allowed: %+v", d)
	}
}
