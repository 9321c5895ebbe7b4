//go:build unix

package mcptest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/voltmcp/voltmcp/internal/mcptest"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

func TestMain(m *testing.M) {
	mcptest.RunIfChild()
	code := m.Run()
	// The helpers must leave no goroutine behind (the engine's tests check
	// with goleak too); the clients' idle connections are the tests' own.
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	if err := goleak.Find(); err != nil && code == 0 {
		fmt.Fprintln(os.Stderr, "goroutines left after the tests:", err)
		code = 1
	}
	os.Exit(code)
}

// canaryName is a variable of the test process that a child started with
// the restricted environment must not see.
const canaryName = "MCPTEST_HOST_CANARY"

// waitFor bounds every wait of these tests.
const waitFor = testwait.Patience

// childCmd returns the command of a stdio test server of mode, with the
// environment the engine gives its children (a few host variables plus
// explicit entries) and in a process group of its own, which the test kills
// when it ends.
func childCmd(t *testing.T, mode string, extraEnv ...string) *exec.Cmd {
	t.Helper()
	command, args, env := mcptest.Command(mode, extraEnv...)
	cmd := exec.Command(command, args...)
	cmd.Env = []string{}
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "LANG"} {
		if v, ok := os.LookupEnv(k); ok {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	t.Cleanup(func() {
		if cmd.Process != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	})
	return cmd
}

// newClient returns a go-sdk client with opts.
func newClient(opts *mcp.ClientOptions) *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "mcptest-client", Version: "0.0.1"}, opts)
}

// connect connects a client to transport and closes the session when the
// test ends.
func connect(t *testing.T, transport mcp.Transport, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	cs := dial(t, transport, opts)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// dial connects a client to transport; closing the session is up to the
// caller.
//
// The context of Connect lives until the test ends: the go-sdk's SSE client
// ties its event stream to it, so that a context cancelled once Connect
// returns ends the session. A timer bounds Connect alone.
func dial(t *testing.T, transport mcp.Transport, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	c, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	timer := time.AfterFunc(waitFor, cancel)
	cs, err := newClient(opts).Connect(c, transport, nil)
	timer.Stop()
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	return cs
}

// connectStdio starts a stdio test server of mode and connects to it.
func connectStdio(t *testing.T, mode string, opts *mcp.ClientOptions, extraEnv ...string) (*mcp.ClientSession, *exec.Cmd) {
	t.Helper()
	cmd := childCmd(t, mode, extraEnv...)
	return connect(t, &mcp.CommandTransport{Command: cmd, TerminateDuration: 200 * time.Millisecond}, opts), cmd
}

// ctx returns a context for one call.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), waitFor)
	t.Cleanup(cancel)
	return c
}

// call calls a tool and fails the test on a protocol error.
func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(ctx(t), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("calling %s: %v", name, err)
	}
	return res
}

// text returns the text of a result that holds exactly one text content.
func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("want one content, got %d", len(res.Content))
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("want text content, got %T", res.Content[0])
	}
	return tc.Text
}

// toolNames lists every tool of the session, page by page, and returns
// their names and the number of pages.
func toolNames(t *testing.T, cs *mcp.ClientSession) (names []string, pages int) {
	t.Helper()
	params := &mcp.ListToolsParams{}
	for {
		res, err := cs.ListTools(ctx(t), params)
		if err != nil {
			t.Fatalf("ListTools: %v", err)
		}
		pages++
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
		}
		if res.NextCursor == "" {
			return names, pages
		}
		if pages > 100 {
			t.Fatal("more than 100 pages")
		}
		params.Cursor = res.NextCursor
	}
}

// exerciseBehave checks every feature of mode behave through cs. The
// environment of a stdio child is checked too (an HTTP server's is the
// test's own).
func exerciseBehave(t *testing.T, cs *mcp.ClientSession, mode string, stdio bool) {
	t.Helper()
	if info := cs.InitializeResult().ServerInfo; info == nil || info.Name != "mcptest-"+mode || info.Version != "1.0.0" {
		t.Errorf("server info = %+v, want mcptest-%s 1.0.0", info, mode)
	}

	res, err := cs.ListTools(ctx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]*mcp.Tool{}
	for _, tool := range res.Tools {
		tools[tool.Name] = tool
	}
	for _, name := range []string{"echo", "add", "slow", "fail", "big", "env"} {
		if tools[name] == nil {
			t.Errorf("no tool %s", name)
		}
	}
	if a := tools["echo"].Annotations; a == nil || !a.ReadOnlyHint {
		t.Errorf("echo annotations = %+v, want readOnlyHint", a)
	}
	if a := tools["add"].Annotations; a == nil || !a.ReadOnlyHint {
		t.Errorf("add annotations = %+v, want readOnlyHint", a)
	}
	if a := tools["fail"].Annotations; a == nil || a.DestructiveHint == nil || !*a.DestructiveHint {
		t.Errorf("fail annotations = %+v, want destructiveHint", a)
	}

	echo := call(t, cs, "echo", map[string]any{"text": "hello"})
	if got := text(t, echo); got != "hello" {
		t.Errorf("echo text = %q", got)
	}
	var structured struct{ Text string }
	if b, err := json.Marshal(echo.StructuredContent); err != nil || json.Unmarshal(b, &structured) != nil || structured.Text != "hello" {
		t.Errorf("echo structured content = %v", echo.StructuredContent)
	}
	if got := text(t, call(t, cs, "add", map[string]any{"a": 2, "b": 3.5})); got != "5.5" {
		t.Errorf("add = %q, want 5.5", got)
	}
	if got := text(t, call(t, cs, "slow", map[string]any{"ms": 10})); got != "slept 10 ms" {
		t.Errorf("slow = %q", got)
	}
	fail := call(t, cs, "fail", nil)
	if !fail.IsError || !strings.Contains(text(t, fail), "fails") {
		t.Errorf("fail = %+v, want an error result", fail)
	}
	big := text(t, call(t, cs, "big", map[string]any{"bytes": 1000}))
	if len(big) != 1000 {
		t.Errorf("big returned %d bytes, want 1000", len(big))
	}
	for i, line := range strings.SplitAfter(big, "\n") {
		if len(line) != 80 && i != 1000/80 {
			t.Errorf("big line %d is %d bytes long", i, len(line))
		}
	}
	env := text(t, call(t, cs, "env", nil))
	if !strings.Contains(env, "PATH=") {
		t.Errorf("env shows no PATH:\n%s", env)
	}
	if stdio {
		if strings.Contains(env, canaryName) {
			t.Errorf("env shows the host canary:\n%s", env)
		}
		if !slices.Contains(strings.Split(env, "\n"), mcptest.EnvMode+"="+mode) {
			t.Errorf("env lacks %s=%s:\n%s", mcptest.EnvMode, mode, env)
		}
	}

	read, err := cs.ReadResource(ctx(t), &mcp.ReadResourceParams{URI: "mcptest://readme"})
	if err != nil || len(read.Contents) != 1 || read.Contents[0].Text != mcptest.Readme {
		t.Errorf("reading the readme: %+v, %v", read, err)
	}
	item, err := cs.ReadResource(ctx(t), &mcp.ReadResourceParams{URI: "mcptest://items/42"})
	if err != nil || len(item.Contents) != 1 || item.Contents[0].Text != "item 42" {
		t.Errorf("reading item 42: %+v, %v", item, err)
	}
	templates, err := cs.ListResourceTemplates(ctx(t), nil)
	if err != nil || len(templates.ResourceTemplates) != 1 || templates.ResourceTemplates[0].URITemplate != "mcptest://items/{id}" {
		t.Errorf("resource templates: %+v, %v", templates, err)
	}
	prompt, err := cs.GetPrompt(ctx(t), &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"name": "Ada"}})
	if err != nil || len(prompt.Messages) != 1 {
		t.Fatalf("greet: %+v, %v", prompt, err)
	}
	if tc, ok := prompt.Messages[0].Content.(*mcp.TextContent); !ok || tc.Text != "Hello, Ada!" {
		t.Errorf("greet message = %#v", prompt.Messages[0].Content)
	}
}

func TestCommand(t *testing.T) {
	command, args, env := mcptest.Command(mcptest.ModeBehave, "A=1", "B=x=y")
	if !filepath.IsAbs(command) {
		t.Errorf("command %q is not absolute", command)
	}
	if len(args) != 1 || !strings.HasPrefix(args[0], "-test.run=") {
		t.Errorf("args = %q", args)
	}
	want := map[string]string{mcptest.EnvMode: mcptest.ModeBehave, "GORACE": "atexit_sleep_ms=0", "A": "1", "B": "x=y"}
	if fmt.Sprint(env) != fmt.Sprint(want) {
		t.Errorf("env = %v, want %v", env, want)
	}
	for _, bad := range [][]string{{"nosuchmode"}, {mcptest.ModeBehave, "NOEQUALS"}, {mcptest.ModeBehave, mcptest.EnvMode + "=garbage"}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Command(%q) did not panic", bad)
				}
			}()
			mcptest.Command(bad[0], bad[1:]...)
		}()
	}
}

func TestBehaveStdio(t *testing.T) {
	t.Setenv(canaryName, "host-secret")
	for _, version := range []string{"", "2025-11-25"} { // the newest protocol, then the legacy handshake
		t.Run("protocol="+version, func(t *testing.T) {
			cmd := childCmd(t, mcptest.ModeBehave)
			c, cancel := context.WithTimeout(context.Background(), waitFor)
			defer cancel()
			cs, err := newClient(nil).Connect(c, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			t.Logf("negotiated protocol %s", cs.InitializeResult().ProtocolVersion)
			exerciseBehave(t, cs, mcptest.ModeBehave, true)
		})
	}
}

func TestSlowCancelled(t *testing.T) {
	cmd := childCmd(t, mcptest.ModeBehave)
	cs := dial(t, &mcp.CommandTransport{Command: cmd, TerminateDuration: waitFor}, nil)
	// testwait: the deadline under test, which must cut the slow call
	c, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := cs.CallTool(c, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"ms": 60_000}})
	if err == nil {
		t.Fatal("a cancelled slow call succeeded")
	}
	// Half the slow call: a timing bound, but one no load reaches.
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the cancelled call took %v", d)
	}
	if got := text(t, call(t, cs, "echo", map[string]any{"text": "still here"})); got != "still here" {
		t.Errorf("echo after cancel = %q", got)
	}
	// The server exits when stdin closes only once no handler runs, so a
	// clean exit shows that slow gave up its sleep.
	_ = cs.Close()
	if cmd.ProcessState == nil || !cmd.ProcessState.Exited() || cmd.ProcessState.ExitCode() != 0 {
		t.Errorf("child state after Close: %v, want exit status 0", cmd.ProcessState)
	}
}

func TestPaging(t *testing.T) {
	const extra = 120
	cs, _ := connectStdio(t, mcptest.ModeBehave, nil, fmt.Sprintf("%s=%d", mcptest.EnvExtraTools, extra))
	names, pages := toolNames(t, cs)
	if want := extra + mcptest.BehaveTools; len(names) != want {
		t.Errorf("listed %d tools, want %d", len(names), want)
	}
	if want := (extra + mcptest.BehaveTools + mcptest.PageSize - 1) / mcptest.PageSize; pages != want {
		t.Errorf("listed %d pages, want %d", pages, want)
	}
	slices.Sort(names)
	if len(slices.Compact(names)) != extra+mcptest.BehaveTools {
		t.Error("a tool was listed twice")
	}
	if !slices.Contains(names, "tool_0000") || !slices.Contains(names, fmt.Sprintf("tool_%04d", extra-1)) {
		t.Error("extra tools missing")
	}
	var n int
	for _, err := range cs.Tools(ctx(t), nil) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != extra+mcptest.BehaveTools {
		t.Errorf("the go-sdk iterator saw %d tools", n)
	}
}

func TestHangInit(t *testing.T) {
	cmd := childCmd(t, mcptest.ModeHangInit)
	// testwait: the deadline under test, which must end the hung initialize
	c, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	cs, err := newClient(nil).Connect(c, &mcp.CommandTransport{Command: cmd, TerminateDuration: waitFor}, nil)
	if err == nil {
		cs.Close()
		t.Fatal("Connect to a server that never answers succeeded")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Logf("Connect error is not a deadline: %v", err)
	}
	// Far from forever, far beyond the deadline under any load.
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("Connect took %v", d)
	}
	// The failed Connect closed stdin and waited for the child, which exits
	// when stdin closes.
	if cmd.ProcessState == nil || !cmd.ProcessState.Exited() || cmd.ProcessState.ExitCode() != 0 {
		t.Errorf("child state after the failed Connect: %v", cmd.ProcessState)
	}
}

func TestHangCall(t *testing.T) {
	cs, cmd := connectStdio(t, mcptest.ModeHangCall, nil)
	// testwait: the deadline under test, which must cut the hung call
	c, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := cs.CallTool(c, &mcp.CallToolParams{Name: "hang"}); err == nil {
		t.Fatal("hang returned")
	}
	if got := text(t, call(t, cs, "echo", map[string]any{"text": "x"})); got != "x" {
		t.Errorf("echo next to a hanging call = %q", got)
	}
	// The hanging handler keeps the server from exiting when stdin closes:
	// only the SIGTERM that Close sends after TerminateDuration ends it.
	err := cs.Close()
	if cmd.ProcessState == nil || cmd.ProcessState.Exited() {
		t.Errorf("after Close: %v, %v; want the child killed by a signal", err, cmd.ProcessState)
	}
}

func TestCrashCall(t *testing.T) {
	cs, cmd := connectStdio(t, mcptest.ModeCrashCall, nil)
	if _, err := cs.CallTool(ctx(t), &mcp.CallToolParams{Name: "crash"}); err == nil {
		t.Fatal("crash returned a result")
	}
	done := make(chan error, 1)
	go func() { done <- cs.Wait() }()
	select {
	case <-done:
	case <-time.After(waitFor):
		t.Fatal("the session outlived the crash")
	}
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 3 {
		t.Errorf("child state = %v, want exit status 3", cmd.ProcessState)
	}
	if _, err := cs.CallTool(ctx(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}}); err == nil {
		t.Error("a call after the crash succeeded")
	}
}

func TestGarbage(t *testing.T) {
	cmd := childCmd(t, mcptest.ModeGarbage)
	c, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	start := time.Now()
	cs, err := newClient(nil).Connect(c, &mcp.CommandTransport{Command: cmd, TerminateDuration: 200 * time.Millisecond}, nil)
	if err == nil {
		cs.Close()
		t.Fatal("Connect to a garbage server succeeded")
	}
	t.Logf("Connect failed after %v: %v", time.Since(start), err)
}

func TestGrandchild(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	cs, cmd := connectStdio(t, mcptest.ModeGrandchild, nil, mcptest.EnvPIDFile+"="+pidFile)
	exerciseBehave(t, cs, mcptest.ModeGrandchild, true)

	parent := mcptest.WaitPIDFile(t, pidFile+".parent")
	grandchild := mcptest.WaitPIDFile(t, pidFile)
	if parent != cmd.Process.Pid {
		t.Errorf("parent PID file says %d, the child is %d", parent, cmd.Process.Pid)
	}
	if grandchild == parent {
		t.Fatal("the grandchild PID is the parent's")
	}
	for _, pid := range []int{parent, grandchild} {
		if !mcptest.Alive(pid) {
			t.Fatalf("process %d is not running", pid)
		}
	}
	pgParent, err1 := syscall.Getpgid(parent)
	pgGrandchild, err2 := syscall.Getpgid(grandchild)
	if err1 != nil || err2 != nil || pgParent != pgGrandchild {
		t.Errorf("process groups: parent %d (%v), grandchild %d (%v); want the same", pgParent, err1, pgGrandchild, err2)
	}

	// SIGTERM to the group leaves the grandchild running; SIGKILL to the
	// group stops both.
	if err := syscall.Kill(-parent, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if !mcptest.Alive(grandchild) {
		t.Error("the grandchild did not survive SIGTERM")
	}
	if err := syscall.Kill(-parent, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, parent, grandchild)
}

// waitGone waits until none of pids is alive.
func waitGone(t *testing.T, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for _, pid := range pids {
		for mcptest.Alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d is still running", pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func TestIgnoreSIGTERM(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	cs, cmd := connectStdio(t, mcptest.ModeIgnoreSIGTERM, nil, mcptest.EnvPIDFile+"="+pidFile)
	if pid := mcptest.WaitPIDFile(t, pidFile); pid != cmd.Process.Pid {
		t.Errorf("PID file says %d, the child is %d", pid, cmd.Process.Pid)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if got := text(t, call(t, cs, "echo", map[string]any{"text": "alive"})); got != "alive" {
		t.Errorf("echo after SIGTERM = %q", got)
	}
	// Close closes stdin, waits, sends SIGTERM, waits, and then SIGKILL,
	// the only thing that stops this child.
	_ = cs.Close()
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("child state = %v, want killed by SIGKILL", cmd.ProcessState)
	}
}

// countingWriter counts what is written to it and keeps none of it.
type countingWriter struct{ n atomic.Int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n.Add(int64(len(p)))
	return len(p), nil
}

func TestFloodStderr(t *testing.T) {
	cmd := childCmd(t, mcptest.ModeFloodStderr)
	var stderr countingWriter
	cmd.Stderr = &stderr
	cs := connect(t, &mcp.CommandTransport{Command: cmd, TerminateDuration: 200 * time.Millisecond}, nil)
	if got := text(t, call(t, cs, "echo", map[string]any{"text": "over the flood"})); got != "over the flood" {
		t.Errorf("echo = %q", got)
	}
	deadline := time.Now().Add(waitFor)
	for stderr.n.Load() < 1<<20 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d bytes of stderr", stderr.n.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRepeatCursor(t *testing.T) {
	cs, _ := connectStdio(t, mcptest.ModeRepeatCursor, nil)
	checkRepeatCursor(t, cs)
}

// checkRepeatCursor checks that tools/list pages of cs never end.
func checkRepeatCursor(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	params := &mcp.ListToolsParams{}
	for range 2 {
		res, err := cs.ListTools(ctx(t), params)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Tools) != 1 || res.Tools[0].Name != mcptest.RepeatTool || res.NextCursor != mcptest.RepeatCursor {
			t.Fatalf("page = %+v", res)
		}
		params.Cursor = res.NextCursor
	}
	if err := cs.Ping(ctx(t), nil); err != nil {
		t.Errorf("ping: %v", err)
	}
}

func TestBadMetadata(t *testing.T) {
	cs, _ := connectStdio(t, mcptest.ModeBadMetadata, nil)
	res, err := cs.ListTools(ctx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]*mcp.Tool{}
	for _, tool := range res.Tools {
		tools[tool.Name] = tool
	}
	for _, name := range []string{mcptest.ToolNameWithSpaces, mcptest.ToolNameTooLong, mcptest.ToolHostileDescription, mcptest.ToolDeepSchema, mcptest.ToolRecursiveRef} {
		if tools[name] == nil {
			t.Errorf("no tool %q among %d", name, len(res.Tools))
		}
	}
	if n := len(mcptest.ToolNameTooLong); n != 65 {
		t.Errorf("the long name is %d bytes", n)
	}
	if tool := tools[mcptest.ToolHostileDescription]; tool != nil {
		d := tool.Description
		if len(d) != mcptest.HostileDescriptionBytes || d != mcptest.HostileDescription() {
			t.Errorf("hostile description is %d bytes, want %d", len(d), mcptest.HostileDescriptionBytes)
		}
		for _, s := range []string{"\u200b", "\u202e", "\u2066", "\x1b[31m", "\x1b]0;"} {
			if !strings.Contains(d, s) {
				t.Errorf("hostile description lacks %q", s)
			}
		}
	}
	if tool := tools[mcptest.ToolDeepSchema]; tool != nil {
		depth := 0
		for s, ok := tool.InputSchema.(map[string]any); ok; depth++ {
			props, _ := s["properties"].(map[string]any)
			s, ok = props["nested"].(map[string]any)
		}
		if depth != mcptest.DeepSchemaDepth {
			t.Errorf("deep schema depth = %d, want %d", depth, mcptest.DeepSchemaDepth)
		}
	}
	if tool := tools[mcptest.ToolRecursiveRef]; tool != nil {
		b, _ := json.Marshal(tool.InputSchema)
		if !strings.Contains(string(b), `"$ref":"#/$defs/node"`) {
			t.Errorf("recursive schema = %s", b)
		}
	}
}

// listChangedClient returns client options whose ToolListChangedHandler
// signals on the returned channel.
func listChangedClient() (*mcp.ClientOptions, <-chan struct{}) {
	changed := make(chan struct{}, 16)
	return &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	}, changed
}

// checkListChanged calls mutate twice and checks the notification and the
// changed list each time.
func checkListChanged(t *testing.T, cs *mcp.ClientSession, changed <-chan struct{}) {
	t.Helper()
	for i := 1; i <= 2; i++ {
		call(t, cs, "mutate", nil)
		select {
		case <-changed:
		case <-time.After(waitFor):
			t.Fatalf("no notifications/tools/list_changed after mutate %d", i)
		}
		res, err := cs.ListTools(ctx(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		var added bool
		for _, tool := range res.Tools {
			if tool.Name == fmt.Sprintf("added_%d", i) {
				added = true
			}
			if tool.Name == "echo" && !strings.Contains(tool.Description, fmt.Sprintf("revision %d", i)) {
				t.Errorf("echo description after mutate %d = %q", i, tool.Description)
			}
		}
		if !added {
			t.Errorf("no tool added_%d", i)
		}
	}
}

func TestListChangedStdio(t *testing.T) {
	for _, version := range []string{"", "2025-11-25"} {
		t.Run("protocol="+version, func(t *testing.T) {
			opts, changed := listChangedClient()
			cmd := childCmd(t, mcptest.ModeListChanged)
			c, cancel := context.WithTimeout(context.Background(), waitFor)
			defer cancel()
			cs, err := newClient(opts).Connect(c, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			checkListChanged(t, cs, changed)
		})
	}
}

func TestServeHTTP(t *testing.T) {
	streamable, sse := mcptest.ServeHTTP(t, mcptest.ModeBehave)
	t.Run("streamable", func(t *testing.T) {
		cs := connect(t, &mcp.StreamableClientTransport{Endpoint: streamable}, nil)
		exerciseBehave(t, cs, mcptest.ModeBehave, false)
	})
	t.Run("sse", func(t *testing.T) {
		cs := connect(t, &mcp.SSEClientTransport{Endpoint: sse}, nil)
		exerciseBehave(t, cs, mcptest.ModeBehave, false)
	})
}

func TestHTTPListChanged(t *testing.T) {
	streamable, sse := mcptest.ServeHTTP(t, mcptest.ModeListChanged)
	for name, transport := range map[string]mcp.Transport{
		"streamable": &mcp.StreamableClientTransport{Endpoint: streamable},
		"sse":        &mcp.SSEClientTransport{Endpoint: sse},
	} {
		t.Run(name, func(t *testing.T) {
			opts, changed := listChangedClient()
			cs := connect(t, transport, opts)
			checkListChanged(t, cs, changed)
		})
	}
}

func TestHTTPHangCall(t *testing.T) {
	// A server session closes only once its handlers return, and hang
	// returns only when the servers stop at the end of the test, after
	// every cleanup registered below. So the sessions close in the
	// background, and the test waits for them once the servers are gone.
	var closing sync.WaitGroup
	t.Cleanup(closing.Wait)
	streamable, sse := mcptest.ServeHTTP(t, mcptest.ModeHangCall)
	for _, transport := range []mcp.Transport{
		&mcp.StreamableClientTransport{Endpoint: streamable},
		&mcp.SSEClientTransport{Endpoint: sse},
	} {
		cs := dial(t, transport, nil)
		t.Cleanup(func() { closing.Go(func() { _ = cs.Close() }) })
		// testwait: the deadline under test, which must cut the hung call
		c, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		if _, err := cs.CallTool(c, &mcp.CallToolParams{Name: "hang"}); err == nil {
			t.Fatalf("%T: hang returned", transport)
		}
		if got := text(t, call(t, cs, "echo", map[string]any{"text": "x"})); got != "x" {
			t.Errorf("%T: echo next to a hanging call = %q", transport, got)
		}
	}
}

// status returns the status code of a request to url.
func status(t *testing.T, method, url, contentType string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx(t), method, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	return resp.StatusCode
}

func TestServeStreamableOnly(t *testing.T) {
	url := mcptest.ServeStreamableOnly(t, mcptest.ModeBehave)
	if got := status(t, http.MethodGet, url, ""); got != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d, want 405", got)
	}
	cs := connect(t, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if got := text(t, call(t, cs, "echo", map[string]any{"text": "streamable"})); got != "streamable" {
		t.Errorf("echo = %q", got)
	}
	c, cancel := context.WithTimeout(context.Background(), testwait.Patience)
	defer cancel()
	if cs, err := newClient(nil).Connect(c, &mcp.SSEClientTransport{Endpoint: url}, nil); err == nil {
		cs.Close()
		t.Error("an SSE client connected to a Streamable-only server")
	}
}

func TestServeStreamableOnlyRaw(t *testing.T) {
	t.Run("repeat-cursor", func(t *testing.T) {
		url := mcptest.ServeStreamableOnly(t, mcptest.ModeRepeatCursor)
		checkRepeatCursor(t, connect(t, &mcp.StreamableClientTransport{Endpoint: url}, nil))
	})
	t.Run("bad-metadata", func(t *testing.T) {
		url := mcptest.ServeStreamableOnly(t, mcptest.ModeBadMetadata)
		cs := connect(t, &mcp.StreamableClientTransport{Endpoint: url}, nil)
		res, err := cs.ListTools(ctx(t), nil)
		if err != nil || len(res.Tools) != 5 {
			t.Fatalf("ListTools: %v, %v", res, err)
		}
	})
}

func TestServeSSEOnly(t *testing.T) {
	url := mcptest.ServeSSEOnly(t, mcptest.ModeBehave)
	if got := status(t, http.MethodPost, url, "application/json"); got != http.StatusNotFound {
		t.Errorf("POST: %d, want 404", got)
	}
	c, cancel := context.WithTimeout(context.Background(), testwait.Patience)
	defer cancel()
	if cs, err := newClient(nil).Connect(c, &mcp.StreamableClientTransport{Endpoint: url}, nil); err == nil {
		cs.Close()
		t.Error("a Streamable HTTP client connected to an SSE-only server")
	}
	cs := connect(t, &mcp.SSEClientTransport{Endpoint: url}, nil)
	if got := text(t, call(t, cs, "echo", map[string]any{"text": "sse"})); got != "sse" {
		t.Errorf("echo = %q", got)
	}
}

// TestServeRawHTTP: mode described over Streamable HTTP with event
// streams and over legacy SSE lists its tools to a go-sdk client, and
// answers a call.
func TestServeRawHTTP(t *testing.T) {
	for name, tr := range map[string]mcp.Transport{
		"events": &mcp.StreamableClientTransport{Endpoint: mcptest.ServeRawEvents(t, mcptest.ModeDescribed)},
		"sse":    &mcp.SSEClientTransport{Endpoint: mcptest.ServeSSEOnly(t, mcptest.ModeDescribed)},
	} {
		t.Run(name, func(t *testing.T) {
			cs := connect(t, tr, nil)
			res, err := cs.ListTools(ctx(t), nil)
			if err != nil || len(res.Tools) != 2+mcptest.DescribedLookups || res.Tools[0].Name != mcptest.ToolReport {
				t.Fatalf("ListTools: %v, %v", res, err)
			}
			if got := text(t, call(t, cs, "lookup_0000", nil)); got != "ok" {
				t.Errorf("call = %q", got)
			}
		})
	}
}

// headerTransport adds a header to every request.
type headerTransport struct{ key, value string }

func (h headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set(h.key, h.value)
	return http.DefaultTransport.RoundTrip(req)
}

func TestServeHTTPWithHeaderCheck(t *testing.T) {
	url := mcptest.ServeHTTPWithHeaderCheck(t, mcptest.ModeBehave, "Authorization", "Bearer s3cret")
	if got := status(t, http.MethodPost, url, "application/json"); got != http.StatusUnauthorized {
		t.Errorf("POST without the header: %d, want 401", got)
	}
	for _, value := range []string{"", "Bearer wrong"} {
		transport := &mcp.StreamableClientTransport{Endpoint: url}
		if value != "" {
			transport.HTTPClient = &http.Client{Transport: headerTransport{"Authorization", value}}
		}
		c, cancel := context.WithTimeout(context.Background(), testwait.Patience)
		if cs, err := newClient(nil).Connect(c, transport, nil); err == nil {
			cs.Close()
			t.Errorf("connected with Authorization %q", value)
		}
		cancel()
	}
	cs := connect(t, &mcp.StreamableClientTransport{
		Endpoint:   url,
		HTTPClient: &http.Client{Transport: headerTransport{"Authorization", "Bearer s3cret"}},
	}, nil)
	if got := text(t, call(t, cs, "echo", map[string]any{"text": "authorized"})); got != "authorized" {
		t.Errorf("echo = %q", got)
	}
}

// TestCatalog lists mode catalog for two services: CatalogTools tools of
// unique names, each with an object schema of described properties and
// a description that names its service.
func TestCatalog(t *testing.T) {
	t.Parallel()
	for _, service := range []string{"0", "42"} {
		cs, _ := connectStdio(t, mcptest.ModeCatalog, nil, mcptest.EnvService+"="+service)
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Tools) != mcptest.CatalogTools {
			t.Fatalf("service %s: %d tools, want %d", service, len(res.Tools), mcptest.CatalogTools)
		}
		seen := map[string]bool{}
		for _, tool := range res.Tools {
			schema, _ := tool.InputSchema.(map[string]any)
			props, _ := schema["properties"].(map[string]any)
			if seen[tool.Name] || len(props) < 3 || schema["type"] != "object" || !strings.HasSuffix(tool.Description, "(service "+service+")") || tool.Annotations == nil {
				t.Fatalf("service %s: tool %+v", service, tool)
			}
			seen[tool.Name] = true
		}
	}
}
