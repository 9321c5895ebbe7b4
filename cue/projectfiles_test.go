//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package cue

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// policyProject writes a project whose .volt/mcp.json names a policy
// directory (policy/, with a nested directory, a test file and a README)
// and one policy file outside it, and returns its locations.
func policyProject(t *testing.T) Locations {
	t.Helper()
	loc := layers(t, map[Layer]string{
		LayerProject: `{"version":1,"settings":{"policies":["../policy","../extra.rego"]},"servers":{"p":{"command":"p"}}}`,
	})
	for name, body := range map[string]string{
		"policy/team.rego":          "package voltmcp.tools\n\ndeny contains \"team\" if input.risk == \"destructive\"\n",
		"policy/team_test.rego":     "package voltmcp.tools_test\n\ntest_x if true\n",
		"policy/README.md":          "notes\n",
		"policy/nested/deep.rego":   "package voltmcp.tools\n\ndeny contains \"deep\" if input.risk == \"write\"\n",
		"policy/nested/other.rego":  "package voltmcp.remote\n\ndeny contains \"x\" if false\n",
		"extra.rego":                "package voltmcp.media\n\ndeny contains \"big\" if input.item.bytes > 1\n",
		"elsewhere/swapped-in.rego": "package voltmcp.tools\n\ndeny contains \"other\" if false\n",
	} {
		p := filepath.Join(loc.Project, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return loc
}

// trustNow loads loc and returns the record `voltmcp trust` would write.
func trustNow(t *testing.T, loc Locations) (*Result, TrustRecord) {
	t.Helper()
	res, err := Load(context.Background(), loc, &Options{Schema: testSchema(), Approve: true})
	if err != nil {
		t.Fatal(err)
	}
	return res, NewTrustRecord(loc.Project, res.TrustFiles, time.Now())
}

// TestProjectTrustCoversNamedFiles trusts a project whose config names
// policy files, changes one thing of many kinds, and checks that each
// change needs trust again, naming the file, while a change to a file the
// policy loader does not read (a README, a *_test.rego) keeps it trusted:
// the files hashed are those loaded.
func TestProjectTrustCoversNamedFiles(t *testing.T) {
	write := func(p, s string) error { return os.WriteFile(p, []byte(s), 0o644) }
	for _, tc := range []struct {
		name    string
		change  func(root string) error
		trusted bool
		names   string // what the reason names
	}{
		{"edit a policy file", func(r string) error {
			return write(filepath.Join(r, "policy/team.rego"), "package voltmcp.tools\n\ndeny contains \"team\" if false\n")
		}, false, "team.rego changed"},
		{"add a policy file", func(r string) error {
			return write(filepath.Join(r, "policy/new.rego"), "package voltmcp.tools\n")
		}, false, "new.rego is new"},
		{"delete a policy file", func(r string) error { return os.Remove(filepath.Join(r, "policy/nested/deep.rego")) }, false, "deep.rego was removed"},
		{"edit a nested policy file", func(r string) error {
			return write(filepath.Join(r, "policy/nested/other.rego"), "package voltmcp.remote\n")
		}, false, "other.rego changed"},
		{"add a nested directory", func(r string) error {
			if err := os.MkdirAll(filepath.Join(r, "policy/a/b"), 0o755); err != nil {
				return err
			}
			return write(filepath.Join(r, "policy/a/b/c.rego"), "package voltmcp.tools\n")
		}, false, "c.rego is new"},
		{"edit a policy file named directly", func(r string) error {
			return write(filepath.Join(r, "extra.rego"), "package voltmcp.media\n")
		}, false, "extra.rego changed"},
		{"rename a file into a policy", func(r string) error {
			return os.Rename(filepath.Join(r, "policy/README.md"), filepath.Join(r, "policy/readme.rego"))
		}, false, "readme.rego is new"},
		{"swap a policy file for a link", func(r string) error {
			p := filepath.Join(r, "policy/team.rego")
			if err := os.Remove(p); err != nil {
				return err
			}
			return os.Symlink(filepath.Join(r, "elsewhere/swapped-in.rego"), p)
		}, false, "team.rego changed"},
		{"swap a policy file for a FIFO", func(r string) error {
			p := filepath.Join(r, "policy/team.rego")
			if err := os.Remove(p); err != nil {
				return err
			}
			return syscall.Mkfifo(p, 0o600)
		}, false, "not a regular file (fifo)"},
		{"swap the policy directory for a link", func(r string) error {
			if err := os.Rename(filepath.Join(r, "policy"), filepath.Join(r, "old")); err != nil {
				return err
			}
			// The policy loader walks no link, the named directory's
			// own included: a linked directory holds no policy.
			return os.Symlink(filepath.Join(r, "elsewhere"), filepath.Join(r, "policy"))
		}, false, "holds no policy"},
		{"remove the policy directory", func(r string) error { return os.RemoveAll(filepath.Join(r, "policy")) }, false, "no such file or directory"},
		{"grow a policy file past its limit", func(r string) error {
			return write(filepath.Join(r, "policy/team.rego"), "# "+strings.Repeat("x", MaxPolicyFileSize))
		}, false, fmt.Sprintf("the limit is %d", MaxPolicyFileSize)},
		{"edit a test file", func(r string) error {
			return write(filepath.Join(r, "policy/team_test.rego"), "package voltmcp.tools_test\n")
		}, true, ""},
		{"edit a file that is no policy", func(r string) error { return write(filepath.Join(r, "policy/README.md"), "other\n") }, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			loc := policyProject(t)
			first, rec := trustNow(t, loc)
			// The record names the config file and every policy file the
			// loader reads: 1 + team, deep, other, extra.
			if len(rec.Files) != 5 {
				t.Fatalf("record covers %d files, want 5: %+v", len(rec.Files), rec.Files)
			}
			if got := len(first.Config.Policies); got != 2 || len(first.Config.Policies[0].Files) != 3 {
				t.Fatalf("policies as loaded: %+v", first.Config.Policies)
			}
			opts := &Options{Schema: testSchema(), Surface: SurfaceServe, TrustRecords: []TrustRecord{rec}}
			if res, err := Load(context.Background(), loc, opts); err != nil || !res.Trust.Trusted {
				t.Fatalf("unchanged project not trusted: %+v %v", res.Trust, err)
			}
			if err := tc.change(loc.Project); err != nil {
				t.Fatal(err)
			}
			res, err := Load(context.Background(), loc, opts)
			if err != nil {
				t.Fatal(err)
			}
			if res.Trust.Trusted != tc.trusted {
				t.Fatalf("trusted = %v, want %v: %+v", res.Trust.Trusted, tc.trusted, res.Trust)
			}
			if tc.trusted {
				return
			}
			if !strings.Contains(res.Trust.Reason, tc.names) || !strings.Contains(res.Trust.Reason, "voltmcp trust") {
				t.Errorf("reason %q does not name %q and voltmcp trust", res.Trust.Reason, tc.names)
			}
			if len(res.Config.Servers) != 0 || len(res.Config.Policies) != 0 {
				t.Errorf("untrusted project still loads: %+v", res.Config)
			}
		})
	}
}

// TestConfigOnlyTrustRecord checks how a record of the config files alone
// (the format before trust covered the files they name) is read: it no
// longer trusts a project whose config names policy files, and still
// trusts one that names none.
func TestConfigOnlyTrustRecord(t *testing.T) {
	for _, names := range []bool{true, false} {
		loc := policyProject(t)
		if !names {
			loc = layers(t, map[Layer]string{LayerProject: `{"version":1,"servers":{"p":{"command":"p"}}}`})
		}
		res, _ := trustNow(t, loc)
		old := TrustRecord{Project: loc.Project, TrustedAt: time.Now()}
		for _, f := range res.Files {
			if f.Layer.IsProject() && f.Found {
				old.Files = append(old.Files, TrustedFile{Path: f.Path, SHA256: f.SHA256})
			}
		}
		res, err := Load(context.Background(), loc, &Options{Schema: testSchema(), TrustRecords: []TrustRecord{old}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Trust.Trusted != !names {
			t.Errorf("names policy files %v: trusted %v (%s)", names, res.Trust.Trusted, res.Trust.Reason)
		}
		if names && (!res.Trust.Changed || !strings.Contains(res.Trust.Reason, "team.rego is new") && !strings.Contains(res.Trust.Reason, "rego is new")) {
			t.Errorf("the reason does not name a policy file: %+v", res.Trust)
		}
	}
}

// TestProjectPolicyFilesAreRead checks what Load reads of a project's
// policies: the bytes hashed are kept for the policy set, every directory
// walked is a path to watch, and each bound is an error naming the file
// and the limit, which no record can match.
func TestProjectPolicyFilesAreRead(t *testing.T) {
	loc := policyProject(t)
	res, _ := trustNow(t, loc)
	src := res.Config.Policies[0]
	team := filepath.Join(loc.Project, "policy", "team.rego")
	i := slices.IndexFunc(src.Files, func(f PolicyFile) bool { return f.Path == team })
	if i < 0 || !strings.Contains(string(src.Files[i].Data), `"team"`) {
		t.Fatalf("team.rego not read: %+v", src.Files)
	}
	for _, p := range []string{filepath.Join(loc.Project, "policy"), filepath.Join(loc.Project, "policy", "nested"), team, loc.Path(LayerProjectShared), loc.Path(LayerProject)} {
		if !slices.Contains(res.TrustPaths, p) {
			t.Errorf("TrustPaths lacks %s: %v", p, res.TrustPaths)
		}
	}

	for name, tc := range map[string]struct {
		setup func(root string) error
		want  string
	}{
		"too many files": {func(r string) error {
			for i := range MaxProjectPolicyFiles {
				if err := os.WriteFile(filepath.Join(r, "policy", fmt.Sprintf("f%03d.rego", i)), []byte("package voltmcp.tools\n"), 0o644); err != nil {
					return err
				}
			}
			return nil
		}, fmt.Sprintf("more than %d policy files", MaxProjectPolicyFiles)},
		"too many bytes": {func(r string) error {
			for i := range 5 {
				if err := os.WriteFile(filepath.Join(r, "policy", fmt.Sprintf("big%d.rego", i)), []byte("# "+strings.Repeat("x", MaxPolicyFileSize-10)), 0o644); err != nil {
					return err
				}
			}
			return nil
		}, "16 MiB"},
		"too many entries": {func(r string) error {
			for i := range MaxProjectPolicyEntries / 100 {
				d := filepath.Join(r, "policy", "tree", fmt.Sprintf("d%03d", i))
				if err := os.MkdirAll(d, 0o755); err != nil {
					return err
				}
				for j := range 100 {
					if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("n%02d.md", j)), nil, 0o644); err != nil {
						return err
					}
				}
			}
			return nil
		}, fmt.Sprintf("more than %d entries", MaxProjectPolicyEntries)},
		"a FIFO": {func(r string) error { return syscall.Mkfifo(filepath.Join(r, "policy", "nested", "pipe.rego"), 0o600) }, "pipe.rego: not a regular file (fifo)"},
		"only tests": {func(r string) error {
			for _, f := range []string{"team.rego", "nested/deep.rego", "nested/other.rego"} {
				if err := os.Remove(filepath.Join(r, "policy", f)); err != nil {
					return err
				}
			}
			return nil
		}, "holds no policy"},
	} {
		t.Run(name, func(t *testing.T) {
			loc := policyProject(t)
			if err := tc.setup(loc.Project); err != nil {
				t.Fatal(err)
			}
			res, rec := trustNow(t, loc)
			src := res.Config.Policies[0]
			if src.Err == nil || !strings.Contains(src.Err.Error(), tc.want) || len(src.Files) != 0 {
				t.Fatalf("error %v, %d files; want one with %q", src.Err, len(src.Files), tc.want)
			}
			// No record can cover it: even one made now does not match.
			res, err := Load(context.Background(), loc, &Options{Schema: testSchema(), TrustRecords: []TrustRecord{rec}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Trust.Trusted || !strings.Contains(res.Trust.Reason, "cannot be read") {
				t.Errorf("trusted over an unreadable policy: %+v", res.Trust)
			}
		})
	}
}
