package transport

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/internal/testwait"
)

// childEnv names the variable that makes this test binary one of the
// child processes of the tests: its value is the mode (see child).
const childModeEnv = "VOLTMCP_TRANSPORT_TEST_CHILD"

func TestMain(m *testing.M) {
	if mode, ok := os.LookupEnv(childModeEnv); ok {
		os.Exit(child(mode))
	}
	os.Exit(m.Run())
}

// child is the life of a child process of the tests, by mode:
//
//   - "cat" copies its stdin to its stdout and exits 0 at its end.
//   - "exit3" exits with status 3.
//   - "stubborn" ignores SIGTERM and the end of its stdin, and sleeps.
//   - "sleep" ignores SIGTERM and SIGHUP, and sleeps.
//   - "spawn" starts a "sleep" child in a session of its own (setsid:
//     no signal to its group reaches it), writes that child's PID as a
//     line, and exits at the end of its stdin.
//   - "gateway" starts a "spawn" child with a run mark from a [Runs] of
//     its own, writes the PIDs of its reaper and its grandchild as a
//     line, and sleeps.
func child(mode string) int {
	switch mode {
	case "cat":
		_, _ = io.Copy(os.Stdout, os.Stdin)
		return 0
	case "exit3":
		return 3
	case "stubborn":
		signal.Ignore(syscall.SIGTERM)
		_, _ = io.Copy(io.Discard, os.Stdin)
		time.Sleep(time.Hour)
		return 0
	case "sleep":
		signal.Ignore(syscall.SIGTERM, syscall.SIGHUP)
		time.Sleep(time.Hour)
		return 0
	case "spawn":
		exe, _ := os.Executable()
		cmd := &exec.Cmd{Path: exe, Args: []string{exe}, Env: withMode(os.Environ(), "sleep"),
			SysProcAttr: &syscall.SysProcAttr{Setsid: true}}
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println(cmd.Process.Pid)
		_, _ = io.Copy(io.Discard, os.Stdin)
		return 0
	case "gateway":
		var r Runs
		exe, _ := os.Executable()
		p, err := Start(Command{Path: exe, Env: withMode(nil, "spawn"), Grace: time.Second, Mark: r.Mark()})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		line, err := bufio.NewReader(p.Reader()).ReadString('\n')
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println(reaperPID(&r), strings.TrimSpace(line))
		time.Sleep(time.Hour)
		return 0
	}
	fmt.Fprintf(os.Stderr, "unknown mode %q\n", mode)
	return 2
}

// withMode returns env with the child mode set to mode.
func withMode(env []string, mode string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, childModeEnv+"=") {
			out = append(out, kv)
		}
	}
	return append(out, childModeEnv+"="+mode)
}

// startChild starts this test binary as a child of mode, stopped with
// a grace of grace.
func startChild(t *testing.T, mode string, grace time.Duration, extraEnv ...string) *Process {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(Command{Path: exe, Env: withMode(extraEnv, mode), Grace: grace})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// waitGone waits up to 10 s for each process of pids to be gone (or a
// zombie).
func waitGone(t *testing.T, pids ...int) {
	t.Helper()
	deadline := testwait.Deadline(t)
	for _, pid := range pids {
		for running(pid) {
			if time.Now().After(deadline) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				t.Fatalf("process %d survived", pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// running reports whether process pid exists and is not a zombie.
func running(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // no /proc: trust kill
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
