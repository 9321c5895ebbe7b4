package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPolicyTestDefaultBundle(t *testing.T) {
	t.Parallel()
	r := runCLI(t, nil, "policy", "test")
	if r.code != exitOK || !strings.Contains(r.stdout, "PASS: ") {
		t.Fatalf("want all default tests to pass\n%s", r)
	}
	v := runCLI(t, nil, "policy", "test", "-v", "../../examples/policies")
	if v.code != exitOK || !strings.Contains(v.stdout, "test_destructive_denied_outside_ops: PASS") {
		t.Fatalf("want verbose passing example tests\n%s", v)
	}
}

func TestPolicyTestFailureExitsOne(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "team_test.rego"), []byte("package team_test\n\nimport data.voltmcp.remote\n\ntest_remote_may_add_servers if {\n\tremote.decision.allow with input as {\"command\": \"add_mcp_server\", \"caller\": \"remote\"}\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, nil, "policy", "test", dir)
	if r.code != exitFindings || !strings.Contains(r.stdout, "test_remote_may_add_servers: FAIL") {
		t.Fatalf("want exit 1 and the failing test\n%s", r)
	}
}

func TestPolicyTestBrokenPolicy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "bad.rego")
	if err := os.WriteFile(file, []byte("package voltmcp.tools\n\ndeny contains \"x\" if {\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, nil, "policy", "test", dir)
	if r.code != exitFailure || !strings.Contains(r.stderr, file+":") {
		t.Fatalf("want exit 3 naming %s\n%s", file, r)
	}
}

func TestPolicyEval(t *testing.T) {
	t.Parallel()
	in := filepath.Join(t.TempDir(), "call.json")
	doc := `{"server":{"id":"github","scope":"user","transport":"stdio","command":"npx","args":[]},"tool":{"name":"delete_repo"},"risk":"destructive","pin":{"state":"pinned","change":""},"surface":"serve"}`
	if err := os.WriteFile(in, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, nil, "policy", "eval", "tools", "--input", in, "--policy", "../../examples/policies")
	if r.code != exitOK {
		t.Fatalf("want exit 0\n%s", r)
	}
	var d struct {
		Exposed, Allowed bool
		Reasons          []struct{ Msg, Rule, File string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
		t.Fatalf("output is not the decision JSON: %v\n%s", err, r)
	}
	if !d.Exposed || d.Allowed || len(d.Reasons) != 1 || d.Reasons[0].Rule != "destructive_outside_ops" || !strings.HasSuffix(d.Reasons[0].File, "tools.rego") {
		t.Fatalf("decision %+v\n%s", d, r)
	}
}

func TestPolicyEvalExplainFromStdin(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	code := run(t.Context(), []string{"policy", "eval", "remote", "--input", "-", "--explain"},
		strings.NewReader(`{"command":"add_mcp_server","caller":"remote"}`), &out, &out, fakeEnv(t, nil))
	if code != exitOK || !strings.Contains(out.String(), `"allow": false`) || !strings.Contains(out.String(), "Trace:") || !strings.Contains(out.String(), "never remote-safe") {
		t.Fatalf("exit %d\n%s", code, out.String())
	}
}

func TestPolicyUsageErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"policy"},
		{"policy", "frobnicate"},
		{"policy", "eval", "tools"},
		{"policy", "eval", "nope", "--input", "-"},
		{"policy", "test", "--explain"},
	} {
		r := runCLI(t, nil, args...)
		if r.code != exitUsage {
			t.Errorf("%v: want exit 2\n%s", args, r)
		}
	}
	r := runCLI(t, nil, "policy", "eval", "tools", "--input", "-", "--policy", filepath.Join(t.TempDir(), "missing"))
	if r.code != exitFailure || !strings.Contains(r.stderr, "missing") {
		t.Errorf("missing policy dir: want exit 3 naming it\n%s", r)
	}
}
