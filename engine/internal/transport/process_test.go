package transport

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/internal/testwait"
)

// TestProcessEchoesAndCloses writes a line to a child and reads it back;
// Close ends it by closing its stdin, and it exits 0.
func TestProcessEchoesAndCloses(t *testing.T) {
	p := startChild(t, "cat", testwait.Patience)
	if _, err := p.Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(p.Reader()).ReadString('\n')
	if err != nil || line != "hello\n" {
		t.Fatalf("read %q, %v", line, err)
	}
	if _, ok := p.ExitStatus(0); ok {
		t.Fatal("ExitStatus says the running child exited")
	}
	// The exit status below says whether the child exited when its stdin
	// closed, or was killed after the grace period.
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if how, ok := p.ExitStatus(time.Second); !ok || how != "exit status 0" {
		t.Errorf("exit status %q, %v", how, ok)
	}
	if err := p.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}

// TestProcessExitStatus reports a status of the child's own.
func TestProcessExitStatus(t *testing.T) {
	p := startChild(t, "exit3", time.Second)
	if how, ok := p.ExitStatus(testwait.Patience); !ok || how != "exit status 3" {
		t.Errorf("exit status %q, %v", how, ok)
	}
	if err := p.Close(); err != nil {
		t.Errorf("Close of an exited child: %v", err)
	}
}

// TestProcessStopEscalates stops a child that ignores the end of its
// stdin and SIGTERM: after two graces, SIGKILL ends it.
func TestProcessStopEscalates(t *testing.T) {
	const grace = 200 * time.Millisecond
	p := startChild(t, "stubborn", grace)
	time.Sleep(200 * time.Millisecond) // let it ignore SIGTERM
	began := time.Now()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(began); d < 2*grace {
		t.Errorf("Close took %s, less than two graces", d)
	}
	if how, ok := p.ExitStatus(time.Second); !ok || how != "signal SIGKILL" {
		t.Errorf("exit status %q, %v", how, ok)
	}
}

// TestStartFailsNamingTheProgram: a program that cannot start is an
// error naming it.
func TestStartFailsNamingTheProgram(t *testing.T) {
	_, err := Start(Command{Path: filepath.Join(t.TempDir(), "missing-server")})
	if err == nil || !strings.Contains(err.Error(), "start missing-server") {
		t.Fatalf("error %v", err)
	}
}

func TestResolveCommand(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, mode := range map[string]os.FileMode{"server": 0o755, "plain": 0o644} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "local"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A relative PATH entry is never searched, even when the program is
	// there; the last PATH entry of the environment is the one.
	env := []string{"PATH=/nonexistent", "PATH=.:" + bin}
	for _, c := range []struct {
		command, want string
		ok            bool
	}{
		{"server", filepath.Join(bin, "server"), true},
		{"plain", "", false}, // not executable
		{"local", "", false}, // only in the working directory
		{"./local", filepath.Join(dir, "local"), true},
		{"sub/x", filepath.Join(dir, "sub/x"), true}, // a path is not looked up
		{"/abs/x", "/abs/x", true},
	} {
		got, err := ResolveCommand(c.command, dir, env)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("%s: %q, %v; want %q (ok %v)", c.command, got, err, c.want, c.ok)
		}
	}
	if _, err := ResolveCommand("server", dir, nil); err == nil || !strings.Contains(err.Error(), `command "server" not found in PATH`) {
		t.Errorf("without PATH: %v", err)
	}
}
