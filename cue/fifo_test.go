//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package cue

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/internal/testwait"
)

// TestLoadRefusesNonRegularLayers plants a FIFO (with no writer, which a
// blocking open waits on for ever) and a link to /dev/stdin as project
// layers, and checks that Load returns at once with each refused by name.
func TestLoadRefusesNonRegularLayers(t *testing.T) {
	home, project := t.TempDir(), t.TempDir()
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(fifo, filepath.Join(project, ".mcp.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(project, ".volt"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(project, ".volt", "mcp.json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, ".config", "mcp"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/stdin", filepath.Join(home, ".config", "mcp", "mcp.json")); err != nil {
		t.Fatal(err)
	}
	// Make the test's stdin a pipe whose writer never writes, as an agent's
	// is: a blocking read of /dev/stdin waits for ever.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	saved, err := syscall.Dup(0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Dup2(int(r.Fd()), 0); err != nil {
		t.Fatal(err)
	}
	defer func() { syscall.Dup2(saved, 0); syscall.Close(saved); r.Close() }()

	type out struct {
		res *Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := Load(context.Background(), Locations{Home: home, Project: project}, &Options{Approve: true, CheckUntrusted: true})
		done <- out{res, err}
	}()
	var o out
	select {
	case o = <-done:
	case <-time.After(testwait.Patience):
		t.Fatal("Load blocked on a FIFO or /dev/stdin")
	}
	if o.err != nil {
		t.Fatal(o.err)
	}
	want := map[string]bool{
		filepath.Join(project, ".mcp.json"):               false,
		filepath.Join(project, ".volt", "mcp.json"):       false,
		filepath.Join(home, ".config", "mcp", "mcp.json"): false,
	}
	for _, d := range o.res.Diagnostics {
		if _, ok := want[d.Position.File]; ok && d.Code == CodeFileUnreadable && strings.HasPrefix(d.Message, "not a regular file (fifo)") {
			want[d.Position.File] = true
		}
	}
	for f, seen := range want {
		if !seen {
			t.Errorf("no file-unreadable \"not a regular file (fifo)\" for %s; diagnostics:\n%v", f, o.res.Diagnostics)
		}
	}
}
