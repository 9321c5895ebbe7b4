//go:build linux

package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/internal/testwait"
	"github.com/voltmcp/voltmcp/safefile"
)

// watching runs e.Watch until the test ends, once it has taken its first
// look at the files, and returns a subscription to e's events.
func watching(t testing.TB, e *Engine, opts *WatchOptions) <-chan Event {
	t.Helper()
	ch, unsub := e.Subscribe(4096)
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	o := WatchOptions{}
	if opts != nil {
		o = *opts
	}
	o.started = started
	done := make(chan error, 1)
	go func() { done <- e.Watch(ctx, &o) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		unsub()
	})
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("watch ended: %v", err)
	}
	return ch
}

// waitEvent returns the first event of ch that match accepts.
func waitEvent(t testing.TB, ch <-chan Event, what string, match func(Event) bool) Event {
	t.Helper()
	deadline := time.NewTimer(time.Until(testwait.Deadline(t)))
	defer deadline.Stop()
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("waiting for %s: the subscription ended", what)
			}
			if match(ev) {
				return ev
			}
		case <-deadline.C:
			t.Fatalf("no %s", what)
		}
	}
}

func reloaded(ev Event) bool { return ev.Type == EventConfigReloaded }

// writeDoc writes a config document atomically, as an editor that saves
// by rename does.
func writeDoc(t testing.TB, path string, doc any) {
	t.Helper()
	data, ok := doc.([]byte)
	if !ok {
		var err error
		if data, err = json.MarshalIndent(doc, "", "  "); err != nil {
			t.Fatal(err)
		}
	}
	if err := safefile.WriteFile(path, data, nil); err != nil {
		t.Fatal(err)
	}
}

func serversDoc(servers map[string]server) map[string]any {
	return map[string]any{"version": 1, "servers": servers}
}

// inDir is a behave server whose process runs in dir, so that
// children(dir) finds it alone.
func inDir(t testing.TB, dir string, env map[string]string) server {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	extra := server{"cwd": dir}
	if env != nil {
		extra["env"] = env
	}
	return stdio("behave", extra)
}

// onlyChild waits for the one live child process running in dir.
func onlyChild(t *testing.T, dir string) int {
	t.Helper()
	var kids []int
	testwait.For(t, "one server process in "+dir, func() bool {
		kids = children(dir)
		return len(kids) == 1
	})
	return kids[0]
}

func echo(t *testing.T, e *Engine, id string) {
	t.Helper()
	res, err := e.callUngated(testwait.Context(t), id, "echo", map[string]any{"text": "hi"})
	if err != nil || res.IsError {
		t.Fatalf("echo on %s: %v %+v", id, err, res)
	}
}

// TestWatchAppliesServerChanges edits the project file of a watching
// engine: an added server appears and answers, a removed one is gone
// with its process, a changed one restarts with a new process, and a
// server the edits do not touch keeps its process throughout.
func TestWatchAppliesServerChanges(t *testing.T) {
	t.Parallel()
	opts := workspace(t, map[string]server{}, nil)
	dir := func(id string) string { return filepath.Join(opts.Project, "run", id) }
	defs := map[string]server{"a": inDir(t, dir("a"), nil), "b": inDir(t, dir("b"), nil), "keep": inDir(t, dir("keep"), nil)}
	project := filepath.Join(opts.Project, ".volt", "mcp.json")
	writeDoc(t, project, serversDoc(defs))
	e := start(t, opts)
	ch := watching(t, e, nil)
	ctx := testwait.Context(t)
	for _, id := range []string{"a", "b", "keep"} {
		if err := e.Connect(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	pa, pb, pkeep := onlyChild(t, dir("a")), onlyChild(t, dir("b")), onlyChild(t, dir("keep"))

	steps := []struct {
		name                    string
		edit                    func()
		added, removed, changed []string
		check                   func(t *testing.T)
	}{
		{"add", func() { defs["c"] = inDir(t, dir("c"), nil) }, []string{"c"}, nil, nil, func(t *testing.T) {
			echo(t, e, "c")
		}},
		{"remove", func() { delete(defs, "b") }, nil, []string{"b"}, nil, func(t *testing.T) {
			waitGone(t, pb)
			if kids := children(dir("b")); len(kids) > 0 {
				t.Fatalf("processes of the removed server left: %v", kids)
			}
			if _, err := e.Server("b"); !errors.Is(err, ErrUnknownServer) {
				t.Fatalf("the removed server: %v", err)
			}
		}},
		{"change", func() { defs["a"] = inDir(t, dir("a"), map[string]string{"VOLTMCP_TEST_EDIT": "1"}) }, nil, nil, []string{"a"}, func(t *testing.T) {
			waitGone(t, pa)
			echo(t, e, "a")
			if p := onlyChild(t, dir("a")); p == pa {
				t.Fatalf("the changed server kept its process %d", p)
			}
		}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			st.edit()
			writeDoc(t, project, serversDoc(defs))
			ev := waitEvent(t, ch, "mcp_config_reloaded", reloaded)
			if !slices.Equal(ev.Added, st.added) || !slices.Equal(ev.Removed, st.removed) || !slices.Equal(ev.Changed, st.changed) {
				t.Fatalf("reloaded: added %v removed %v changed %v; want %v %v %v", ev.Added, ev.Removed, ev.Changed, st.added, st.removed, st.changed)
			}
			st.check(t)
			if kids := children(dir("keep")); !slices.Equal(kids, []int{pkeep}) {
				t.Fatalf("the untouched server's processes are %v, want %d", kids, pkeep)
			}
			echo(t, e, "keep")
		})
	}
}

// fieldLine matches a diagnostic's file:line:col of the project file.
var fieldLine = regexp.MustCompile(`mcp\.json:\d+:\d+: error`)

// TestWatchInvalidEditKeepsLastGoodConfig writes edits that do not
// validate: each is refused whole with an mcp_config_invalid event
// naming file:line and the field, the error is on the server's summary,
// the server keeps its process and answers; a valid edit then applies
// and clears the error.
func TestWatchInvalidEditKeepsLastGoodConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		doc   func(a server) any
		field string
	}{
		{"syntax", func(server) any { return []byte("{\n  \"version\": 1,\n  \"servers\": {\n    \"a\": {\"command\": \n") }, ""},
		{"wrong type", func(a server) any {
			bad := server{"command": 5}
			return serversDoc(map[string]server{"a": a, "added": bad})
		}, "command"},
		{"unknown lifecycle", func(a server) any {
			b := server{}
			for k, v := range a {
				b[k] = v
			}
			b["lifecycle"] = "sometimes"
			return serversDoc(map[string]server{"a": b})
		}, "lifecycle"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opts := workspace(t, map[string]server{}, nil)
			dirA := filepath.Join(opts.Project, "run", "a")
			a := inDir(t, dirA, nil)
			project := filepath.Join(opts.Project, ".volt", "mcp.json")
			writeDoc(t, project, serversDoc(map[string]server{"a": a}))
			e := start(t, opts)
			ch := watching(t, e, nil)
			if err := e.Connect(testwait.Context(t), "a"); err != nil {
				t.Fatal(err)
			}
			pa := onlyChild(t, dirA)
			before := e.Config()
			writeDoc(t, project, tc.doc(a))
			ev := waitEvent(t, ch, "mcp_config_invalid", func(ev Event) bool {
				if ev.Type == EventConfigReloaded {
					t.Fatalf("an invalid edit was applied: %+v", ev)
				}
				return ev.Type == EventConfigInvalid
			})
			if !strings.Contains(ev.Error, project) || !fieldLine.MatchString(ev.Error) || !strings.Contains(ev.Error, tc.field) {
				t.Fatalf("the event's error %q does not name %s:LINE and the field %q", ev.Error, project, tc.field)
			}
			if e.Config() != before {
				t.Fatal("the config changed")
			}
			if err := e.ConfigError(); !errors.Is(err, ErrConfigInvalid) {
				t.Fatalf("ConfigError: %v", err)
			}
			if sum, err := e.Server("a"); err != nil || !fieldLine.MatchString(sum.ConfigError) {
				t.Fatalf("the summary's ConfigError: %q, %v", sum.ConfigError, err)
			}
			if kids := children(dirA); !slices.Equal(kids, []int{pa}) {
				t.Fatalf("the server's processes are %v, want %d", kids, pa)
			}
			echo(t, e, "a")
			writeDoc(t, project, serversDoc(map[string]server{"a": a, "b": stdio("behave", nil)}))
			ev = waitEvent(t, ch, "mcp_config_reloaded", reloaded)
			if !slices.Equal(ev.Added, []string{"b"}) || len(ev.Changed) > 0 {
				t.Fatalf("the valid edit: %+v", ev)
			}
			if err := e.ConfigError(); err != nil {
				t.Fatalf("ConfigError after a valid edit: %v", err)
			}
		})
	}
}

// TestWatchLayerFileCreatedAndDeleted: a user layer file that did not
// exist when the engine started is watched, so creating it adds its
// server; deleting it removes the layer, with a note naming the file.
func TestWatchLayerFileCreatedAndDeleted(t *testing.T) {
	t.Parallel()
	opts := workspace(t, map[string]server{"p": stdio("behave", nil)}, nil)
	e := start(t, opts)
	ch := watching(t, e, nil)
	user := filepath.Join(opts.Home, ".volt", "agent", "mcp.json")
	writeDoc(t, user, serversDoc(map[string]server{"u": stdio("behave", nil)}))
	if ev := waitEvent(t, ch, "reload of the created file", reloaded); !slices.Equal(ev.Added, []string{"u"}) {
		t.Fatalf("created: %+v", ev)
	}
	echo(t, e, "u")
	if err := os.Remove(user); err != nil {
		t.Fatal(err)
	}
	ev := waitEvent(t, ch, "reload of the deleted file", reloaded)
	if !slices.Equal(ev.Removed, []string{"u"}) || !strings.Contains(ev.Message, user+" was deleted") {
		t.Fatalf("deleted: %+v", ev)
	}
	echo(t, e, "p")
}

// TestWatchCoalescesABurstOfEdits rewrites the project file ten times a
// second for three seconds, every other version invalid, the last valid: the last version
// is what runs, after a few reloads, not one per edit.
func TestWatchCoalescesABurstOfEdits(t *testing.T) {
	t.Parallel()
	opts := workspace(t, map[string]server{"a": stdio("behave", nil)}, nil)
	e := start(t, opts)
	ch := watching(t, e, nil)
	project := filepath.Join(opts.Project, ".volt", "mcp.json")
	const edits = 30 // for three seconds
	for i := range edits {
		if i%2 == 0 && i != edits-1 {
			writeDoc(t, project, []byte(fmt.Sprintf("{\"version\": 1, \"servers\": {\"s%d\": ", i)))
		} else {
			writeDoc(t, project, serversDoc(map[string]server{"a": stdio("behave", server{"env": map[string]string{"V": fmt.Sprint(i)}}), fmt.Sprintf("s%d", i): stdio("behave", nil)}))
		}
		time.Sleep(100 * time.Millisecond) // ten edits a second
	}
	last := fmt.Sprintf("s%d", edits-1)
	reloads := 0 // applied or refused
	waitEvent(t, ch, "the last edit applied", func(ev Event) bool {
		if ev.Type == EventConfigReloaded || ev.Type == EventConfigInvalid {
			reloads++
		}
		_, ok := e.Config().Server(last)
		return ev.Type == EventConfigReloaded && ok
	})
	ids := []string{}
	for _, s := range e.Config().Servers {
		ids = append(ids, s.ID)
	}
	if !slices.Equal(ids, []string{"a", last}) {
		t.Fatalf("servers %v, want a and %s", ids, last)
	}
	if a, _ := e.Config().Server("a"); a.Env["V"] != fmt.Sprint(edits-1) {
		t.Fatalf("server a has V=%q, want the last edit's", a.Env["V"])
	}
	// The burst is applied as it ends, and once a second while it lasts:
	// three or four times (five when an edit was slow to write), not at
	// every look that finds a change (twelve) or every edit.
	t.Logf("%d reloads", reloads)
	if reloads > 5 {
		t.Fatalf("%d reloads for %d edits: not coalesced", reloads, edits)
	}
}

// TestWatchPolicyEdits: with a policy directory, an edited policy file,
// a policy file added in a new subdirectory, and a policy that does not
// compile each decide the next call once the watch applied them (the
// last one failing closed).
func TestWatchPolicyEdits(t *testing.T) {
	t.Parallel()
	const allow = "package voltmcp.tools\n\ndeny contains \"never\" if false\n"
	const denyEcho = "package voltmcp.tools\n\ndeny contains \"no echo here\" if input.tool.name == \"echo\"\n"
	for _, tc := range []struct {
		name, file, body, want string
	}{
		{"file edited", "team.rego", denyEcho, "no echo here"},
		{"file added in a new directory", "nested/more.rego", denyEcho, "no echo here"},
		{"policy that does not compile", "team.rego", "package voltmcp.tools\n\ndeny contains \"x\" if {\n", "policies failed to load"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// A user server: a broken policy also keeps project config
			// from loading, which would hide the tool decision.
			opts := workspace(t, map[string]server{}, nil)
			writeDoc(t, filepath.Join(opts.Home, ".volt", "agent", "mcp.json"), serversDoc(map[string]server{"s": stdio("behave", nil)}))
			pol := filepath.Join(opts.Home, "policy")
			writeDoc(t, filepath.Join(pol, "team.rego"), []byte(allow))
			opts.PolicyDirs = []string{pol}
			e := start(t, opts)
			ch := watching(t, e, nil)
			call := func() GatewayResult {
				return gw(t, e, GatewayInput{Action: "call", Server: "s", Tool: "echo", Arguments: map[string]any{"text": "hi"}})
			}
			if r := call(); r.IsError {
				t.Fatalf("before the edit: %s", r.Text)
			}
			writeDoc(t, filepath.Join(pol, tc.file), []byte(tc.body))
			waitEvent(t, ch, "mcp_config_reloaded", reloaded)
			if r := call(); !r.IsError || !strings.Contains(r.Text, tc.want) {
				t.Fatalf("after the edit: %+v, want an error with %q", r, tc.want)
			}
		})
	}
}

// TestWatchProjectEditUntrusts: a project trusted by a trust record whose
// file is edited loses its trust (its server stops, the reload event says
// so) until it is trusted again, which brings the server back.
func TestWatchProjectEditUntrusts(t *testing.T) {
	t.Parallel()
	opts := workspace(t, map[string]server{"p": stdio("behave", nil)}, nil)
	opts.Approve, opts.Surface, opts.AgentDir = false, cue.SurfaceServe, filepath.Join(opts.Home, ".volt", "agent")
	store := filepath.Join(opts.AgentDir, cue.TrustStoreFile)
	trust := func() {
		res, err := cue.Load(context.Background(), cue.Locations{Home: opts.Home, Project: opts.Project}, &cue.Options{Approve: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := cue.SaveTrustRecord(store, cue.NewTrustRecord(opts.Project, res.TrustFiles, time.Now())); err != nil {
			t.Fatal(err)
		}
	}
	trust()
	writeDoc(t, filepath.Join(opts.Home, ".volt", "agent", "mcp.json"), serversDoc(map[string]server{"u": stdio("behave", nil)}))
	e := start(t, opts)
	ch := watching(t, e, nil)
	echo(t, e, "p")
	project := filepath.Join(opts.Project, ".volt", "mcp.json")
	writeDoc(t, project, map[string]any{"version": 1, "servers": map[string]server{"p": stdio("behave", nil)}, "x-note": "edited"})
	ev := waitEvent(t, ch, "mcp_config_reloaded", reloaded)
	if !slices.Equal(ev.Removed, []string{"p"}) || !strings.Contains(ev.Message, "no longer trusted") {
		t.Fatalf("after the edit: %+v", ev)
	}
	if s, err := e.Server("p"); err != nil || s.Status != StatusUntrusted {
		t.Fatalf("the project's server: %+v, %v", s, err)
	}
	echo(t, e, "u")
	trust()
	if ev := waitEvent(t, ch, "mcp_config_reloaded", reloaded); !slices.Equal(ev.Added, []string{"p"}) {
		t.Fatalf("after trusting again: %+v", ev)
	}
	echo(t, e, "p")
}

// TestWatchFIFOLayerNeverBlocks plants a FIFO (no writer, which a
// blocking open waits on for ever) as a layer file: the watch goes on,
// refuses the layer by name, and applies the next edit.
func TestWatchFIFOLayerNeverBlocks(t *testing.T) {
	t.Parallel()
	opts := workspace(t, map[string]server{"p": stdio("behave", nil)}, nil)
	e := start(t, opts)
	ch := watching(t, e, nil)
	shared := filepath.Join(opts.Home, ".config", "mcp", "mcp.json")
	if err := os.MkdirAll(filepath.Dir(shared), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(shared, 0o600); err != nil {
		t.Fatal(err)
	}
	ev := waitEvent(t, ch, "the FIFO refused", func(ev Event) bool { return ev.Type == EventConfigInvalid })
	if !strings.Contains(ev.Error, shared) || !strings.Contains(ev.Error, "not a regular file") {
		t.Fatalf("the event: %+v", ev)
	}
	echo(t, e, "p")
	if err := os.Remove(shared); err != nil {
		t.Fatal(err)
	}
	writeDoc(t, shared, serversDoc(map[string]server{"shared": stdio("behave", nil)}))
	if ev := waitEvent(t, ch, "mcp_config_reloaded", reloaded); !slices.Equal(ev.Added, []string{"shared"}) {
		t.Fatalf("after the FIFO: %+v", ev)
	}
}

// TestWatchCallInFlightCompletes runs a slow call on one server while an
// edit changes another's definition: the call completes with its answer,
// on the process it started on.
func TestWatchCallInFlightCompletes(t *testing.T) {
	t.Parallel()
	opts := workspace(t, map[string]server{}, nil)
	dirSlow := filepath.Join(opts.Project, "run", "slow")
	slow := inDir(t, dirSlow, nil)
	project := filepath.Join(opts.Project, ".volt", "mcp.json")
	writeDoc(t, project, serversDoc(map[string]server{"slow": slow, "other": stdio("behave", nil)}))
	e := start(t, opts)
	ch := watching(t, e, nil)
	ctx := testwait.Context(t)
	if err := e.Connect(ctx, "slow"); err != nil {
		t.Fatal(err)
	}
	pid := onlyChild(t, dirSlow)
	type answer struct {
		text string
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := e.callUngated(ctx, "slow", "slow", map[string]any{"ms": 4000})
		a := answer{err: err}
		if res != nil && !res.IsError && len(res.Content) > 0 {
			b, _ := json.Marshal(res.Content[0])
			a.text = string(b)
		}
		done <- a
	}()
	waitEvent(t, ch, "the slow call's start", func(ev Event) bool { return ev.Type == EventCallStart && ev.Server == "slow" })
	writeDoc(t, project, serversDoc(map[string]server{"slow": slow, "other": stdio("behave", server{"env": map[string]string{"V": "2"}})}))
	ev := waitEvent(t, ch, "mcp_config_reloaded", reloaded)
	if !slices.Equal(ev.Changed, []string{"other"}) {
		t.Fatalf("reloaded: %+v", ev)
	}
	select {
	case a := <-done:
		t.Logf("the call ended before the reload applied (a slow machine): %+v", a)
		if a.err != nil || !strings.Contains(a.text, "slept 4000 ms") {
			t.Fatalf("the call: %+v", a)
		}
	default:
		a := <-done
		if a.err != nil || !strings.Contains(a.text, "slept 4000 ms") {
			t.Fatalf("the call in flight during the reload: %+v", a)
		}
	}
	if kids := children(dirSlow); !slices.Equal(kids, []int{pid}) {
		t.Fatalf("the slow server's processes are %v, want %d", kids, pid)
	}
}

// BenchmarkConfigEditToReload is the time from a config file's write
// (atomic, as an editor saves) to the mcp_config_reloaded event of a
// watching engine at the default interval: what an edit takes to reach a
// serve. Each edit changes one server's environment; the server is
// lazy, so the restart it gets costs nothing. ms/edit is the mean,
// max-ms the slowest edit.
func BenchmarkConfigEditToReload(b *testing.B) {
	opts := workspace(b, map[string]server{"a": stdio("behave", nil), "b": stdio("behave", nil)}, nil)
	e := start(b, opts)
	ch := watching(b, e, nil)
	project := filepath.Join(opts.Project, ".volt", "mcp.json")
	var total, slowest time.Duration
	b.ResetTimer()
	for i := range b.N {
		doc := serversDoc(map[string]server{"a": stdio("behave", server{"env": map[string]string{"V": fmt.Sprint(i)}}), "b": stdio("behave", nil)})
		t0 := time.Now()
		writeDoc(b, project, doc)
		waitEvent(b, ch, "mcp_config_reloaded", reloaded)
		d := time.Since(t0)
		total += d
		slowest = max(slowest, d)
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/edit")
	b.ReportMetric(float64(slowest.Microseconds())/1000, "max-ms")
	b.ReportMetric(0, "ns/op")
}
