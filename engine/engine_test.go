package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestLazyServerConnectsOnUseAndCaches(t *testing.T) {
	t.Parallel()
	opts := workspace(t, map[string]server{"good": stdio("behave", nil)}, nil)
	e := start(t, opts)
	if s, _ := e.Server("good"); s.Status != StatusCold || s.ToolCounts.Cached != 0 {
		t.Fatalf("lazy server before use: %+v", s)
	}
	if len(children(opts.Project, opts.Home)) != 0 {
		t.Fatal("a lazy server started without being used")
	}
	res, err := e.callUngated(testwait.Context(t), "good", "echo", map[string]any{"text": "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if text(res) != "hi" {
		t.Errorf("echo = %q", text(res))
	}
	s := waitStatus(t, e, "good", StatusReady)
	if s.ToolCounts.Cached < 6 || s.LastConnectedAt == nil || s.Transport != cue.TransportStdio {
		t.Errorf("summary after use: %+v", s)
	}
	m, _ := e.Metadata("good")
	if m == nil || m.Hash == "" || m.Name != "mcptest-behave" || m.Tools[0].Hash == "" {
		t.Fatalf("metadata: %+v", m)
	}
	info, err := os.Stat(cachePath(t, opts, "good"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("cache file: %v %v", info, err)
	}

	// A second engine knows the tools from the cache, without a process.
	e.Close()
	e2 := start(t, opts)
	s2, _ := e2.Server("good")
	m2, _ := e2.Metadata("good")
	if s2.Status != StatusCold || m2 == nil || m2.Hash != m.Hash || len(children(opts.Project, opts.Home)) != 0 {
		t.Errorf("from cache: status %s, metadata %v, children %v", s2.Status, m2 != nil, children(opts.Project, opts.Home))
	}
}

func TestCorruptCacheIsADiagnostic(t *testing.T) {
	t.Parallel()
	opts := workspace(t, map[string]server{"good": stdio("behave", nil)}, nil)
	path := cachePath(t, opts, "good")
	os.MkdirAll(filepath.Dir(path), 0o700)
	os.WriteFile(path, []byte("{not json"), 0o600)
	e := start(t, opts)
	s, _ := e.Server("good")
	if s.Status != StatusCold || !strings.Contains(s.CacheError, "corrupt") {
		t.Fatalf("summary: %+v", s)
	}
	if err := e.Connect(testwait.Context(t), "good"); err != nil {
		t.Fatal(err)
	}
	if s, _ := e.Server("good"); s.CacheError != "" || s.ToolCounts.Cached == 0 {
		t.Errorf("after connect: %+v", s)
	}
}

func TestGrandchildDiesWithTheServer(t *testing.T) {
	t.Parallel()
	pidfile := filepath.Join(t.TempDir(), "pid")
	opts := workspace(t, map[string]server{"gc": stdio("grandchild", nil, "VOLTMCP_TESTSERVER_PIDFILE="+pidfile)}, nil)
	e := start(t, opts)
	if err := e.Connect(testwait.Context(t), "gc"); err != nil {
		t.Fatal(err)
	}
	grandchild, parent := readPID(t, pidfile), readPID(t, pidfile+".parent")
	if !alive(grandchild) || !alive(parent) {
		t.Fatal("processes not running")
	}
	if err := e.Disconnect(context.Background(), "gc"); err != nil {
		t.Fatal(err)
	}
	waitGone(t, parent, grandchild)
	if s, _ := e.Server("gc"); s.Status != StatusDisconnected {
		t.Errorf("status %s", s.Status)
	}
}

func TestSigkillAfterSigtermIsIgnored(t *testing.T) {
	t.Parallel()
	pidfile := filepath.Join(t.TempDir(), "pid")
	opts := workspace(t, map[string]server{"stubborn": stdio("ignore-sigterm", nil, "VOLTMCP_TESTSERVER_PIDFILE="+pidfile)}, nil)
	e := start(t, opts)
	if err := e.Connect(testwait.Context(t), "stubborn"); err != nil {
		t.Fatal(err)
	}
	pid := readPID(t, pidfile)
	e.Close()
	waitGone(t, pid)
}

func TestHungServerAffectsOnlyItself(t *testing.T) {
	t.Parallel()
	opts := workspace(t, map[string]server{
		"hang":    stdio("hang-init", server{"connectTimeoutMs": 300}),
		"garbage": stdio("garbage", server{"connectTimeoutMs": 2000}),
		"good":    stdio("behave", nil),
	}, nil)
	e := start(t, opts)
	ctx := testwait.Context(t)
	err := e.Connect(ctx, "hang")
	if err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Errorf("hang-init: %v", err)
	}
	if err := e.Connect(ctx, "garbage"); err == nil {
		t.Error("garbage server connected")
	}
	if s, _ := e.Server("hang"); s.Status != StatusError || s.LastError == "" {
		t.Errorf("hang summary: %+v", s)
	}
	if _, err := e.callUngated(ctx, "good", "echo", map[string]any{"text": "still here"}); err != nil {
		t.Errorf("good server affected: %v", err)
	}
}

func TestCallTimeout(t *testing.T) {
	t.Parallel()
	// 2 s: the timeout must cut the hung call, and leave the echo after it
	// room on a loaded machine.
	opts := workspace(t, map[string]server{"h": stdio("hang-call", server{"callTimeoutMs": 2000})}, nil)
	e := start(t, opts)
	ctx := testwait.Context(t)
	_, err := e.callUngated(ctx, "h", "hang", map[string]any{})
	if err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("hang call: %v", err)
	}
	if res, err := e.callUngated(ctx, "h", "echo", map[string]any{"text": "after"}); err != nil || text(res) != "after" {
		t.Errorf("server unusable after a timed-out call: %v", err)
	}
}

func TestRequestTimeoutFromEnvironment(t *testing.T) {
	t.Parallel()
	// callTimeoutMs is 10 minutes; VOLTMCP_REQUEST_TIMEOUT, an operator's
	// brake, lowers it.
	opts := workspace(t, map[string]server{"h": stdio("hang-call", server{"callTimeoutMs": 600000})}, nil)
	lookup := opts.LookupEnv
	opts.LookupEnv = func(k string) (string, bool) {
		if k == "VOLTMCP_REQUEST_TIMEOUT" {
			return "300ms", true
		}
		return lookup(k)
	}
	e := start(t, opts)
	_, err := e.callUngated(testwait.Context(t), "h", "hang", map[string]any{})
	if err == nil || !strings.Contains(err.Error(), "timed out after 300ms") {
		t.Fatalf("hang call: %v", err)
	}
}

func TestCallCancellation(t *testing.T) {
	t.Parallel()
	opts := workspace(t, map[string]server{"s": stdio("behave", nil)}, nil)
	e := start(t, opts)
	if err := e.Connect(testwait.Context(t), "s"); err != nil {
		t.Fatal(err)
	}
	// A call that is not cancelled runs past the test's patience and ends
	// with DeadlineExceeded instead.
	ctx, cancel := context.WithCancel(testwait.Context(t))
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	_, err := e.callUngated(ctx, "s", "slow", map[string]any{"ms": 10 * 60 * 1000})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancel: %v after %s", err, time.Since(start))
	}
}

func TestKeepAliveReconnectsAfterCrash(t *testing.T) {
	t.Parallel()
	opts := workspace(t, map[string]server{"k": stdio("crash-call", server{"lifecycle": "keep-alive"})}, nil)
	e := start(t, opts)
	events, stop := e.Subscribe(256)
	defer stop()
	waitStatus(t, e, "k", StatusReady)
	if _, err := e.callUngated(testwait.Context(t), "k", "crash", map[string]any{}); err == nil {
		t.Fatal("crash call succeeded")
	}
	// error, then connecting, then ready again, without anyone asking.
	var seen []Status
	timeout := time.After(testwait.Patience)
	for {
		select {
		case ev := <-events:
			if ev.Type == EventServerStatusChanged && ev.Server == "k" {
				seen = append(seen, ev.Status)
				if ev.Status == StatusError && !strings.Contains(ev.Error, `server "k" exited (exit status 3)`) {
					t.Errorf("crash error: %q", ev.Error)
				}
			}
			if len(seen) >= 2 && seen[len(seen)-1] == StatusReady && contains(seen, StatusError) {
				return
			}
		case <-timeout:
			t.Fatalf("no reconnect; statuses %v", seen)
		}
	}
}

func contains(list []Status, s Status) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestIdleDisconnect(t *testing.T) {
	// 2 s of idleness, against calls 100 ms apart: on a loaded machine a
	// gap stays well below it.
	opts := workspace(t, map[string]server{"s": stdio("behave", server{"idleTimeoutMs": 2000})}, nil)
	e := start(t, opts)
	ctx := testwait.Context(t)
	if _, err := e.callUngated(ctx, "s", "echo", map[string]any{"text": "x"}); err != nil {
		t.Fatal(err)
	}
	// Calls closer together than the idle timeout keep the server.
	before := children()
	for range 6 {
		time.Sleep(100 * time.Millisecond)
		if _, err := e.callUngated(ctx, "s", "echo", map[string]any{"text": "x"}); err != nil {
			t.Fatal(err)
		}
	}
	if after := children(); !slices.Equal(after, before) {
		t.Errorf("the server's process changed while in use: %v, then %v", before, after)
	}
	// A call longer than the idle timeout is not cut off.
	if _, err := e.callUngated(ctx, "s", "slow", map[string]any{"ms": 3000}); err != nil {
		t.Fatalf("slow call cut by the idle timer: %v", err)
	}
	waitStatus(t, e, "s", StatusCold)
	deadline := testwait.Deadline(t)
	for len(children()) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if len(children()) > 0 {
		t.Error("process still running after idle disconnect")
	}
	// It starts again on use.
	if _, err := e.callUngated(ctx, "s", "echo", map[string]any{"text": "again"}); err != nil {
		t.Fatal(err)
	}
}

func TestStderrIsBounded(t *testing.T) {
	t.Parallel()
	opts := workspace(t, map[string]server{"loud": stdio("flood-stderr", nil)}, nil)
	e := start(t, opts)
	if err := e.Connect(testwait.Context(t), "loud"); err != nil {
		t.Fatal(err)
	}
	deadline := testwait.Deadline(t)
	for {
		s, _ := e.Server("loud")
		if s.StderrBytes > 4*stderrKeep {
			if len(s.Stderr) > stderrShow {
				t.Errorf("summary stderr %d bytes", len(s.Stderr))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stderr bytes %d", s.StderrBytes)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestChildEnvironmentIsRestricted(t *testing.T) {
	t.Parallel()
	const canary = "ghp_CANARY_host_secret_0123456789"
	opts := workspace(t, map[string]server{
		"plain":   stdio("behave", nil),
		"allowed": stdio("behave", server{"envAllowlist": []string{"CANARY_TOKEN"}}),
		"ref":     stdio("behave", server{"env": map[string]string{"GIVEN": "${env:CANARY_TOKEN}"}}),
	}, nil)
	host := opts.LookupEnv
	opts.LookupEnv = func(k string) (string, bool) {
		if k == "CANARY_TOKEN" {
			return canary, true
		}
		return host(k)
	}
	e := start(t, opts)
	ctx := testwait.Context(t)
	envOf := func(id string) string {
		res, err := e.callUngated(ctx, id, "env", map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		return text(res)
	}
	if env := envOf("plain"); strings.Contains(env, canary) || !strings.Contains(env, "PATH=") {
		t.Errorf("plain server sees the host secret or lacks PATH:\n%s", env)
	}
	if env := envOf("allowed"); !strings.Contains(env, "CANARY_TOKEN="+canary) {
		t.Errorf("allowlisted variable missing")
	}
	if env := envOf("ref"); !strings.Contains(env, "GIVEN="+canary) || strings.Contains(env, "CANARY_TOKEN=") {
		t.Errorf("explicit env not resolved, or the host variable leaked")
	}
	for _, s := range e.Servers() {
		if strings.Contains(s.LastError+s.Stderr+s.SourceLabel, canary) {
			t.Errorf("summary leaks the canary: %+v", s)
		}
	}
}

func TestMissingEnvIsAClearError(t *testing.T) {
	t.Parallel()
	opts := workspace(t, map[string]server{"s": stdio("behave", server{"env": map[string]string{"T": "${env:NOT_SET_ANYWHERE}"}})}, nil)
	e := start(t, opts)
	err := e.Connect(testwait.Context(t), "s")
	if err == nil || !strings.Contains(err.Error(), "NOT_SET_ANYWHERE is not set") {
		t.Fatalf("err = %v", err)
	}
}

func TestListChangedRefreshes(t *testing.T) {
	t.Parallel()
	opts := workspace(t, map[string]server{"m": stdio("list-changed", nil)}, nil)
	e := start(t, opts)
	ctx := testwait.Context(t)
	if err := e.Connect(ctx, "m"); err != nil {
		t.Fatal(err)
	}
	before, _ := e.Metadata("m")
	if _, err := e.callUngated(ctx, "m", "mutate", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	deadline := testwait.Deadline(t)
	for {
		after, _ := e.Metadata("m")
		if len(after.Tools) > len(before.Tools) && after.Hash != before.Hash {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no refresh: %d tools before, %d after", len(before.Tools), len(after.Tools))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestPagingAndRepeatedCursor(t *testing.T) {
	t.Parallel()
	opts := workspace(t, map[string]server{
		"many":   stdio("behave", nil, "VOLTMCP_TESTSERVER_EXTRA_TOOLS=120"),
		"repeat": stdio("repeat-cursor", nil),
	}, nil)
	e := start(t, opts)
	ctx := testwait.Context(t)
	if err := e.Connect(ctx, "many"); err != nil {
		t.Fatal(err)
	}
	if m, _ := e.Metadata("many"); len(m.Tools) < 126 {
		t.Errorf("paged tools: %d", len(m.Tools))
	}
	if err := e.Connect(ctx, "repeat"); err != nil {
		t.Fatal(err)
	}
	m, _ := e.Metadata("repeat")
	if len(m.Notes) == 0 || !strings.Contains(m.Notes[0], "repeated a cursor") {
		t.Errorf("notes: %q", m.Notes)
	}
}

func TestSetEnabledPersists(t *testing.T) {
	t.Parallel()
	opts := workspace(t, map[string]server{"s": stdio("behave", nil)}, nil)
	e := start(t, opts)
	ctx := testwait.Context(t)
	if err := e.Connect(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if err := e.SetEnabled(ctx, "s", false); err != nil {
		t.Fatal(err)
	}
	if s, _ := e.Server("s"); s.Status != StatusDisabled || s.Enabled {
		t.Fatalf("after disable: %+v", s)
	}
	if _, err := e.callUngated(ctx, "s", "echo", map[string]any{"text": "x"}); err == nil || !strings.Contains(err.Error(), "disabled") {
		t.Errorf("call on a disabled server: %v", err)
	}
	data, _ := os.ReadFile(filepath.Join(opts.Project, ".volt", "mcp.json"))
	if !strings.Contains(string(data), `"enabled": false`) {
		t.Errorf("not persisted:\n%s", data)
	}
	// A new engine sees it disabled.
	e.Close()
	e2 := start(t, opts)
	if s, _ := e2.Server("s"); s.Status != StatusDisabled {
		t.Errorf("after restart: %s", s.Status)
	}
	if err := e2.SetEnabled(ctx, "s", true); err != nil {
		t.Fatal(err)
	}
	if s, _ := e2.Server("s"); s.Status != StatusCold {
		t.Errorf("after enable: %s", s.Status)
	}
}

func TestUnknownServerSuggests(t *testing.T) {
	t.Parallel()
	opts := workspace(t, map[string]server{"github": stdio("behave", nil)}, nil)
	e := start(t, opts)
	err := e.Connect(context.Background(), "githb")
	if !errors.Is(err, ErrUnknownServer) || !strings.Contains(err.Error(), `"github"`) {
		t.Errorf("err = %v", err)
	}
}

func TestStatusTransitions(t *testing.T) {
	t.Parallel()
	all := []Status{StatusDisabled, StatusUntrusted, StatusCold, StatusConnecting, StatusConnected, StatusDiscovering,
		StatusReady, StatusNeedsAuth, StatusAuthenticating, StatusError, StatusDisconnecting, StatusDisconnected}
	for _, from := range all {
		for _, to := range legalTransitions(from) {
			if !contains(all, to) {
				t.Errorf("%s → unknown %s", from, to)
			}
		}
	}
	for _, bad := range [][2]Status{{StatusCold, StatusReady}, {StatusDisabled, StatusReady}, {StatusUntrusted, StatusConnecting}, {StatusReady, StatusCold}} {
		if canMove(bad[0], bad[1]) {
			t.Errorf("%s → %s allowed", bad[0], bad[1])
		}
	}
	if !canMove(StatusCold, StatusConnecting) || !canMove(StatusDiscovering, StatusReady) {
		t.Error("a normal start is refused")
	}
}

func TestStaleMetadataRefreshesOnUseNotAtStart(t *testing.T) {
	t.Parallel()
	opts := workspace(t, map[string]server{"s": stdio("behave", server{"metadataRefreshMs": 1})}, nil)
	e := start(t, opts)
	ctx := testwait.Context(t)
	if err := e.Connect(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	first, _ := e.Metadata("s")
	e.Close()

	e2 := start(t, opts)
	time.Sleep(5 * time.Millisecond)
	if s, _ := e2.Server("s"); s.Status != StatusCold || !s.MetadataStale {
		t.Fatalf("stale cache at start: %+v", s)
	}
	if len(children(opts.Project, opts.Home)) != 0 {
		t.Fatal("start refreshed stale metadata by starting the server")
	}
	m, err := e2.FreshMetadata(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if !m.FetchedAt.After(first.FetchedAt) {
		t.Errorf("not refreshed: %v vs %v", m.FetchedAt, first.FetchedAt)
	}
}

func TestCallEventsAndProgress(t *testing.T) {
	t.Parallel()
	opts := workspace(t, map[string]server{"s": stdio("behave", nil)}, nil)
	e := start(t, opts)
	events, stop := e.Subscribe(256)
	defer stop()
	if _, err := e.callUngated(testwait.Context(t), "s", "slow", map[string]any{"ms": 450}); err != nil {
		t.Fatal(err)
	}
	var start, end *Event
	updates := 0
	timeout := time.After(testwait.Patience)
	for end == nil {
		select {
		case ev := <-events:
			switch ev.Type {
			case EventCallStart:
				start = &ev
			case EventCallUpdate:
				updates++
				if ev.Total != 450 || ev.Message != "sleeping" || ev.CallID != start.CallID {
					t.Errorf("update: %+v", ev)
				}
			case EventCallEnd:
				end = &ev
			}
		case <-timeout:
			t.Fatalf("events: start %v, updates %d, no end", start, updates)
		}
	}
	if start == nil || start.CallID != end.CallID || !strings.HasPrefix(end.CallID, "call_") || end.CallStatus != "completed" || end.DurationMs < 400 {
		t.Errorf("start %+v end %+v", start, end)
	}
	if updates < 2 {
		t.Errorf("%d progress updates", updates)
	}
}
