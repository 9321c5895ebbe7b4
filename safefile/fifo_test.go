//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package safefile_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/internal/testwait"
	"github.com/voltmcp/voltmcp/safefile"
)

// mustNotBlock runs f and fails the test if it has not returned after a
// generous while: a blocking open never returns at all.
func mustNotBlock(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(testwait.Patience):
		t.Fatalf("%s blocked", what)
	}
}

func TestReadFileRefusesNonRegularWithoutBlocking(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	viaLink := filepath.Join(dir, ".mcp.json")
	if err := os.Symlink(fifo, viaLink); err != nil {
		t.Fatal(err)
	}
	stdin := filepath.Join(dir, "stdin.json")
	if err := os.Symlink("/dev/stdin", stdin); err != nil {
		t.Fatal(err)
	}
	// /dev/stdin of the test is whatever go test gave it; make it a pipe
	// with a writer that never writes, the case that hangs a blocking
	// read.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	pipeLink := filepath.Join(dir, "pipe.json")
	if err := os.Symlink(fmt.Sprintf("/proc/self/fd/%d", r.Fd()), pipeLink); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ path, kind string }{
		{fifo, "fifo"}, {viaLink, "fifo"}, {dir, "directory"}, {"/dev/null", "device"},
	}
	if runtime.GOOS == "linux" {
		cases = append(cases, struct{ path, kind string }{pipeLink, "fifo"})
	}
	for _, c := range cases {
		mustNotBlock(t, c.path, func() {
			_, err := safefile.ReadFile(c.path, nil)
			var nr *safefile.NotRegularError
			if !errors.As(err, &nr) || nr.Kind != c.kind || !errors.Is(err, safefile.ErrNotRegular) {
				t.Errorf("ReadFile(%s) = %v, want not a regular file (%s)", c.path, err, c.kind)
				return
			}
			if want := c.path + ": not a regular file (" + c.kind + ")"; err.Error() != want {
				t.Errorf("error %q, want %q", err, want)
			}
		})
	}
	mustNotBlock(t, stdin, func() {
		if _, err := safefile.ReadFile(stdin, nil); !errors.Is(err, safefile.ErrNotRegular) && !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("ReadFile(link to /dev/stdin) = %v, want not a regular file", err)
		}
	})
}
