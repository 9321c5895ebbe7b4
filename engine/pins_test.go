package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/engine/internal/pin"
	"github.com/voltmcp/voltmcp/internal/mcptest"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

func TestPinsFailClosed(t *testing.T) {
	t.Parallel()
	opts := workspace(t, map[string]server{"bad": stdio(mcptest.ModeRugPull, nil)}, nil)
	e := start(t, opts)
	// A file where the pin directory should be: nothing can be pinned.
	dir := filepath.Join(opts.Home, ".volt", "agent", "mcp")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pins"), []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := e.Connect(testwait.Context(t), "bad"); err != nil {
		t.Fatal(err)
	}
	tool := toolNamed(t, e, "bad", mcptest.RugPullTool)
	if st := e.pinState("bad", tool); st.State != PinChanged || st.Change != "escalation" {
		t.Errorf("pin state without a pin store: %+v", st)
	}
	if d := defaultDecide(ToolInput{Server: e.servers["bad"].cfg, Tool: tool, Pin: e.pinState("bad", tool)}); d.Allowed {
		t.Errorf("a tool that could not be pinned is callable: %+v", d)
	}
	sum, _ := e.Server("bad")
	if !strings.Contains(sum.PinError, "pin store") || !strings.Contains(strings.Join(sum.MetadataNotes, "\n"), "counts as changed") {
		t.Errorf("summary: pin error %q, notes %q", sum.PinError, sum.MetadataNotes)
	}
	if _, err := e.Pins(testwait.Context(t), "bad"); err == nil {
		t.Error("Pins without a pin store worked")
	}
}

func TestApproveFromAnotherEngine(t *testing.T) {
	t.Parallel()
	// One engine serves; another (as `voltmcp approve` would) approves. The
	// serving one sees the approval without a refresh, within pinRecheck.
	url := mcptest.ServeStreamableOnly(t, mcptest.ModeRugPullDestructive)
	opts := workspace(t, map[string]server{"bad": {"url": url}}, nil)
	e := start(t, opts)
	ctx := testwait.Context(t)
	if err := e.Connect(ctx, "bad"); err != nil {
		t.Fatal(err)
	}
	first := toolNamed(t, e, "bad", mcptest.RugPullTool)
	if err := e.Refresh(ctx, "bad"); err != nil {
		t.Fatal(err)
	}
	if st := e.pinState("bad", toolNamed(t, e, "bad", mcptest.RugPullTool)); st.Change != "escalation" {
		t.Fatalf("after the pull: %+v", st)
	}
	if toolNamed(t, e, "bad", mcptest.RugPullTool).Hash != first.Hash {
		t.Fatal("the held change is shown")
	}
	passive := opts
	passive.Passive = true
	other := start(t, passive)
	if err := other.Approve(ctx, "bad"); err != nil {
		t.Fatal(err)
	}
	// The serving engine looks at the pin file again within pinRecheck.
	approvedAt, deadline := time.Now(), testwait.Deadline(t)
	shown := toolNamed(t, e, "bad", mcptest.RugPullTool)
	for st := e.pinState("bad", shown); st.State != PinPinned; st = e.pinState("bad", shown) {
		if time.Now().After(deadline) {
			t.Fatalf("%s after approval elsewhere: %+v", time.Since(approvedAt), st)
		}
		time.Sleep(50 * time.Millisecond)
		shown = toolNamed(t, e, "bad", mcptest.RugPullTool)
	}
	if shown = toolNamed(t, e, "bad", mcptest.RugPullTool); !strings.Contains(string(shown.Annotations), `"destructiveHint":true`) {
		t.Errorf("the approved version is not shown: %s", shown.Annotations)
	}
	pins, err := other.Pins(ctx, "")
	if err != nil || len(pins) != 1 || pins[0].Pending != nil || pins[0].Risk != "destructive" {
		t.Errorf("pins: %+v, %v", pins, err)
	}
}

// TestSupervisorKeepsSlimPins checks what a supervisor keeps of its
// server's pins between reads of the pin file: of a pin without a
// pending change its hash and risk, not the tool's metadata; of a pin
// whose change waits, the whole pinned metadata. Pin states, the pins
// view and its diff are the same as from the file itself.
func TestSupervisorKeepsSlimPins(t *testing.T) {
	t.Parallel()
	opts := workspace(t, map[string]server{
		"good": stdio(mcptest.ModeBehave, nil),
		"bad":  stdio(mcptest.ModeRugPullSchema, nil),
	}, nil)
	e := start(t, opts)
	ctx := testwait.Context(t)
	for _, id := range []string{"good", "bad"} {
		if err := e.Connect(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Refresh(ctx, "bad"); err != nil { // the schema changed: a pending change
		t.Fatal(err)
	}
	store, err := e.pinStore()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id      string
		pending bool
	}{{"good", false}, {"bad", true}} {
		s := e.servers[c.id]
		kept, _, err := s.currentPins()
		if err != nil {
			t.Fatal(err)
		}
		file, err := store.Get(s.ident)
		if err != nil {
			t.Fatal(err)
		}
		if len(kept.Tools) == 0 || len(kept.Tools) != len(file.Tools) || len(kept.Pending) != len(file.Pending) {
			t.Fatalf("%s: kept %d pins, %d pending; the file %d, %d", c.id, len(kept.Tools), len(kept.Pending), len(file.Tools), len(file.Pending))
		}
		for name, pn := range kept.Tools {
			want := file.Tools[name]
			_, pending := file.Pending[name]
			if pending != c.pending {
				t.Fatalf("%s/%s: pending %v", c.id, name, pending)
			}
			if pn.Hash != want.Hash || !pn.PinnedAt.Equal(want.PinnedAt) || pn.Meta.Risk != want.Meta.Risk || pn.Meta.Name != want.Meta.Name {
				t.Errorf("%s/%s: kept %+v, the file %+v", c.id, name, pn, want)
			}
			full := len(pn.Meta.InputSchema) > 0 || pn.Meta.Description != "" || len(pn.Meta.Annotations) > 0
			if full != pending {
				t.Errorf("%s/%s: pending %v, but the kept pin has metadata %v: %+v", c.id, name, pending, full, pn.Meta)
			}
			if pending && (string(pn.Meta.InputSchema) != string(want.Meta.InputSchema) || pn.Meta.Description != want.Meta.Description) {
				t.Errorf("%s/%s: the pending tool's pinned metadata differs from the file's", c.id, name)
			}
		}
		views, err := e.Pins(ctx, c.id)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range views {
			st := e.pinState(c.id, toolNamed(t, e, c.id, v.Tool))
			switch {
			case c.pending && (v.Pending == nil || v.Pending.Diff != pin.Diff(file.Tools[v.Tool].Meta, file.Pending[v.Tool].Meta) || v.Pending.Diff == ""):
				t.Errorf("%s/%s: the view's diff is not the file's: %+v", c.id, v.Tool, v.Pending)
			case c.pending && st.State != PinChanged, !c.pending && (v.Pending != nil || st.State != PinNew):
				t.Errorf("%s/%s: view %+v, pin state %+v", c.id, v.Tool, v, st)
			case v.Risk != file.Tools[v.Tool].Meta.Risk || v.Risk == "":
				t.Errorf("%s/%s: the view's risk %q, the file's %q", c.id, v.Tool, v.Risk, file.Tools[v.Tool].Meta.Risk)
			}
		}
	}
}
