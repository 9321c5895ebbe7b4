package policies

import (
	"context"
	"testing"
)

// TestDefaultRego runs the default policies' Rego tests through OPA's
// tester, so `go test` fails when a built-in rule breaks.
func TestDefaultRego(t *testing.T) {
	t.Parallel()
	res, err := RunTests(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tests) == 0 {
		t.Fatal("no Rego tests ran")
	}
	for _, r := range res.Tests {
		if !r.Passed() {
			t.Errorf("%s.%s (%s:%d): %s", r.Package, r.Name, r.File, r.Line, r.Failure())
		}
	}
}
