//go:build linux

package transport

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// reaperPID is the PID of r's reaper, or 0 without one.
func reaperPID(r *Runs) int {
	r.reaper.mu.Lock()
	defer r.reaper.mu.Unlock()
	if r.reaper.cmd == nil {
		return 0
	}
	return r.reaper.cmd.Process.Pid
}

// TestCloseKillsTheMarkedTree stops a server whose child left its
// process group (setsid): the run mark finds it. The mark given replaces
// one the environment held.
func TestCloseKillsTheMarkedTree(t *testing.T) {
	var r Runs
	defer r.Close()
	mark := r.Mark()
	if !strings.HasPrefix(mark, selfID()+".") || r.Mark() == mark {
		t.Fatalf("marks %q, %q", mark, r.Mark())
	}
	if reaperPID(&r) == 0 {
		t.Fatal("no reaper started")
	}
	exe, _ := os.Executable()
	p, err := Start(Command{Path: exe, Env: withMode([]string{RunEnv + "=inherited.0.x.1"}, "spawn"), Grace: time.Second, Mark: mark})
	if err != nil {
		t.Fatal(err)
	}
	grandchild := readPIDs(t, p)[0]
	if got := runMark(grandchild); got != mark {
		t.Errorf("the grandchild's mark is %q, want %q", got, mark)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, grandchild)
}

// TestReaperOutlivesAKilledGateway kills a "gateway" (this test binary,
// with a Runs and a server of its own) with SIGKILL: its server dies by
// its parent-death signal, the server's setsid child by the gateway's
// reaper (this test binary again, started as one by the reaper's
// environment before main), which then exits.
func TestReaperOutlivesAKilledGateway(t *testing.T) {
	exe, _ := os.Executable()
	gw := exec.Command(exe)
	gw.Env = withMode(nil, "gateway")
	out, err := gw.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	gw.Stderr = os.Stderr
	if err := gw.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = gw.Process.Kill()
		_ = gw.Wait()
		t.Fatalf("the gateway said nothing: %v", err)
	}
	f := strings.Fields(line)
	if len(f) != 2 || f[0] == "0" {
		_ = gw.Process.Kill()
		_ = gw.Wait()
		t.Fatalf("the gateway wrote %q, want its reaper's PID and its grandchild's", line)
	}
	reaper, grandchild := atoi(t, f[0]), atoi(t, f[1])
	if !running(reaper) || !running(grandchild) {
		t.Fatal("the reaper or the grandchild is not running")
	}
	if err := gw.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = gw.Wait()
	waitGone(t, grandchild, reaper)
}

// readPIDs reads a line of PIDs from p.
func readPIDs(t *testing.T, p *Process) []int {
	t.Helper()
	line, err := bufio.NewReader(p.Reader()).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range strings.Fields(line) {
		pids = append(pids, atoi(t, f))
	}
	return pids
}
