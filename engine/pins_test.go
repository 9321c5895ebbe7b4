package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
