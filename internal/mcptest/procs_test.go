//go:build unix

package mcptest_test

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/internal/mcptest"
)

func TestSetsidGrandchild(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	cs, cmd := connectStdio(t, mcptest.ModeSetsidGrandchild, nil, mcptest.EnvPIDFile+"="+pidFile)
	exerciseBehave(t, cs, mcptest.ModeSetsidGrandchild, true)
	parent := mcptest.WaitPIDFile(t, pidFile+mcptest.ParentSuffix)
	held := mcptest.WaitPIDFile(t, pidFile)
	orphan := mcptest.WaitPIDFile(t, pidFile+mcptest.OrphanSuffix)
	if parent != cmd.Process.Pid {
		t.Errorf("parent PID file says %d, the child is %d", parent, cmd.Process.Pid)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(held, syscall.SIGKILL)
		_ = syscall.Kill(orphan, syscall.SIGKILL)
	})
	// setsid makes a process the leader of a new session and of a new
	// process group in it.
	pg, err := syscall.Getpgid(parent)
	if err != nil {
		t.Fatal(err)
	}
	for _, pid := range []int{held, orphan} {
		if g, err := syscall.Getpgid(pid); err != nil || g != pid || g == pg {
			t.Errorf("process %d: process group %d (%v), want one of its own", pid, g, err)
		}
	}
	// SIGKILL to the server's group stops the server only.
	if err := syscall.Kill(-parent, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, parent)
	time.Sleep(100 * time.Millisecond)
	for _, pid := range []int{held, orphan} {
		if !mcptest.Alive(pid) {
			t.Errorf("grandchild %d did not survive its server's group", pid)
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	waitGone(t, held, orphan)
}

func TestSegvCall(t *testing.T) {
	cs, cmd := connectStdio(t, mcptest.ModeSegvCall, nil)
	exerciseBehave(t, cs, mcptest.ModeSegvCall, true)
	if _, err := cs.CallTool(ctx(t), &mcp.CallToolParams{Name: mcptest.ToolSegv, Arguments: map[string]any{}}); err == nil {
		t.Fatal("the segv call answered")
	}
	_ = cs.Close()
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGSEGV {
		t.Errorf("the server ended with %v, want SIGSEGV", cmd.ProcessState)
	}
}

func TestDeepAnswer(t *testing.T) {
	cs, _ := connectStdio(t, mcptest.ModeDeepAnswer, nil)
	if _, err := cs.ListTools(ctx(t), nil); err == nil || !strings.Contains(err.Error(), "depth") {
		t.Errorf("tools/list: %v, want a depth error", err)
	}
	cs, _ = connectStdio(t, mcptest.ModeDeepAnswer, nil, mcptest.EnvDeep+"=call")
	r, err := cs.ListTools(ctx(t), nil)
	if err != nil || len(r.Tools) != 1 || r.Tools[0].Name != mcptest.ToolDeepAnswer {
		t.Fatalf("tools/list: %v %+v", err, r)
	}
	if _, err := cs.CallTool(ctx(t), &mcp.CallToolParams{Name: mcptest.ToolDeepAnswer, Arguments: map[string]any{}}); err == nil || !strings.Contains(err.Error(), "depth") {
		t.Errorf("tools/call: %v, want a depth error", err)
	}
}
