//go:build linux

package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/internal/mcptest"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// TestKill9OfServeLeavesNoDescendants kills `voltmcp serve` with SIGKILL,
// which it cannot catch, after its one server, a wrapper whose
// grandchildren called setsid and ignore SIGTERM and SIGHUP (one of them
// orphaned from the start), has started: none of the processes serve
// started, nor any they started, is left running. (callEcho calls the
// server "up".) It does so 5 times;
// VOLTMCP_TEST_KILL9_ROUNDS=100 runs it 100 times.
func TestKill9OfServeLeavesNoDescendants(t *testing.T) {
	t.Parallel()
	rounds := 5
	if s := os.Getenv("VOLTMCP_TEST_KILL9_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("VOLTMCP_TEST_KILL9_ROUNDS=%q", s)
		}
		rounds = n
	}
	dir := t.TempDir()
	pidfile := filepath.Join(dir, "pid")
	command, args, env := mcptest.Command(mcptest.ModeSetsidGrandchild, mcptest.EnvPIDFile+"="+pidfile)
	project := filepath.Join(dir, "project")
	doc := map[string]any{"version": 1, "servers": map[string]any{"up": map[string]any{"command": command, "args": args, "env": env}}}
	data, _ := json.Marshal(doc)
	if err := os.MkdirAll(filepath.Join(project, ".volt"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, ".volt", "mcp.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home")
	survivors := 0
	for round := range rounds {
		for _, suffix := range []string{"", mcptest.OrphanSuffix, mcptest.ParentSuffix} {
			_ = os.Remove(pidfile + suffix)
		}
		ctx, cancel := context.WithTimeout(context.Background(), testwait.Patience)
		serve := cliCommand("serve", "--home", home, "--project", project, "--approve")
		client := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1.0.0"}, nil)
		cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: serve}, nil)
		if err != nil {
			t.Fatal(err)
		}
		callEcho(ctx, t, cs, "round "+strconv.Itoa(round))
		procs := []int{
			mcptest.WaitPIDFile(t, pidfile),
			mcptest.WaitPIDFile(t, pidfile+mcptest.OrphanSuffix),
			mcptest.WaitPIDFile(t, pidfile+mcptest.ParentSuffix),
		}
		// Everything below serve by parent: the server, the held
		// grandchild, serve's reaper; the orphan's parent is gone.
		procs = append(procs, below(serve.Process.Pid)...)
		if err := serve.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cs.Close()
		deadline := testwait.Deadline(t)
		for _, pid := range procs {
			for mcptest.Alive(pid) && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if mcptest.Alive(pid) {
				survivors++
				t.Errorf("round %d: process %d survived: %s", round, pid, cmdline(pid))
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		cancel()
	}
	t.Logf("%d kill -9s of serve, %d descendants survived", rounds, survivors)
}

// below lists the live processes under pid, by parent.
func below(pid int) []int {
	kids := map[int][]int{}
	for p, ppid := range mcptest.Parents() {
		kids[ppid] = append(kids[ppid], p)
	}
	var out []int
	for queue := []int{pid}; len(queue) > 0; queue = queue[1:] {
		out = append(out, kids[queue[0]]...)
		queue = append(queue, kids[queue[0]]...)
	}
	return out
}

// cmdline is what process pid runs, for a failure message.
func cmdline(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return strings.ReplaceAll(string(b), "\x00", " ")
}
