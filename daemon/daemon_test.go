//go:build unix

package daemon_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/daemon"
	"github.com/voltmcp/voltmcp/engine"
	"github.com/voltmcp/voltmcp/internal/mcptest"
	"github.com/voltmcp/voltmcp/internal/testwait"
	"github.com/voltmcp/voltmcp/rpc"
)

func TestMain(m *testing.M) {
	mcptest.RunIfChild()
	dir, err := os.MkdirTemp("", "voltmcp-daemon-test-cache-")
	if err != nil {
		panic(err)
	}
	pluginCache = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// pluginCache is the engines' wasm compilation cache, shared by the
// tests so that the built-in classifier compiles once. Set by TestMain.
var pluginCache string

// testTimeoutMs is the connect and discovery timeout of the test
// servers: a race-built child on a loaded machine starts slowly.
const testTimeoutMs = int64(testwait.Patience / time.Millisecond)

// project writes a project whose servers are mcptest servers in mode
// behave, one per name, and returns its root.
func project(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	servers := map[string]any{}
	for _, n := range names {
		cmd, args, env := mcptest.Command(mcptest.ModeBehave)
		servers[n] = map[string]any{"command": cmd, "args": args, "env": env, "connectTimeoutMs": testTimeoutMs, "discoveryTimeoutMs": testTimeoutMs}
	}
	data, _ := json.Marshal(map[string]any{"version": 1, "servers": servers})
	if err := os.MkdirAll(filepath.Join(dir, ".volt"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".volt", "mcp.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// options are a daemon's options in a fresh home: each project is
// trusted for the daemon's run (Approve), as `voltmcp trust` would.
func options(t *testing.T) *daemon.Options {
	home := shortDir(t)
	agentDir := filepath.Join(home, ".volt", "agent")
	return &daemon.Options{
		AgentDir: agentDir,
		Engine: func(string) engine.Options {
			return engine.Options{Home: home, AgentDir: agentDir, PluginCacheDir: pluginCache, Approve: true, LookupEnv: os.LookupEnv}
		},
	}
}

// shortDir is a temporary directory with a short path: a unix socket's
// path is at most 107 bytes, and t.TempDir's holds the test's name.
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "vd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// start runs a daemon until the test ends and returns once it listens.
func start(t *testing.T, opts *daemon.Options) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	opts.Ready = func() { close(ready) }
	errc := make(chan error, 1)
	go func() { errc <- daemon.Run(ctx, opts) }()
	select {
	case <-ready:
	case err := <-errc:
		cancel()
		t.Fatalf("daemon did not start: %v", err)
	case <-time.After(testwait.Patience):
		cancel()
		t.Fatal("daemon did not start")
	}
	t.Cleanup(func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("daemon: %v", err)
		}
	})
}

// conn is a raw line client of the daemon's socket: the tests speak
// JSON-RPC as the spec writes it, with maps, not the package's types.
type conn struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, agentDir string) *conn {
	t.Helper()
	c, err := net.Dial("unix", daemon.SocketPath(agentDir))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &conn{t: t, c: c, r: bufio.NewReader(c)}
}

// ask sends one request and returns the next answer that is not a
// notification.
func (c *conn) ask(id int, method string, params any) map[string]any {
	c.t.Helper()
	req := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
	if params != nil {
		req["params"] = params
	}
	b, _ := json.Marshal(req)
	if _, err := c.c.Write(append(b, '\n')); err != nil {
		c.t.Fatal(err)
	}
	_ = c.c.SetReadDeadline(testwait.Deadline(c.t))
	for {
		line, err := c.r.ReadBytes('\n')
		if err != nil {
			c.t.Fatalf("%s: %v", method, err)
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			c.t.Fatalf("%s: answer %q: %v", method, line, err)
		}
		if _, isNote := m["method"]; !isNote {
			return m
		}
	}
}

func (c *conn) attach(project string) map[string]any {
	c.t.Helper()
	res := c.ask(1, daemon.AttachMethod, map[string]any{"project": project})
	if res["error"] != nil {
		c.t.Fatalf("attach %s: %v", project, res["error"])
	}
	return res["result"].(map[string]any)
}

// serverIDs lists the ids of list_mcp_servers' answer.
func serverIDs(t *testing.T, res map[string]any) []string {
	t.Helper()
	r, ok := res["result"].(map[string]any)
	if !ok {
		t.Fatalf("list_mcp_servers: %v", res)
	}
	var ids []string
	list, _ := r["servers"].([]any)
	for _, s := range list {
		ids = append(ids, s.(map[string]any)["id"].(string))
	}
	return ids
}

// callText is the text of a gateway answer's first content block.
func callText(t *testing.T, res map[string]any) (string, bool) {
	t.Helper()
	r, ok := res["result"].(map[string]any)
	if !ok {
		t.Fatalf("gateway: %v", res)
	}
	content, _ := r["content"].([]any)
	if len(content) == 0 {
		t.Fatalf("gateway answer without content: %v", r)
	}
	isErr, _ := r["isError"].(bool)
	return content[0].(map[string]any)["text"].(string), isErr
}

// TestDaemonKeepsWorkspacesApart attaches two connections to two
// projects: each sees its own project's server and not the other's, a
// call through the gateway method runs in its workspace, two spellings
// of a directory are one workspace, and daemon_status lists both.
func TestDaemonKeepsWorkspacesApart(t *testing.T) {
	opts := options(t)
	start(t, opts)
	a, b := project(t, "alpha"), project(t, "beta")
	ca, cb := dial(t, opts.AgentDir), dial(t, opts.AgentDir)
	if got := ca.attach(a)["project"]; got != mustReal(t, a) {
		t.Fatalf("attached to %v, want %s", got, a)
	}
	cb.attach(filepath.Join(b, ".volt", "..")) // another spelling of b
	if ids := serverIDs(t, ca.ask(2, "list_mcp_servers", map[string]any{})); strings.Join(ids, ",") != "alpha" {
		t.Errorf("workspace a lists %v, want [alpha]", ids)
	}
	if ids := serverIDs(t, cb.ask(2, "list_mcp_servers", map[string]any{})); strings.Join(ids, ",") != "beta" {
		t.Errorf("workspace b lists %v, want [beta]", ids)
	}
	call := func(server string) map[string]any {
		return map[string]any{"action": "call", "server": server, "tool": "echo", "arguments": map[string]any{"text": "hi " + server}}
	}
	if text, isErr := callText(t, ca.ask(3, rpc.GatewayMethod, call("alpha"))); isErr || !strings.Contains(text, "hi alpha") {
		t.Errorf("call of alpha in a: %v %q", isErr, text)
	}
	if text, isErr := callText(t, cb.ask(3, rpc.GatewayMethod, call("alpha"))); !isErr || !strings.Contains(text, "alpha") {
		t.Errorf("call of alpha in b was not refused: %v %q", isErr, text)
	}
	st, err := daemon.AskStatus(context.Background(), opts.AgentDir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, w := range st.Workspaces {
		names = append(names, w.Project)
	}
	if want := []string{mustReal(t, a), mustReal(t, b)}; strings.Join(names, ",") != strings.Join(sorted(want), ",") || st.PID != os.Getpid() || st.Connections != 2 {
		t.Errorf("status: %+v, want workspaces %v", st, want)
	}
	// Bad params name the field; a relative path is refused.
	for _, p := range []any{map[string]any{"projekt": a}, map[string]any{"project": "rel/dir"}, map[string]any{"project": filepath.Join(a, "missing")}, map[string]any{"project": 7}} {
		res := dial(t, opts.AgentDir).ask(1, daemon.AttachMethod, p)
		e, _ := res["error"].(map[string]any)
		if e == nil || e["code"].(float64) != rpc.CodeInvalidParams {
			t.Errorf("attach %v: %v, want invalid params", p, res)
		}
	}
}

func mustReal(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// TestDaemonRefusesWhatIsNotItsOwn: the daemon does not start, and its
// error names the path, when its directory is open to others, when
// something that is not a socket is planted at the socket's path, or
// when a daemon already runs there; a socket left by a dead daemon is
// replaced.
func TestDaemonRefusesWhatIsNotItsOwn(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, agentDir string) string // returns what the error must name
	}{
		{"directory 0755", func(t *testing.T, agentDir string) string {
			dir := daemon.Dir(agentDir)
			mkdir(t, dir, 0o755)
			return dir
		}},
		{"directory writable by others", func(t *testing.T, agentDir string) string {
			dir := daemon.Dir(agentDir)
			mkdir(t, dir, 0o777)
			return dir
		}},
		{"directory is a symlink", func(t *testing.T, agentDir string) string {
			other := t.TempDir()
			mkdir(t, agentDir, 0o700)
			if err := os.Symlink(other, daemon.Dir(agentDir)); err != nil {
				t.Fatal(err)
			}
			return daemon.Dir(agentDir)
		}},
		{"planted regular file", func(t *testing.T, agentDir string) string {
			mkdir(t, daemon.Dir(agentDir), 0o700)
			if err := os.WriteFile(daemon.SocketPath(agentDir), []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
			return daemon.SocketPath(agentDir)
		}},
		{"planted socket of another user", func(t *testing.T, agentDir string) string {
			if os.Getuid() != 0 {
				t.Skip("needs root to plant a file of another user")
			}
			mkdir(t, daemon.Dir(agentDir), 0o700)
			staleSocket(t, daemon.SocketPath(agentDir))
			if err := os.Lchown(daemon.SocketPath(agentDir), 65534, 65534); err != nil {
				t.Fatal(err)
			}
			return daemon.SocketPath(agentDir)
		}},
		{"planted directory of another user", func(t *testing.T, agentDir string) string {
			if os.Getuid() != 0 {
				t.Skip("needs root to plant a file of another user")
			}
			mkdir(t, daemon.Dir(agentDir), 0o700)
			if err := os.Chown(daemon.Dir(agentDir), 65534, 65534); err != nil {
				t.Fatal(err)
			}
			return daemon.Dir(agentDir)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := options(t)
			name := c.setup(t, opts.AgentDir)
			err := daemon.Run(context.Background(), opts)
			if err == nil || !strings.Contains(err.Error(), name) {
				t.Fatalf("Run: %v, want an error naming %s", err, name)
			}
		})
	}
}

func mkdir(t *testing.T, dir string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
}

// staleSocket leaves a socket at path that no one listens on, as a
// daemon killed with kill -9 does.
func staleSocket(t *testing.T, path string) {
	t.Helper()
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
}

// TestDaemonReplacesAStaleSocketAndRefusesASecond: a socket left by a
// dead daemon is replaced; a second daemon in the same agent directory
// is refused with the first one's pid.
func TestDaemonReplacesAStaleSocketAndRefusesASecond(t *testing.T) {
	opts := options(t)
	mkdir(t, daemon.Dir(opts.AgentDir), 0o700)
	staleSocket(t, daemon.SocketPath(opts.AgentDir))
	start(t, opts)
	if res := dial(t, opts.AgentDir).ask(1, "get_mcp_capabilities", nil); res["result"] == nil {
		t.Fatalf("over the replaced socket: %v", res)
	}
	second := *opts
	second.Ready = nil
	err := daemon.Run(context.Background(), &second)
	var running *daemon.RunningError
	if !errors.As(err, &running) || running.PID != os.Getpid() || !strings.Contains(err.Error(), fmt.Sprintf("a daemon is already running (pid %d", os.Getpid())) {
		t.Fatalf("second daemon: %v", err)
	}
	// The first still serves.
	if res := dial(t, opts.AgentDir).ask(1, "get_mcp_capabilities", nil); res["result"] == nil {
		t.Fatalf("after the second was refused: %v", res)
	}
}

// TestDaemonThousandConnections opens 1,000 connections at once to a
// daemon that serves 50: each gets an answer, either served or refused
// with the busy error naming the limit; never more than 50 are served at
// once; and once they close, the daemon serves the next one.
func TestDaemonThousandConnections(t *testing.T) {
	opts := options(t)
	opts.MaxConns = 50
	start(t, opts)
	const n = 1000
	var wg sync.WaitGroup
	hold := make(chan struct{})
	var mu sync.Mutex
	served, busy := 0, 0
	var bad []string
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("unix", daemon.SocketPath(opts.AgentDir))
			if err != nil {
				mu.Lock()
				bad = append(bad, err.Error())
				mu.Unlock()
				return
			}
			defer c.Close()
			fmt.Fprintf(c, `{"jsonrpc":"2.0","id":%d,"method":"get_mcp_capabilities"}`+"\n", i)
			_ = c.SetReadDeadline(testwait.Deadline(t))
			line, err := bufio.NewReader(c).ReadBytes('\n')
			var m struct {
				Result json.RawMessage
				Error  *rpc.Error
			}
			_ = json.Unmarshal(line, &m)
			mu.Lock()
			switch {
			case m.Result != nil:
				served++
			case m.Error != nil && m.Error.Code == daemon.CodeBusy && strings.Contains(m.Error.Message, "50 connections"):
				busy++
			default:
				bad = append(bad, fmt.Sprintf("%q %v", line, err))
			}
			mu.Unlock()
			if m.Result != nil {
				<-hold // keep the slot until every connection has its answer
			}
		}()
	}
	testwait.For(t, "every connection's answer", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return served+busy+len(bad) == n
	})
	close(hold)
	wg.Wait()
	if len(bad) > 0 || served == 0 || served > opts.MaxConns || busy == 0 {
		t.Fatalf("served %d, busy %d, bad %d (first: %v)", served, busy, len(bad), first(bad))
	}
	testwait.For(t, "a connection served after the others closed", func() bool {
		res := dial(t, opts.AgentDir).ask(1, "get_mcp_capabilities", nil)
		return res["result"] != nil
	})
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// TestDaemonClientThatNeverReads: a client that subscribes to the events
// and sends requests without ever reading an answer does not hold back
// another client's calls in the same workspace.
func TestDaemonClientThatNeverReads(t *testing.T) {
	opts := options(t)
	start(t, opts)
	p := project(t, "up")
	stuck := dial(t, opts.AgentDir)
	stuck.attach(p)
	if _, err := fmt.Fprintf(stuck.c, `{"jsonrpc":"2.0","id":2,"method":"subscribe_mcp_events","params":{"sinceSeq":0}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	go func() {
		// Requests, and never a read: the daemon's answers fill the
		// socket's buffers.
		req := []byte(`{"jsonrpc":"2.0","id":3,"method":"list_mcp_servers","params":{}}` + "\n")
		for {
			if _, err := stuck.c.Write(req); err != nil {
				return
			}
		}
	}()
	other := dial(t, opts.AgentDir)
	other.attach(p)
	for i := range 50 {
		text, isErr := callText(t, other.ask(10+i, rpc.GatewayMethod, map[string]any{"action": "call", "server": "up", "tool": "echo", "arguments": map[string]any{"text": fmt.Sprint("n", i)}}))
		if isErr || !strings.Contains(text, fmt.Sprint("n", i)) {
			t.Fatalf("call %d: %v %q", i, isErr, text)
		}
	}
}
