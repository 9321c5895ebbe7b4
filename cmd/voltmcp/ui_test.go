package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/voltmcp/voltmcp/internal/mcptest"
	"github.com/voltmcp/voltmcp/internal/testwait"
	"github.com/voltmcp/voltmcp/ui"
)

// uiWorkspace writes a project with the mcptest server in mode behave
// ("demo") and one in mode hostile-text under a hostile title ("evil"),
// lists both into the cache of a new home, and returns the CLI's env for
// it and the project's config file.
func uiWorkspace(t *testing.T) (e *env, config string) {
	t.Helper()
	project := t.TempDir()
	cmd, args, cenv := mcptest.Command("behave")
	hcmd, hargs, henv := mcptest.Command(mcptest.ModeHostileText)
	doc := map[string]any{"version": 1, "servers": map[string]any{
		"demo": map[string]any{"command": cmd, "args": args, "env": cenv},
		"evil": map[string]any{"command": hcmd, "args": hargs, "env": henv, "title": hostileTitle},
	}}
	data, _ := json.Marshal(doc)
	os.MkdirAll(filepath.Join(project, ".volt"), 0o755)
	config = filepath.Join(project, ".volt", "mcp.json")
	if err := os.WriteFile(config, data, 0o644); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	fenv := fakeEnv(t, map[string]string{"HOME": home, "PATH": os.Getenv("PATH")})
	if r := runCLI(t, fenv, "refresh", "--home", home, "--project", project, "--approve"); r.code != exitOK {
		t.Fatalf("refresh:\n%s", r)
	}
	e = &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard, getenv: fenv}
	e.g.home, e.g.project, e.g.approve = home, project, true
	if err := e.g.resolve(fenv); err != nil {
		t.Fatal(err)
	}
	return e, config
}

// frames wraps the UI's model and keeps the last frame it drew, for a
// test to wait on.
type frames struct {
	m    tea.Model
	last atomic.Pointer[string]
}

func (f *frames) Init() tea.Cmd { return f.m.Init() }
func (f *frames) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	_, cmd := f.m.Update(msg)
	return f, cmd
}
func (f *frames) View() tea.View {
	v := f.m.View()
	s := v.Content
	f.last.Store(&s)
	return v
}

// frame is the last frame as the model drew it.
func (f *frames) frame() string {
	if p := f.last.Load(); p != nil {
		return *p
	}
	return ""
}

// waitFrame waits for a frame that holds every one of want.
func waitFrame(t *testing.T, f *frames, want ...string) string {
	t.Helper()
	var got string
	defer func() {
		if t.Failed() {
			t.Logf("the last frame:\n%s", got)
		}
	}()
	testwait.For(t, "a frame with "+strings.Join(want, ", "), func() bool {
		got = f.frame()
		for _, w := range want {
			if !strings.Contains(ansi.Strip(got), w) {
				return false
			}
		}
		return true
	})
	return got
}

// hostileMarks are what the hostile server's text and title hide: none
// may reach the terminal.
var hostileMarks = []string{"pwned", "evil.example", "\x1b[8m", "\x1b[31mEVIL", "\u202e", "\u2066", "\u200b", "\ufeff", "\U000E0001", "\u009b", "\x00", "\x07"}

// checkFrame fails when a frame is larger than the terminal or holds what
// the hostile server hid. The UI draws these frames plain (NO_COLOR), so
// a frame holds no escape sequence at all.
func checkFrame(t *testing.T, frame string, w, h int) {
	t.Helper()
	if i := strings.IndexAny(frame, "\x1b\u009b"); i >= 0 {
		t.Errorf("a plain frame holds an escape sequence at byte %d: %q", i, frame[max(0, i-20):min(len(frame), i+20)])
	}
	lines := strings.Split(frame, "\n")
	if len(lines) > h {
		t.Errorf("the frame has %d lines, more than the terminal's %d:\n%s", len(lines), h, frame)
	}
	for i, l := range lines {
		if n := ansi.StringWidth(l); n > w {
			t.Errorf("line %d is %d cells wide, more than the terminal's %d: %q", i+1, n, w, l)
		}
	}
	for _, bad := range hostileMarks {
		if strings.Contains(frame, bad) {
			t.Errorf("the frame holds %q from the hostile server:\n%q", bad, frame)
		}
	}
}

// TestUIListKeysAndEvents drives `voltmcp ui`'s model over a real engine
// (served over the RPC, as without a daemon) with real servers: the
// list, a move, a disable that the config file records, an update that
// only an event can bring, a server's tools and a tool's describe, sort,
// filter, help and resize; no frame is larger than the terminal and none
// holds what the hostile server hid.
func TestUIListKeysAndEvents(t *testing.T) {
	e, config := uiWorkspace(t)
	ctx := testwait.Context(t)
	events := ui.NewEvents()
	conn, err := openRPC(ctx, e, false, events.Notify)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if conn.via != "own engine" {
		t.Fatalf("via %q, want own engine (no daemon runs)", conn.via)
	}
	f := &frames{m: ui.New(ctx, ui.Options{Client: conn.client, Events: events, Via: conn.via, Plain: true})}
	tm := teatest.NewTestModel(t, f, teatest.WithInitialTermSize(80, 24))

	fr := waitFrame(t, f, "> demo", "evil (EVIL", "MCP 2 configured / 0 connected / 0 auth")
	checkFrame(t, fr, 80, 24)

	// e disables demo, written to the config as 'voltmcp disable' does.
	before, _ := os.ReadFile(config)
	tm.Type("e")
	fr = waitFrame(t, f, "disable demo: disabled")
	checkFrame(t, fr, 80, 24)
	after, _ := os.ReadFile(config)
	if bytes.Equal(before, after) {
		t.Errorf("the config file did not change:\n%s", after)
	}
	if r := runCLI(t, e.getenv, "servers", "--json", "--home", e.g.home, "--project", e.g.project, "--approve"); !strings.Contains(r.stdout, `"disabled"`) {
		t.Errorf("voltmcp servers does not see demo disabled:\n%s", r)
	}

	// A connect the UI did not make shows by its events alone.
	if err := conn.client.Call(ctx, "connect_mcp_server", map[string]string{"id": "evil"}, nil); err != nil {
		t.Fatal(err)
	}
	fr = waitFrame(t, f, "MCP 2 configured / 1 connected / 0 auth", "ready")
	checkFrame(t, fr, 80, 24)

	// j moves to evil; enter shows its tools and the describe of the
	// first, whose description is the hostile text.
	tm.Type("j")
	waitFrame(t, f, "> evil")
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
	fr = waitFrame(t, f, "tools of evil", "> add", "hostile_text", "risk: write")
	checkFrame(t, fr, 80, 24)
	// / searches the tools: the one match is described.
	tm.Type("/hostile")
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
	fr = waitFrame(t, f, "1 match /hostile", "> hostile_text", "Searches", "pin: pinned")
	checkFrame(t, fr, 80, 24)

	// esc clears the search, esc again goes back.
	tm.Type("/zzz")
	waitFrame(t, f, "no tool matches /hostilezzz")
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEscape})
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEscape})
	waitFrame(t, f, "SERVER↓")

	// s sorts by the next column; / filters the list.
	tm.Type("s")
	waitFrame(t, f, "sorted by on", "ON↓")
	tm.Type("/dem")
	fr = waitFrame(t, f, "/dem█")
	if strings.Contains(fr, "evil") {
		t.Errorf("the filter /dem still lists evil:\n%s", fr)
	}
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEscape})
	waitFrame(t, f, "> demo", "evil")

	// ? shows every key; a resize redraws to the new size.
	tm.Type("?")
	waitFrame(t, f, "reverse the sort", "connect/disconnect")
	tm.Type("x")
	tm.Send(tea.WindowSizeMsg{Width: 60, Height: 16})
	fr = waitFrame(t, f, "SERVER")
	testwait.For(t, "a frame of 60x16", func() bool {
		fr = f.frame()
		return len(strings.Split(fr, "\n")) == 16
	})
	checkFrame(t, fr, 60, 16)
	tm.Send(tea.WindowSizeMsg{Width: 160, Height: 40})
	fr = waitFrame(t, f, "LIFECYCLE", "TRANSPORT", "CONNECTED")
	checkFrame(t, fr, 160, 40)

	tm.Type("q")
	tm.WaitFinished(t, teatest.WithFinalTimeout(time.Until(testwait.Deadline(t))))
	out, _ := io.ReadAll(tm.FinalOutput(t))
	for _, bad := range hostileMarks {
		// The terminal gets BEL from the UI itself: the end of the window
		// title it sets.
		if bad != "\x07" && bytes.Contains(out, []byte(bad)) {
			t.Errorf("the terminal got %q from the hostile server", bad)
		}
	}
	if !utf8.Valid(out) {
		t.Errorf("the terminal got invalid UTF-8")
	}
}

// TestStatusLine checks `voltmcp status --line` without a daemon: it
// counts from the config and the cache and starts no server.
func TestStatusLine(t *testing.T) {
	e, _ := uiWorkspace(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--approve"}, "MCP 2 configured / 0 connected / 0 auth\n"},
		{[]string{"--no-approve"}, "MCP 2 configured / 0 connected / 0 auth\n"},
		{[]string{"--approve", "--json"}, `{"auth":0,"configured":2,"connected":0,"errors":0,"untrusted":0}` + "\n"},
	} {
		r := runCLI(t, e.getenv, append([]string{"status", "--line", "--home", e.g.home, "--project", e.g.project}, tc.args...)...)
		if r.code != exitOK || r.stdout != tc.want {
			t.Errorf("status --line %v:\n%s\nwant stdout %q", tc.args, r, tc.want)
		}
	}
	if r := runCLI(t, e.getenv, "status", "--line", "demo", "--home", e.g.home); r.code != exitUsage {
		t.Errorf("status --line SERVER: want a usage error\n%s", r)
	}
}

// TestUITmux runs the built binary in a real terminal: tmux at 80x24,
// keys sent with send-keys, the screen read with capture-pane.
func TestUITmux(t *testing.T) {
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Skip("tmux is not installed (apt-get install tmux); this test runs voltmcp ui in it")
	}
	e, config := uiWorkspace(t)
	bin := filepath.Join(t.TempDir(), "voltmcp")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	sock := filepath.Join(t.TempDir(), "tmux.sock")
	session := "voltmcp-ui"
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(tmux, append([]string{"-S", sock}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	script := strings.Join([]string{"HOME=" + shellQuote(e.g.home), "TERM=xterm-256color", "NO_COLOR=1", shellQuote(bin), "ui",
		"--home", shellQuote(e.g.home), "--project", shellQuote(e.g.project), "--approve"}, " ")
	run("-f", "/dev/null", "new-session", "-d", "-s", session, "-x", "80", "-y", "24", "env -u TMUX "+script+"; sleep 600")
	t.Cleanup(func() { exec.Command(tmux, "-S", sock, "kill-server").Run() })
	capture := func() string { return run("capture-pane", "-p", "-e", "-t", session) }
	waitPane := func(want ...string) string {
		t.Helper()
		var got string
		defer func() {
			if t.Failed() {
				t.Logf("the last pane:\n%s", got)
			}
		}()
		testwait.For(t, "a pane with "+strings.Join(want, ", "), func() bool {
			got = capture()
			for _, w := range want {
				if !strings.Contains(got, w) {
					return false
				}
			}
			return true
		})
		return got
	}
	pane := waitPane("> demo", "evil (EVIL", "MCP 2 configured")
	before, _ := os.ReadFile(config)
	run("send-keys", "-t", session, "j")
	waitPane("> evil")
	run("send-keys", "-t", session, "k")
	waitPane("> demo")
	run("send-keys", "-t", session, "e")
	pane = waitPane("disable demo: disabled")
	if testing.Verbose() {
		t.Logf("the pane:\n%s", ansi.Strip(pane))
	}
	after, _ := os.ReadFile(config)
	if bytes.Equal(before, after) {
		t.Errorf("the config file did not change:\n%s", after)
	}
	run("send-keys", "-t", session, "j", "Enter")
	pane += waitPane("tools of evil", "hostile_text")
	run("send-keys", "-t", session, "/hostile", "Enter")
	pane += waitPane("> hostile_text", "Searches")
	if testing.Verbose() {
		t.Logf("the pane:\n%s", ansi.Strip(capture()))
	}
	for _, bad := range hostileMarks {
		if strings.Contains(pane, bad) {
			t.Errorf("the pane holds %q from the hostile server:\n%q", bad, pane)
		}
	}
	run("send-keys", "-t", session, "q")
}

// TestUINeedsATerminal checks that ui, given a pipe, says what to use
// instead and draws nothing.
func TestUINeedsATerminal(t *testing.T) {
	r := runCLI(t, nil, "ui")
	if r.code != exitUsage || r.stdout != "" || !strings.Contains(r.stderr, "needs a terminal") {
		t.Errorf("ui on a pipe:\n%s", r)
	}
	if r := runCLI(t, nil, "ui", "extra"); r.code != exitUsage {
		t.Errorf("ui with an argument:\n%s", r)
	}
}

// TestUILogs opens the log of a server that died at start, over a real
// engine: its stderr lines, scrubbed of its secret and cleaned, and the
// error, newest at the bottom; a line it logs later shows while the log
// is followed; f stops following and esc goes back.
func TestUILogs(t *testing.T) {
	const secret = "ui_log_canary_7c1d"
	t.Setenv("VOLTMCP_UI_LOG_SECRET", secret)
	project := t.TempDir()
	marker := filepath.Join(project, "more")
	script := `echo "starting with $T" >&2; printf 'bad \033[31mEVIL\033]0;pwned\007 \342\200\256 end\n' >&2; ` +
		`if [ -e "` + marker + `" ]; then echo "second start" >&2; fi; echo "fatal: no config" >&2; exit 3`
	doc := map[string]any{"version": 1, "servers": map[string]any{
		"crash": map[string]any{"command": "/bin/sh", "args": []string{"-c", script}, "env": map[string]string{"T": "${env:VOLTMCP_UI_LOG_SECRET}"}},
	}}
	data, _ := json.Marshal(doc)
	os.MkdirAll(filepath.Join(project, ".volt"), 0o755)
	if err := os.WriteFile(filepath.Join(project, ".volt", "mcp.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	fenv := fakeEnv(t, map[string]string{"HOME": home, "PATH": os.Getenv("PATH"), "VOLTMCP_UI_LOG_SECRET": secret})
	e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard, getenv: fenv}
	e.g.home, e.g.project, e.g.approve = home, project, true
	if err := e.g.resolve(fenv); err != nil {
		t.Fatal(err)
	}
	ctx := testwait.Context(t)
	events := ui.NewEvents()
	conn, err := openRPC(ctx, e, false, events.Notify)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	f := &frames{m: ui.New(ctx, ui.Options{Client: conn.client, Events: events, Via: conn.via, Plain: true})}
	tm := teatest.NewTestModel(t, f, teatest.WithInitialTermSize(80, 24))
	waitFrame(t, f, "> crash")

	tm.Type("c")
	waitFrame(t, f, "connect crash")
	tm.Type("l")
	fr := waitFrame(t, f, "log of crash", "following", "starting with [redacted]", "fatal: no config", "error")
	checkFrame(t, fr, 80, 24)
	if strings.Contains(fr, secret) || strings.Contains(fr, "second start") {
		t.Errorf("the log screen:\n%s", fr)
	}

	// Followed: the next start's lines show without a key.
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := conn.client.Call(ctx, "connect_mcp_server", map[string]string{"id": "crash"}, nil); err == nil {
		t.Fatal("connect of a server that exits")
	}
	fr = waitFrame(t, f, "second start")
	checkFrame(t, fr, 80, 24)

	// f stops following; esc goes back to the list.
	tm.Type("f")
	testwait.For(t, "the log no longer followed", func() bool {
		fr := f.frame()
		return strings.Contains(fr, "log of crash") && !strings.Contains(fr, "following")
	})
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEscape})
	waitFrame(t, f, "SERVER↓", "> crash")
	tm.Type("q")
	tm.WaitFinished(t, teatest.WithFinalTimeout(time.Until(testwait.Deadline(t))))
}
