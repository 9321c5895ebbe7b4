package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voltmcp/voltmcp/cue"
)

// TestVetEmptyPolicyDirectory configures a settings.policies directory
// with no policy in it: vet reports it as an error at that entry, naming
// the directory, as the gateway refuses every decision until it holds
// one.
func TestVetEmptyPolicyDirectory(t *testing.T) {
	t.Parallel()
	home := vetHome(t, `{"policies": ["policies", "only-tests"]}`)
	agent := filepath.Join(home, ".volt", "agent")
	for _, dir := range []string{"policies", "only-tests"} {
		if err := os.MkdirAll(filepath.Join(agent, dir), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(agent, "only-tests", "team_test.rego"), []byte("package voltmcp.tools_test\n\ntest_x if true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, msgs := vetDiagnostics(t, home, cue.CodePolicyError)
	if r.code != exitFindings || len(msgs) != 2 {
		t.Fatalf("want two policy errors, got %q\n%s", msgs, r)
	}
	for i, dir := range []string{"policies", "only-tests"} {
		want := "settings.policies[" + string(rune('0'+i)) + "]: policy " + filepath.Join(agent, dir) + " does not load: policy directory " + filepath.Join(agent, dir) + " holds no policy"
		if !strings.HasPrefix(msgs[i], want) {
			t.Errorf("entry %d: %q\nwant it to start %q", i, msgs[i], want)
		}
	}
}
