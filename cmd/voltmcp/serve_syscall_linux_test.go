//go:build linux

package main

import (
	"context"
	"github.com/voltmcp/voltmcp/internal/testwait"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServeWaitsInNoSystemCall checks that an idle `voltmcp serve`, with
// an upstream running, has no goroutine waiting in a blocking system
// call: its reads of the agent and of the upstream, and its wait for the
// upstream's exit, all wait in Go's poller. With Go 1.26 and 1.27 a goroutine
// entering a blocking call as a garbage collection starts can stall the
// whole process for up to a minute (engine/pollio). The test makes serve
// print its goroutines (SIGQUIT) and fails on any in the "syscall" state
// but the runtime's own signal loop.
func TestServeWaitsInNoSystemCall(t *testing.T) {
	home, project := t.TempDir(), benchProject(t)
	cmd := cliCommand("serve", "--home", home, "--project", project, "--approve")
	cmd.Env = append(cmd.Env, "GOTRACEBACK=all")
	// A file, which serve writes to directly, for the goroutine dump.
	stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	cmd.Stderr = stderr
	cs := connectCommand(t, cmd, "2025-11-25")
	ctx, cancel := context.WithDeadline(context.Background(), testwait.Deadline(t))
	defer cancel()
	callEcho(ctx, t, cs, "hello")
	// Let the call's audit records be written and the log's lock go,
	// the only system calls serve makes after an answer.
	time.Sleep(500 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGQUIT); err != nil {
		t.Fatal(err)
	}
	_ = cs.Wait()
	waitExited(ctx, t, cmd)
	out, err := os.ReadFile(stderr.Name())
	if err != nil {
		t.Fatal(err)
	}
	dump := string(out)
	goroutines := strings.Split(dump, "\n\n")
	var readers int
	for _, g := range goroutines {
		g = strings.TrimSpace(g)
		if strings.Contains(g, "line.(*Conn).read") {
			readers++
		}
		if strings.HasPrefix(g, "goroutine ") && strings.Contains(strings.SplitN(g, "\n", 2)[0], "[syscall") &&
			!strings.Contains(g, "os/signal.signal_recv") {
			t.Errorf("a goroutine of the idle serve waits in a system call:\n%s", g)
		}
	}
	// The agent's reader and the upstream's: the dump is the real one.
	if readers < 2 {
		t.Fatalf("the dump shows %d connection readers, want 2; stderr:\n%s", readers, dump)
	}
}
