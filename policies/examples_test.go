package policies

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// examplesDir is the example organization policy set.
const examplesDir = "../examples/policies"

func TestExamplePolicies(t *testing.T) {
	t.Parallel()
	res, err := RunTests(context.Background(), &TestOptions{Dirs: []string{examplesDir}})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, r := range res.Tests {
		if strings.HasPrefix(r.File, examplesDir) {
			n++
		}
		if r.Failed() {
			t.Errorf("%s.%s (%s:%d): %s", r.Package, r.Name, r.File, r.Line, r.Failure())
		}
	}
	if n == 0 {
		t.Fatal("no example tests ran")
	}
	// The examples also load for real.
	p := mustLoad(t, &Options{Dirs: []string{examplesDir}})
	in := githubTool()
	in.Risk = "destructive"
	if d := p.Tools(context.Background(), in); d.Allowed || len(d.Reasons) != 1 || d.Reasons[0].Rule != "destructive_outside_ops" {
		t.Fatalf("got %+v", d)
	}
}

func TestResultsWriteLikeOPA(t *testing.T) {
	t.Parallel()
	dir, _ := writePolicy(t, "x_test.rego", "package x_test\n\ntest_passes if true\n\ntest_fails if false\n")
	res, err := RunTests(context.Background(), &TestOptions{Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed() != 1 {
		t.Fatalf("want 1 failure, got %d", res.Failed())
	}
	var quiet, verbose bytes.Buffer
	if err := res.Write(&quiet, false); err != nil {
		t.Fatal(err)
	}
	if err := res.Write(&verbose, true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(quiet.String(), "data.x_test.test_fails: FAIL") || !strings.Contains(quiet.String(), "FAIL: 1/") {
		t.Errorf("quiet output:\n%s", quiet.String())
	}
	if strings.Contains(quiet.String(), "test_passes") {
		t.Errorf("quiet output lists passing tests:\n%s", quiet.String())
	}
	if !strings.Contains(verbose.String(), "data.x_test.test_passes: PASS") {
		t.Errorf("verbose output:\n%s", verbose.String())
	}
}

func TestRunTestsRejectsBadPolicies(t *testing.T) {
	t.Parallel()
	dir, file := writePolicy(t, "bad.rego", "package voltmcp.tools\n\ndecision := {}\n")
	if _, err := RunTests(context.Background(), &TestOptions{Dirs: []string{dir}}); err == nil || !strings.Contains(err.Error(), file+":3") {
		t.Fatalf("want an error naming %s:3, got %v", file, err)
	}
}
