//go:build linux

package engine

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/safefile"
)

// TestStampSetSeesContentNotTouches changes a watched path in each way
// an editor, a user or an attacker may: a look reports a change when
// what the path holds or is changed, and none for a touch or a rewrite
// with the same bytes (the hash taken when the stamp moved).
func TestStampSetSeesContentNotTouches(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, p, dir string)
		want   bool
	}{
		{"nothing", func(*testing.T, string, string) {}, false},
		{"touch", func(t *testing.T, p, _ string) {
			later := time.Now().Add(time.Hour)
			if err := os.Chtimes(p, later, later); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"same bytes saved by rename", func(t *testing.T, p, _ string) {
			if err := safefile.WriteFile(p, []byte("one"), nil); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"edited in place, same size", func(t *testing.T, p, _ string) {
			if err := os.WriteFile(p, []byte("two"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"saved by rename", func(t *testing.T, p, _ string) {
			if err := safefile.WriteFile(p, []byte("three"), nil); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"deleted", func(t *testing.T, p, _ string) {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"swapped for a FIFO", func(t *testing.T, p, _ string) {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"swapped for a link to other bytes", func(t *testing.T, p, dir string) {
			other := filepath.Join(dir, "other")
			if err := os.WriteFile(other, []byte("other"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(other, p); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"created where none was", func(t *testing.T, _, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "later.json"), []byte("{}"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"a file added to a watched directory", func(t *testing.T, _, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "sub", "new.rego"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			p := filepath.Join(dir, "mcp.json")
			if err := os.WriteFile(p, []byte("one"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			set := newStampSet([]string{p, filepath.Join(dir, "later.json"), filepath.Join(dir, "sub")})
			if !set.look() {
				t.Fatal("the first look reports no change")
			}
			if set.look() {
				t.Fatal("a second look with nothing changed reports a change")
			}
			tc.change(t, p, dir)
			if got := set.look(); got != tc.want {
				t.Fatalf("look after the change = %v, want %v", got, tc.want)
			}
			if set.look() {
				t.Fatal("a look after the change was seen reports it again")
			}
			// A set made with the same paths knows what this one knows.
			if set.with(set.paths).look() {
				t.Fatal("a set carried over reports a change")
			}
		})
	}
}
