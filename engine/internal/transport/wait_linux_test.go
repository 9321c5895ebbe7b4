//go:build linux

package transport

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/internal/testwait"
)

// TestWaitExit checks that waitExit returns when the child exits and not
// before, and that it leaves the child for Wait to reap with its status.
func TestWaitExit(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = withMode(nil, "cat")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan bool, 1)
	go func() { done <- waitExit(cmd.Process.Pid) }()
	select {
	case <-done:
		t.Fatal("waitExit returned while the child was running")
		// testwait: a negative wait, waitExit must not return yet
	case <-time.After(200 * time.Millisecond):
	}
	// The child ends when its stdin closes.
	stdin.Close()
	select {
	case ok := <-done:
		if !ok {
			t.Fatal("waitExit could not wait in the poller")
		}
	case <-time.After(testwait.Patience):
		t.Fatal("waitExit did not return after the child exited")
	}
	// An exited child: at once, again.
	if !waitExit(cmd.Process.Pid) {
		t.Fatal("waitExit on an exited child reported false")
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("Wait after waitExit: %v", err)
	}
	if !cmd.ProcessState.Exited() {
		t.Fatalf("the child was not reaped by Wait: %v", cmd.ProcessState)
	}
}

// TestWaitExitWithoutAProcess checks that waitExit reports false, waiting
// for nothing, when there is no such process to wait for.
func TestWaitExitWithoutAProcess(t *testing.T) {
	if waitExit(-1) {
		t.Fatal("waitExit(-1) reported true")
	}
}
