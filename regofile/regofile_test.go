package regofile_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/voltmcp/voltmcp/regofile"
)

// tree writes files (name to content; a name ending in "/" is an empty
// directory) under a new directory and returns it.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, name)
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestRead reads files and directories of several shapes, with and
// without tests and within and past each limit: it checks which files are
// policies, which directories were walked, and that every error names the
// file or directory and the limit.
func TestRead(t *testing.T) {
	t.Parallel()
	team := map[string]string{
		"team.rego":         "package voltmcp.tools\n",
		"team_test.rego":    "package voltmcp.tools_test\n",
		"README.md":         "not a policy\n",
		"nested/deep.rego":  "package voltmcp.remote\n",
		"nested/notes.txt":  "not a policy\n",
		"nested/empty/":     "",
		"other/linked.rego": "package voltmcp.media\n",
	}
	for _, tc := range []struct {
		name  string
		files map[string]string
		setup func(root string) error // more of the tree, when set
		path  string                  // under root; "" is root
		opts  *regofile.Options
		want  []string // files read, relative to root
		dirs  []string // directories walked, relative to root
		err   string   // the error must contain it, with root for {root}
	}{
		{name: "a directory, recursively, without tests", files: team,
			want: []string{"nested/deep.rego", "other/linked.rego", "team.rego"}, dirs: []string{"", "nested", "nested/empty", "other"}},
		{name: "a file named directly, whatever its name", files: team, path: "nested/notes.txt",
			want: []string{"nested/notes.txt"}},
		{name: "a test file named directly", files: team, path: "team_test.rego",
			want: []string{"team_test.rego"}},
		{name: "a directory with tests", files: team, opts: &regofile.Options{Tests: true},
			want: []string{"nested/deep.rego", "other/linked.rego", "team.rego", "team_test.rego"}, dirs: []string{"", "nested", "nested/empty", "other"}},
		{name: "a link to a directory is not followed", files: team, path: "nested",
			setup: func(r string) error { return os.Symlink(filepath.Join(r, "other"), filepath.Join(r, "nested", "link")) },
			want:  []string{"nested/deep.rego"}, dirs: []string{"nested", "nested/empty"}},
		{name: "only tests", files: map[string]string{"a_test.rego": "package a_test\n"},
			err: "policy directory {root} holds no policy: no .rego file other than *_test.rego"},
		{name: "only tests, with tests", files: map[string]string{"a_test.rego": "package a_test\n"}, opts: &regofile.Options{Tests: true},
			want: []string{"a_test.rego"}, dirs: []string{""}},
		{name: "no .rego file, with tests", files: map[string]string{"a.md": ""}, opts: &regofile.Options{Tests: true},
			err: "policy directory {root} holds no .rego file"},
		{name: "a missing path", files: team, path: "gone",
			err: "policy path {root}/gone: no such file or directory"},
		{name: "a FIFO named .rego", files: team, path: "nested",
			setup: func(r string) error { return syscall.Mkfifo(filepath.Join(r, "nested", "pipe.rego"), 0o600) },
			err:   "policy file {root}/nested/pipe.rego: not a regular file (fifo)"},
		{name: "a FIFO named directly", files: team, path: "pipe",
			setup: func(r string) error { return syscall.Mkfifo(filepath.Join(r, "pipe"), 0o600) },
			err:   "policy file {root}/pipe: not a regular file (fifo)"},
		{name: "a file over the size limit", files: map[string]string{"big.rego": strings.Repeat("#", 11)}, opts: &regofile.Options{MaxFileSize: 10},
			err: "policy file {root}/big.rego: 11 bytes; the limit is 10"},
		{name: "more files than the limit", files: map[string]string{"a.rego": "", "b.rego": ""}, opts: &regofile.Options{MaxFiles: 1},
			err: "policy file {root}/b.rego: more than 1 policy files; the limit is 1"},
		{name: "files at the limit", files: map[string]string{"a.rego": "", "b.rego": ""}, opts: &regofile.Options{MaxFiles: 2},
			want: []string{"a.rego", "b.rego"}, dirs: []string{""}},
		{name: "more bytes than the limit", files: map[string]string{"a.rego": "123", "b.rego": "456"}, opts: &regofile.Options{MaxBytes: 5},
			err: "policy file {root}/b.rego: the policy files pass 5 bytes in all; that is the limit"},
		{name: "more bytes than a MiB limit", files: map[string]string{"a.rego": strings.Repeat("#", 1<<20), "b.rego": "#"}, opts: &regofile.Options{MaxBytes: 1 << 20},
			err: "the policy files pass 1048576 bytes (1 MiB) in all"},
		{name: "more entries than the limit", files: map[string]string{"a.rego": "", "b/c.md": "", "b/d.md": ""}, opts: &regofile.Options{MaxEntries: 3},
			err: "policy directory {root}: the walk met more than 3 entries at {root}/b/c.md; that is the limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := tree(t, tc.files)
			if tc.setup != nil {
				if err := tc.setup(root); err != nil {
					t.Fatal(err)
				}
			}
			files, dirs, err := regofile.Read(filepath.Join(root, tc.path), tc.opts)
			if tc.err != "" {
				want := strings.ReplaceAll(tc.err, "{root}", root)
				if err == nil || !strings.Contains(err.Error(), want) || files != nil || dirs != nil {
					t.Fatalf("Read = %d files, %v, %v; want the error %q", len(files), dirs, err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range files {
				rel, _ := filepath.Rel(root, f.Path)
				got = append(got, filepath.ToSlash(rel))
				sum := sha256.Sum256(f.Data)
				if string(f.Data) != tc.files[filepath.ToSlash(rel)] || f.SHA256 != hex.EncodeToString(sum[:]) {
					t.Errorf("%s: data %q, sha256 %s", rel, f.Data, f.SHA256)
				}
			}
			var gotDirs []string
			for _, d := range dirs {
				rel, _ := filepath.Rel(root, d)
				if rel == "." {
					rel = ""
				}
				gotDirs = append(gotDirs, filepath.ToSlash(rel))
			}
			if !slices.Equal(got, tc.want) || !slices.Equal(gotDirs, tc.dirs) {
				t.Errorf("Read = files %q, dirs %q; want %q, %q", got, gotDirs, tc.want, tc.dirs)
			}
		})
	}
}

// TestReaderSharesItsBudget reads two directories with one Reader: the
// second passes the limit the two share, though each alone is within it.
func TestReaderSharesItsBudget(t *testing.T) {
	t.Parallel()
	a := tree(t, map[string]string{"a.rego": "", "b.rego": ""})
	b := tree(t, map[string]string{"c.rego": "", "d.rego": ""})
	r := regofile.NewReader(&regofile.Options{MaxFiles: 3})
	if _, _, err := r.Read(a); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Read(b); err == nil || !strings.Contains(err.Error(), filepath.Join(b, "d.rego")+": more than 3 policy files") {
		t.Fatalf("the second directory: %v; want the file limit at d.rego", err)
	}
	for _, p := range []string{a, b} {
		if _, _, err := regofile.Read(p, &regofile.Options{MaxFiles: 3}); err != nil {
			t.Errorf("%s alone: %v", p, err)
		}
	}
}

func TestIsPolicy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		plain, test bool
	}{
		{"team.rego", true, true},
		{"team_test.rego", false, true},
		{"team.rego.bak", false, false},
		{"README.md", false, false},
		{".rego", true, true},
	} {
		if got := regofile.IsPolicy(tc.name, false); got != tc.plain {
			t.Errorf("IsPolicy(%q, false) = %v", tc.name, got)
		}
		if got := regofile.IsPolicy(tc.name, true); got != tc.test {
			t.Errorf("IsPolicy(%q, true) = %v", tc.name, got)
		}
	}
}

func ExampleRead() {
	dir, err := os.MkdirTemp("", "policy")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	for name, content := range map[string]string{
		"team.rego":        "package voltmcp.tools\n",
		"team_test.rego":   "package voltmcp.tools_test\n",
		"nested/deep.rego": "package voltmcp.remote\n",
		"README.md":        "# Our policies\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			panic(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			panic(err)
		}
	}
	for _, tests := range []bool{false, true} {
		files, dirs, err := regofile.Read(dir, &regofile.Options{Tests: tests})
		if err != nil {
			panic(err)
		}
		fmt.Printf("tests %v: %d directories walked\n", tests, len(dirs))
		for _, f := range files {
			rel, _ := filepath.Rel(dir, f.Path)
			fmt.Printf("  %s (%d bytes)\n", filepath.ToSlash(rel), len(f.Data))
		}
	}
	// Output:
	// tests false: 2 directories walked
	//   nested/deep.rego (23 bytes)
	//   team.rego (22 bytes)
	// tests true: 2 directories walked
	//   nested/deep.rego (23 bytes)
	//   team.rego (22 bytes)
	//   team_test.rego (27 bytes)
}
