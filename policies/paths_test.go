package policies

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestPathsNamesWhatALoadReads: Paths names each path given, the
// directories the walk enters and the policy files it reads, and not the
// files a load skips (tests, other files), for directories, a file named
// directly and a path that does not exist.
func TestPathsNamesWhatALoadReads(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"team.rego":          "package voltmcp.tools\n",
		"team_test.rego":     "package voltmcp.tools\n",
		"notes.md":           "x\n",
		"nested/deep.rego":   "package voltmcp.tools\n",
		"nested/more/x.rego": "package voltmcp.tools\n",
		"other/only.rego":    "package voltmcp.tools\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	j := func(s ...string) string { return filepath.Join(append([]string{dir}, s...)...) }
	missing := j("missing")
	for _, tc := range []struct {
		name  string
		paths []string
		want  []string
	}{
		{"directory", []string{j("nested")}, []string{j("nested"), j("nested", "more"), j("nested", "deep.rego"), j("nested", "more", "x.rego")}},
		{"file", []string{j("other", "only.rego")}, []string{j("other", "only.rego")}},
		{"missing", []string{missing}, []string{missing}},
		{"root", []string{dir}, []string{dir, j("nested"), j("nested", "more"), j("other"), j("nested", "deep.rego"), j("nested", "more", "x.rego"), j("other", "only.rego"), j("team.rego")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Paths(tc.paths)
			slices.Sort(got)
			want := slices.Clone(tc.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("Paths(%v) = %v, want %v", tc.paths, got, want)
			}
		})
	}
}
