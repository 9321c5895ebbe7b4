//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/daemon"
	"github.com/voltmcp/voltmcp/internal/mcptest"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// daemonHome is a home whose user layer (<home>/.volt/agent/mcp.json)
// holds mcptest servers in mode behave, one per name: servers every
// workspace of a daemon has, without project trust. Its path is short:
// the daemon's socket lives under it, and a socket's path is at most 107
// bytes.
func daemonHome(t testing.TB, names ...string) string {
	t.Helper()
	home, err := os.MkdirTemp("", "vh")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	servers := map[string]any{}
	for _, n := range names {
		cmd, args, env := mcptest.Command(mcptest.ModeBehave)
		servers[n] = map[string]any{"command": cmd, "args": args, "env": env, "connectTimeoutMs": testTimeoutMs, "discoveryTimeoutMs": testTimeoutMs}
	}
	data, _ := json.Marshal(map[string]any{"version": 1, "servers": servers})
	if err := os.MkdirAll(filepath.Join(home, ".volt", "agent"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".volt", "agent", "mcp.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

// startDaemonProcess runs `voltmcp daemon` as its own process until the
// test ends, and returns it once it serves.
func startDaemonProcess(t testing.TB, home string, extra ...string) *exec.Cmd {
	t.Helper()
	cmd := cliCommand(append([]string{"daemon", "--home", home}, extra...)...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-exited
	})
	sc := bufio.NewScanner(pipe)
	var all strings.Builder
	for sc.Scan() {
		all.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "voltmcp: daemon serving on ") {
			go func() {
				_, _ = io.Copy(io.Discard, pipe)
				_ = cmd.Wait()
				close(exited)
			}()
			return cmd
		}
	}
	_ = cmd.Wait()
	close(exited)
	t.Fatalf("the daemon did not start:\n%s", all.String())
	return nil
}

// stopDaemonAtEnd stops, when the test ends, a daemon that a serve
// started in the background.
func stopDaemonAtEnd(t *testing.T, home string) {
	t.Cleanup(func() {
		ctx := testwait.Context(t)
		agentDir := filepath.Join(home, ".volt", "agent")
		if _, err := daemon.AskStop(ctx, agentDir); err == nil {
			_ = daemon.WaitStopped(ctx, agentDir)
		}
	})
}

// attachSession starts `voltmcp serve --daemon=MODE` for project as an
// agent does, and connects to it.
func attachSession(ctx context.Context, t *testing.T, home, project, mode string) *mcp.ClientSession {
	t.Helper()
	serve := cliCommand("serve", "--home", home, "--project", project, "--daemon="+mode)
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: serve}, nil)
	if err != nil {
		t.Fatalf("serve --daemon=%s: %v", mode, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// callTool calls the mcp tool and returns its text and whether it is an
// error result.
func callTool(ctx context.Context, t *testing.T, cs *mcp.ClientSession, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp", Arguments: args})
	if err != nil {
		t.Fatalf("call %v: %v", args, err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	return text.String(), res.IsError
}

func echoArgs(server, text string) map[string]any {
	return map[string]any{"action": "call", "server": server, "tool": "echo", "arguments": map[string]any{"text": text}}
}

// daemonPID is the pid in the daemon's lock file.
func daemonPID(t *testing.T, home string) int {
	t.Helper()
	b, err := os.ReadFile(daemon.LockPath(filepath.Join(home, ".volt", "agent")))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// TestDaemonCommands runs `voltmcp daemon` as a process: status names
// its pid, a second daemon is refused with it, stop stops it (its
// process exits 0), and then status and events say that none runs and
// how to start one, exiting 3.
func TestDaemonCommands(t *testing.T) {
	home := daemonHome(t)
	d := startDaemonProcess(t, home)
	env := fakeEnv(t, map[string]string{"HOME": home})
	pid := d.Process.Pid
	if r := runCLI(t, env, "daemon", "status", "--home", home); r.code != exitOK || !strings.Contains(r.stdout, fmt.Sprintf("pid %d", pid)) || !strings.Contains(r.stdout, daemon.SocketPath(filepath.Join(home, ".volt", "agent"))) {
		t.Fatalf("status:\n%s", r)
	}
	if r := runCLI(t, env, "daemon", "--home", home); r.code != exitFailure || !strings.Contains(r.stderr, fmt.Sprintf("a daemon is already running (pid %d", pid)) {
		t.Fatalf("second daemon:\n%s", r)
	}
	if r := runCLI(t, env, "daemon", "stop", "--home", home); r.code != exitOK || !strings.Contains(r.stdout, "stopped") {
		t.Fatalf("stop:\n%s", r)
	}
	ctx := testwait.Context(t)
	waitExited(ctx, t, d)
	for _, args := range [][]string{{"daemon", "status"}, {"events"}} {
		r := runCLI(t, env, append(args, "--home", home)...)
		if r.code != exitFailure || !strings.Contains(r.stderr, "no voltmcp daemon is running") || !strings.Contains(r.stderr, "'voltmcp daemon'") {
			t.Errorf("%v without a daemon:\n%s", args, r)
		}
	}
	if r := runCLI(t, env, "serve", "--home", home, "--daemon=on"); r.code != exitFailure || !strings.Contains(r.stderr, "no voltmcp daemon is running") {
		t.Errorf("serve --daemon=on without a daemon:\n%s", r)
	}
}

// TestServeAttachedSurvivesKill9OfTheDaemon: `serve --daemon=auto`
// starts a daemon; the daemon is killed with kill -9 during a call; the
// call fails at once with the named error (no hang), and the next call
// reaches a new daemon that auto started.
func TestServeAttachedSurvivesKill9OfTheDaemon(t *testing.T) {
	home := daemonHome(t, "up")
	stopDaemonAtEnd(t, home)
	project := t.TempDir()
	ctx := testwait.Context(t)
	cs := attachSession(ctx, t, home, project, "auto")
	if text, isErr := callTool(ctx, t, cs, echoArgs("up", "first")); isErr || !strings.Contains(text, "first") {
		t.Fatalf("first call: %v %s", isErr, text)
	}
	first := daemonPID(t, home)
	// Watch the events, to know when the slow call runs in the daemon.
	started := make(chan struct{})
	var once sync.Once
	watch, _, err := daemon.Attach(ctx, filepath.Join(home, ".volt", "agent"), mustCanonical(t, project), func(method string, params json.RawMessage) {
		if method == "mcp_event" && strings.Contains(string(params), `"mcp_call_start"`) && strings.Contains(string(params), `"slow"`) {
			once.Do(func() { close(started) })
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	if err := watch.Call(ctx, "subscribe_mcp_events", map[string]any{"sinceSeq": 0}, nil); err != nil {
		t.Fatal(err)
	}
	type result struct {
		text  string
		isErr bool
	}
	done := make(chan result, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp", Arguments: map[string]any{"action": "call", "server": "up", "tool": "slow", "arguments": map[string]any{"ms": 600000}}})
		if err != nil {
			done <- result{"the agent's call failed: " + err.Error(), false}
			return
		}
		var text strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text.WriteString(tc.Text)
			}
		}
		done <- result{text.String(), res.IsError}
	}()
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the slow call did not start")
	}
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		t.Fatal("the call in flight hung after the daemon was killed")
	}
	if !r.isErr || !strings.Contains(r.text, "the voltmcp daemon went away") {
		t.Fatalf("call in flight: %v %s", r.isErr, r.text)
	}
	if text, isErr := callTool(ctx, t, cs, echoArgs("up", "after")); isErr || !strings.Contains(text, "after") {
		t.Fatalf("next call: %v %s", isErr, text)
	}
	if second := daemonPID(t, home); second == first || second == 0 {
		t.Fatalf("daemon pid %d after the kill, was %d", second, first)
	}
}

func mustCanonical(t *testing.T, dir string) string {
	t.Helper()
	p, err := daemon.CanonicalProject(dir)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestEventsPrintsACall: a call through an attached serve is printed by
// `voltmcp events` (text and --json) as its start and end, and the
// daemon's engine wrote one audit record for each call (the attached
// serve none).
func TestEventsPrintsACall(t *testing.T) {
	home := daemonHome(t, "up")
	startDaemonProcess(t, home)
	project := t.TempDir()
	ctx := testwait.Context(t)
	cs := attachSession(ctx, t, home, project, "on")
	for i, c := range []struct {
		flags      []string
		start, end string
	}{
		{nil, "mcp_call_start up echo", "mcp_call_end up echo"},
		{[]string{"--json"}, `"type":"mcp_call_start"`, `"type":"mcp_call_end"`},
	} {
		ev := cliCommand(append([]string{"events", "--home", home, "--project", project}, c.flags...)...)
		out, err := ev.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		errPipe, err := ev.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := ev.Start(); err != nil {
			t.Fatal(err)
		}
		// A broken events command fails the test rather than hang it.
		stopKill := context.AfterFunc(ctx, func() { _ = ev.Process.Kill() })
		// Once it watches, a call is made.
		esc := bufio.NewScanner(errPipe)
		for esc.Scan() && !strings.Contains(esc.Text(), "voltmcp: watching the events") {
		}
		go func() { _, _ = io.Copy(io.Discard, errPipe) }()
		text := fmt.Sprint("watched ", i)
		if got, isErr := callTool(ctx, t, cs, echoArgs("up", text)); isErr || !strings.Contains(got, text) {
			t.Fatalf("call: %v %s", isErr, got)
		}
		var seen []string
		sawStart, sawEnd := false, false
		sc := bufio.NewScanner(out)
		for !(sawStart && sawEnd) && sc.Scan() {
			seen = append(seen, sc.Text())
			sawStart = sawStart || strings.Contains(sc.Text(), c.start)
			sawEnd = sawEnd || (sawStart && strings.Contains(sc.Text(), c.end))
		}
		stopKill()
		_ = ev.Process.Signal(syscall.SIGTERM)
		_ = ev.Wait()
		if !sawStart || !sawEnd {
			t.Errorf("events %v printed no call start and end:\n%s", c.flags, strings.Join(seen, "\n"))
		}
		if len(c.flags) > 0 && len(seen) > 0 && !strings.Contains(seen[0], `"schema":"mcp_events.v1"`) {
			t.Errorf("events --json: %s", seen[0])
		}
	}
	// One audit record of kind call for each call, written by the
	// daemon's engine, in the agent directory the daemon and the serve
	// share. The engine writes its records in the background.
	var b []byte
	calls := func() (n int) {
		b, _ = os.ReadFile(filepath.Join(home, ".volt", "agent", "audit", "audit.jsonl"))
		for _, line := range strings.Split(string(b), "\n") {
			var rec struct{ Kind, Tool, Surface string }
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Kind == "call" {
				if rec.Surface != "daemon" || rec.Tool != "echo" {
					t.Errorf("audit record of a call: %s", line)
				}
				n++
			}
		}
		return n
	}
	testwait.For(t, "the audit records of the calls", func() bool { return calls() >= 2 })
	if n := calls(); n != 2 {
		t.Errorf("%d audit records of the 2 calls, want 2:\n%s", n, b)
	}
}

// TestAttachedSessionsShareUpstreams: 20 agent sessions attached to one
// daemon in one workspace, each calling each of 10 stdio servers, run 10
// upstream processes, all under the daemon, none under a serve.
func TestAttachedSessionsShareUpstreams(t *testing.T) {
	const sessions, servers = 20, 10
	var names []string
	for i := range servers {
		names = append(names, fmt.Sprintf("s%d", i))
	}
	home := daemonHome(t, names...)
	d := startDaemonProcess(t, home)
	project := t.TempDir()
	ctx := testwait.Context(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	serves := make([]*exec.Cmd, sessions)
	for i := range sessions {
		serve := cliCommand("serve", "--home", home, "--project", project, "--daemon=on")
		serves[i] = serve
		client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: serve}, nil)
		if err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
		t.Cleanup(func() { cs.Close() })
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, n := range names {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp", Arguments: echoArgs(n, fmt.Sprintf("%d-%s", i, n))})
				if err != nil || res.IsError {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("session %d server %s: %v %+v", i, n, err, res))
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d calls failed; first: %s", len(failures), failures[0])
	}
	// The upstream servers are the test binary run as mcptest servers
	// (the daemon's process reaper is not one).
	var upstream []string
	for _, p := range below(d.Process.Pid) {
		if c := cmdline(p); strings.Contains(c, "-test.run=^$") {
			upstream = append(upstream, c)
		}
	}
	if len(upstream) != servers {
		t.Errorf("%d processes under the daemon, want %d:\n%s", len(upstream), servers, strings.Join(upstream, "\n"))
	}
	for i, s := range serves {
		if kids := below(s.Process.Pid); len(kids) != 0 {
			t.Errorf("session %d's serve has %d processes under it", i, len(kids))
		}
	}
}

// TestServesStartingTogetherShareOneDaemon: six `serve --daemon=auto`
// started at once, with no daemon running, race to start one: one wins,
// the others attach to it, and every session's call is answered.
func TestServesStartingTogetherShareOneDaemon(t *testing.T) {
	home := daemonHome(t, "up")
	stopDaemonAtEnd(t, home)
	ctx := testwait.Context(t)
	project := t.TempDir()
	var wg sync.WaitGroup
	errs := make(chan string, 6)
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			serve := cliCommand("serve", "--home", home, "--project", project, "--daemon=auto")
			client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
			cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: serve}, nil)
			if err != nil {
				errs <- fmt.Sprintf("session %d: %v", i, err)
				return
			}
			defer cs.Close()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp", Arguments: echoArgs("up", fmt.Sprint("s", i))})
			if err != nil || res.IsError {
				errs <- fmt.Sprintf("session %d: %v %+v", i, err, res)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	st, err := daemon.AskStatus(ctx, filepath.Join(home, ".volt", "agent"))
	if err != nil || st.PID != daemonPID(t, home) || len(st.Workspaces) != 1 {
		t.Errorf("status after the race: %+v %v", st, err)
	}
}

// TestServeAttachedOnSaysHowToStartADaemon: under --daemon=on, a daemon
// killed with kill -9 fails the call in flight with the named error; the
// next call, with no daemon, says how to start one; once a daemon runs
// again, the call after reaches it.
func TestServeAttachedOnSaysHowToStartADaemon(t *testing.T) {
	home := daemonHome(t, "up")
	d := startDaemonProcess(t, home)
	project := t.TempDir()
	ctx := testwait.Context(t)
	cs := attachSession(ctx, t, home, project, "on")
	if text, isErr := callTool(ctx, t, cs, echoArgs("up", "first")); isErr || !strings.Contains(text, "first") {
		t.Fatalf("first call: %v %s", isErr, text)
	}
	if err := d.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "the killed daemon's socket to stop answering", func() bool {
		_, err := daemon.AskStatus(ctx, filepath.Join(home, ".volt", "agent"))
		return err != nil
	})
	text, isErr := callTool(ctx, t, cs, echoArgs("up", "no daemon"))
	if !isErr || !(strings.Contains(text, "the voltmcp daemon went away") || strings.Contains(text, "no voltmcp daemon is running")) {
		t.Fatalf("call after the kill: %v %s", isErr, text)
	}
	if !strings.Contains(text, "'voltmcp daemon'") && !strings.Contains(text, "start one") {
		t.Errorf("the error does not say how to start a daemon: %s", text)
	}
	if text, isErr := callTool(ctx, t, cs, echoArgs("up", "still none")); !isErr || !strings.Contains(text, "no voltmcp daemon is running") || !strings.Contains(text, "'voltmcp daemon'") {
		t.Errorf("call with no daemon: %v %s", isErr, text)
	}
	startDaemonProcess(t, home)
	if text, isErr := callTool(ctx, t, cs, echoArgs("up", "again")); isErr || !strings.Contains(text, "again") {
		t.Fatalf("call once a daemon runs again: %v %s", isErr, text)
	}
}
