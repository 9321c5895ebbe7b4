//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/cue"
)

// TestServingEngineNoticesTrustChanges starts a serving Engine on a
// project trusted with a trust record, changes one thing of many kinds
// on disk, and checks that the Engine refuses the project's servers
// (ErrNotLoaded, naming what changed) when the change touches what trust
// covers, and keeps them when it does not.
func TestServingEngineNoticesTrustChanges(t *testing.T) {
	t.Parallel()
	write := func(p, s string) error { return os.WriteFile(p, []byte(s), 0o644) }
	for _, tc := range []struct {
		name   string
		change func(root, store string) error
		want   string // "" when the project stays trusted
	}{
		{"untrust", func(root, store string) error { _, err := cue.RemoveTrustRecord(store, root); return err }, "no longer trusted"},
		{"trust store removed", func(root, store string) error { return os.Remove(store) }, "no longer trusted"},
		{"config edited", func(root, _ string) error {
			return write(filepath.Join(root, ".volt", "mcp.json"), `{"version":1,"settings":{"policies":["../policy"]},"x-note":"edited"}`)
		}, "mcp.json changed"},
		{"second config file added", func(root, _ string) error {
			return write(filepath.Join(root, ".mcp.json"), `{"mcpServers":{}}`)
		}, ".mcp.json is new"},
		{"policy edited", func(root, _ string) error {
			return write(filepath.Join(root, "policy", "team.rego"), "package voltmcp.tools\n")
		}, "team.rego changed"},
		{"policy added in a nested directory", func(root, _ string) error {
			return write(filepath.Join(root, "policy", "nested", "more.rego"), "package voltmcp.tools\n")
		}, "more.rego is new"},
		{"policy swapped for a link", func(root, _ string) error {
			p := filepath.Join(root, "policy", "team.rego")
			other := filepath.Join(root, "other.rego")
			if err := write(other, "package voltmcp.tools\n\ndeny contains \"o\" if false\n"); err != nil {
				return err
			}
			if err := os.Remove(p); err != nil {
				return err
			}
			return os.Symlink(other, p)
		}, "team.rego changed"},
		{"policy swapped for a FIFO", func(root, _ string) error {
			p := filepath.Join(root, "policy", "nested", "deep.rego")
			if err := os.Remove(p); err != nil {
				return err
			}
			return syscall.Mkfifo(p, 0o600)
		}, "not a regular file (fifo)"},
		{"a file that is no policy", func(root, _ string) error {
			return write(filepath.Join(root, "policy", "nested", "notes.md"), "x\n")
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := workspace(t, map[string]server{}, map[string]any{"policies": []string{"../policy"}})
			root := opts.Project
			for name, body := range map[string]string{
				"policy/team.rego":        "package voltmcp.tools\n\ndeny contains \"team\" if input.risk == \"destructive\"\n",
				"policy/nested/deep.rego": "package voltmcp.remote\n\ndeny contains \"deep\" if false\n",
			} {
				p := filepath.Join(root, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := write(p, body); err != nil {
					t.Fatal(err)
				}
			}
			opts.Approve, opts.Surface, opts.AgentDir = false, cue.SurfaceServe, filepath.Join(opts.Home, ".volt", "agent")
			store := filepath.Join(opts.AgentDir, cue.TrustStoreFile)
			ctx := context.Background()
			res, err := cue.Load(ctx, cue.Locations{Home: opts.Home, Project: root}, &cue.Options{Approve: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := cue.SaveTrustRecord(store, cue.NewTrustRecord(root, res.TrustFiles, time.Now())); err != nil {
				t.Fatal(err)
			}
			e := start(t, opts)
			check := func() error {
				// Look now, not after trustRecheck.
				e.ptrust.Load().mu.Lock()
				e.ptrust.Load().checked = time.Time{}
				e.ptrust.Load().mu.Unlock()
				return e.projectTrustError(ctx)
			}
			if e.ptrust.Load() == nil {
				t.Fatal("a serving engine on a trusted project watches nothing")
			}
			if err := check(); err != nil {
				t.Fatalf("before the change: %v", err)
			}
			if err := tc.change(root, store); err != nil {
				t.Fatal(err)
			}
			err = check()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused after a change trust does not cover: %v", err)
			case tc.want != "" && (err == nil || !errors.Is(err, ErrNotLoaded) || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("after the change: %v; want ErrNotLoaded with %q", err, tc.want)
			}
		})
	}
}
