package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/voltmcp/voltmcp/internal/mcptest"
	"github.com/voltmcp/voltmcp/internal/testwait"
	"github.com/voltmcp/voltmcp/wasm"
)

func TestMain(m *testing.M) {
	mcptest.RunIfChild()
	if os.Getenv("VOLTMCP_TEST_ENVIRON_ROLE") != "" {
		// A helper process of TestEnvironHiddenFromChildren (its role in
		// envRoleVar) runs one test that classifies nothing: compiling
		// the built-in module for it would cost seconds under the race
		// detector.
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "voltmcp-engine-test-wasm-")
	if err != nil {
		panic(err)
	}
	pluginCache = dir
	warmPluginCache(dir)
	goleak.VerifyTestMain(cleanupM{m, func() { os.RemoveAll(dir) }})
}

// pluginCache is the wazero compilation cache the tests' engines share,
// so the built-in module compiles once per test run. Set by TestMain.
var pluginCache string

// warmPluginCache compiles the built-in module into the cache at dir
// before any test runs: compiling it takes seconds under the race
// detector, which would otherwise fall inside the deadline of whichever
// test classifies first, on a machine busy with the parallel tests.
func warmPluginCache(dir string) {
	ctx := context.Background()
	h, err := wasm.NewHost(ctx, &wasm.Options{CacheDir: dir})
	if err != nil {
		panic(err)
	}
	defer h.Close(ctx)
	m, err := h.Builtin(ctx)
	if err != nil {
		panic(err)
	}
	if _, err := m.Classify(ctx, wasm.ClassifyInput{Server: "warm", Tool: "get_thing"}); err != nil {
		panic(err)
	}
}

// cleanupM runs cleanup after the tests, before goleak's check.
type cleanupM struct {
	m       *testing.M
	cleanup func()
}

func (c cleanupM) Run() int {
	defer c.cleanup()
	return c.m.Run()
}

// server is one entry of a test config.
type server map[string]any

// stdio returns a stdio server entry running the test server in mode.
func stdio(mode string, extra server, extraEnv ...string) server {
	cmd, args, env := mcptest.Command(mode, extraEnv...)
	s := server{"command": cmd, "args": args, "env": env}
	for k, v := range extra {
		if k == "env" {
			for ek, ev := range v.(map[string]string) {
				env[ek] = ev
			}
			continue
		}
		s[k] = v
	}
	return s
}

// workspace writes a project config with the given servers and settings
// and returns engine options for it.
func workspace(t testing.TB, servers map[string]server, settings map[string]any) Options {
	t.Helper()
	root := t.TempDir()
	doc := map[string]any{"version": 1, "servers": servers}
	if settings != nil {
		doc["settings"] = settings
	}
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, ".volt"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".volt", "mcp.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "home")
	return Options{Home: home, Project: root, Approve: true, StopGrace: 300 * time.Millisecond, PluginCacheDir: pluginCache,
		LookupEnv: func(k string) (string, bool) {
			if k == "HOME" {
				return home, true
			}
			return os.LookupEnv(k)
		}}
}

// identityOf returns the identity of server id in the config of opts,
// which a passive engine reads.
func identityOf(t testing.TB, opts Options, id string) string {
	t.Helper()
	opts.Passive = true
	e, err := New(context.Background(), &opts)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	srv, ok := e.Config().Server(id)
	if !ok {
		t.Fatalf("no server %q", id)
	}
	return srv.Identity()
}

// cachePath returns the metadata cache file of server id in the agent
// directory of opts, which is named by the server's identity.
func cachePath(t testing.TB, opts Options, id string) string {
	t.Helper()
	return filepath.Join(opts.Home, ".volt", "agent", "mcp", "cache", identityOf(t, opts, id)+".json")
}

// start builds an engine and closes it when the test ends.
func start(t testing.TB, opts Options) *Engine {
	t.Helper()
	e, err := New(context.Background(), &opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.Close()
		// Close stops every process it started: none may be left.
		if kids := children(opts.Project, opts.Home); len(kids) > 0 {
			t.Errorf("child processes left after Close: %v", kids)
		}
	})
	if d := e.Diagnostics(); d.HasErrors() {
		t.Fatalf("config errors: %v", d)
	}
	return e
}

// waitStatus waits until a server reaches the status.
func waitStatus(t *testing.T, e *Engine, id string, want Status) ServerSummary {
	t.Helper()
	deadline := testwait.Deadline(t)
	for {
		s, err := e.Server(id)
		if err != nil {
			t.Fatal(err)
		}
		if s.Status == want {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("server %s: status %s, want %s (last error %q)", id, s.Status, want, s.LastError)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive reports whether a process exists and is not a zombie.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // no /proc: trust kill
	}
	// The state follows the command name in parentheses.
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// readPID waits for a pid file and reads it.
func readPID(t *testing.T, path string) int {
	t.Helper()
	deadline := testwait.Deadline(t)
	for {
		b, err := os.ReadFile(path)
		if err == nil && len(strings.TrimSpace(string(b))) > 0 {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid in %s", path)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitGone waits for processes to disappear.
func waitGone(t *testing.T, pids ...int) {
	t.Helper()
	deadline := testwait.Deadline(t)
	for _, pid := range pids {
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d survived", pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// children lists the live child processes of this test process, but
// for engines' reapers (engine/internal/transport/reaper_linux.go),
// which live as long as their engine. Given dirs, it lists only those
// whose working directory is one of dirs or under one (an empty dir
// names none): a stdio server runs in the directory of the config that
// defines it, so a test that runs in parallel with others names its
// workspace's project and home and sees its own servers only.
func children(dirs ...string) []int {
	var real []string
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if r, err := filepath.EvalSymlinks(d); err == nil {
			d = r
		}
		real = append(real, d)
	}
	var out []int
	me := os.Getpid()
	for pid, ppid := range mcptest.Parents() {
		if ppid != me {
			continue
		}
		proc := "/proc/" + strconv.Itoa(pid)
		if cmdline, _ := os.ReadFile(proc + "/cmdline"); strings.HasPrefix(string(cmdline), "voltmcp-reaper\x00") {
			continue
		}
		if len(real) > 0 && !under(proc+"/cwd", real) {
			continue
		}
		out = append(out, pid)
	}
	slices.Sort(out)
	return out
}

// under reports whether the link at cwd (a process's /proc/PID/cwd)
// names one of dirs or a path under one. A process that has exited
// names none.
func under(cwd string, dirs []string) bool {
	dir, err := os.Readlink(cwd)
	if err != nil {
		return false
	}
	for _, d := range dirs {
		if d != "" && (dir == d || strings.HasPrefix(dir, d+string(filepath.Separator))) {
			return true
		}
	}
	return false
}

// killPID kills a process with SIGKILL.
func killPID(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }

// TestChildrenOfAWorkspace: children, given a workspace's project and
// home, lists the stdio servers of that workspace's engine, user-layer
// and project-layer alike, and none of another workspace's, so that the
// check start makes after Close sees what it must in a test that runs in
// parallel with others.
func TestChildrenOfAWorkspace(t *testing.T) {
	t.Parallel()
	opts := workspace(t, map[string]server{"project": stdio(mcptest.ModeBehave, nil)}, nil)
	userServers(t, opts, map[string]server{"user": stdio(mcptest.ModeBehave, nil)})
	e := start(t, opts)
	ctx := testwait.Context(t)
	var pids []int
	for _, id := range []string{"project", "user"} {
		if err := e.Connect(ctx, id); err != nil {
			t.Fatal(err)
		}
		if kids := children(opts.Project, opts.Home); len(kids) != len(pids)+1 {
			t.Fatalf("after connecting %s: children of the workspace %v, want %d", id, kids, len(pids)+1)
		} else {
			pids = kids
		}
	}
	if kids := children(t.TempDir()); len(kids) != 0 {
		t.Errorf("children of another directory: %v", kids)
	}
	if kids := children(); len(kids) < len(pids) {
		t.Errorf("children of any directory %v lack the workspace's %v", kids, pids)
	}
	e.Close()
	if kids := children(opts.Project, opts.Home); len(kids) != 0 {
		t.Errorf("children of the workspace after Close: %v", kids)
	}
}
