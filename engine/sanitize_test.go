package engine

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/voltmcp/voltmcp/internal/mcptest"
	"github.com/voltmcp/voltmcp/internal/testwait"
	"github.com/voltmcp/voltmcp/sanitize"
)

// dirtyRune returns the first rune of s that the sanitizer's list
// removes (ESC, another control but tab and newline, C1, an invisible
// character), or -1.
func dirtyRune(s string) rune {
	for _, r := range s {
		switch {
		case r == '\t' || r == '\n':
		case r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0, sanitize.Invisible(r):
			return r
		}
	}
	return -1
}

// TestHostileWireTextIsCleaned: a server whose serverInfo, JSON-RPC
// errors and stderr carry escapes (OSC 8, ESC ( B, CSI), C1 controls,
// bidi overrides, tags and zero-width characters reaches the agent,
// status and events only cleaned, and its serverInfo is capped (issue 18,
// item 10).
func TestHostileWireTextIsCleaned(t *testing.T) {
	t.Parallel()
	cmd, args, env := mcptest.Command(mcptest.ModeHostileWire)
	_, _, exitEnv := mcptest.Command(mcptest.ModeHostileWire, mcptest.WireExitEnv+"=1")
	opts := workspace(t, map[string]server{
		"wire":  {"command": cmd, "args": args, "env": env},
		"crash": {"command": cmd, "args": args, "env": exitEnv, "connectTimeoutMs": 20000},
	}, nil)
	e := start(t, opts)
	events, cancel := e.Subscribe(4096)
	defer cancel()
	ctx := testwait.Context(t)
	check := func(what, s string) {
		t.Helper()
		if r := dirtyRune(s); r >= 0 {
			t.Errorf("%s holds %U: %.300q", what, r, s)
		}
		if strings.Contains(s, "(B") || strings.Contains(s, "8;;") || strings.Contains(s, "]0;") ||
			strings.Contains(s, `\u001b`) || strings.Contains(s, `\u009b`) || strings.Contains(s, `\u0007`) {
			t.Errorf("%s holds the rest of an escape: %.300q", what, s)
		}
	}
	if err := e.Connect(ctx, "wire"); err != nil {
		t.Fatalf("connect wire: %v", err)
	}
	r := gw(t, e, GatewayInput{Action: "call", Server: "wire", Tool: mcptest.ToolWireFail})
	if !strings.Contains(r.Text, mcptest.WireErrorMarker) {
		t.Fatalf("the server's error did not come back: %.300q", r.Text)
	}
	check("the call's error text", r.Text)
	data, _ := json.Marshal(r.Data)
	check("the call's error data", string(data))
	_, err := e.callUngated(ctx, "wire", mcptest.ToolWireFail, map[string]any{})
	if err == nil || !strings.Contains(err.Error(), mcptest.WireErrorMarker) {
		t.Fatalf("CallTool error = %v", err)
	}
	check("CallTool's error", err.Error())

	// Clean text, hostile structured content: the structure is left out.
	r = gw(t, e, GatewayInput{Action: "call", Server: "wire", Tool: mcptest.ToolWireStructured})
	if !strings.Contains(r.Text, mcptest.WireStructuredText) {
		t.Fatalf("the structured call did not answer: %.300q", r.Text)
	}
	data, _ = json.Marshal(r.Data)
	check("the structured call's data", string(data))
	check("the structured call's text", r.Text)

	sum, err := e.Server("wire")
	if err != nil || !strings.Contains(sum.Stderr, mcptest.WireStderrMarker) {
		t.Fatalf("summary: %v, stderr %.200q", err, sum.Stderr)
	}
	check("the stderr tail", sum.Stderr)
	m, err := e.Metadata("wire")
	if err != nil {
		t.Fatal(err)
	}
	for what, v := range map[string]string{"name": m.Name, "title": m.Title, "version": m.Version} {
		check("serverInfo "+what, v)
		if !strings.Contains(v, "red") || len([]rune(v)) > 200 {
			t.Errorf("serverInfo %s = %q: not the cleaned, capped text", what, v)
		}
	}

	if err := e.Connect(ctx, "crash"); err == nil {
		t.Fatal("a server that exits at once connected")
	} else {
		if !strings.Contains(err.Error(), mcptest.WireStderrMarker) {
			t.Errorf("the connect error lacks the stderr line: %.300q", err)
		}
		check("the connect error", err.Error())
	}
	crash, _ := e.Server("crash")
	check("the crashed server's last error", crash.LastError)
	check("the crashed server's stderr", crash.Stderr)
	st := gw(t, e, GatewayInput{Action: "status"})
	check("status", st.Text)
	data, _ = json.Marshal(st.Data)
	check("status data", string(data))
	for _, s := range e.Servers() {
		data, _ := json.Marshal(s)
		check("servers "+s.ID, string(data))
	}
	e.Close()
	cancel()
	for ev := range events {
		data, _ := json.Marshal(ev)
		check("event "+string(ev.Type), string(data))
	}
}
