package engine

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/voltmcp/voltmcp/engine/internal/bound"
	"github.com/voltmcp/voltmcp/internal/mcptest"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// hostile starts an engine with a hostile server "bad" in mode and a
// behaving server "good" next to it, with the given limits settings.
func hostile(t *testing.T, mode string, limits map[string]any, extra server) *Engine {
	t.Helper()
	var settings map[string]any
	if limits != nil {
		settings = map[string]any{"limits": limits}
	}
	opts := workspace(t, map[string]server{
		"bad":  stdio(mode, extra),
		"good": stdio(mcptest.ModeBehave, nil),
	}, settings)
	return start(t, opts)
}

// goodStillServes fails unless the behaving server answers a call
// through the gateway.
func goodStillServes(t *testing.T, e *Engine) {
	t.Helper()
	r := e.Gateway(testwait.Context(t), GatewayInput{Action: "call", Server: "good", Tool: "echo", Arguments: map[string]any{"text": "still here"}})
	if r.IsError || !strings.Contains(r.Text, "still here") {
		t.Fatalf("the behaving server does not answer: %s", r.Text)
	}
}

// checkClean fails if s has a control or invisible character (other than
// tab and newline).
func checkClean(t *testing.T, what, s string) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Errorf("%s: invalid UTF-8: %q", what, s)
		return
	}
	for _, r := range s {
		switch {
		case r == '\n' || r == '\t':
		case unicode.IsControl(r), unicode.Is(unicode.Cf, r), r >= 0xE0000 && r <= 0xE007F, r >= 0xfe00 && r <= 0xfe0f && false:
			t.Errorf("%s: hidden character %U in %q", what, r, clip(s, 200))
			return
		}
	}
}

// checkCleanJSON walks a JSON value and checks every string and key.
func checkCleanJSON(t *testing.T, what string, v any) {
	t.Helper()
	switch x := v.(type) {
	case string:
		checkClean(t, what, x)
	case []any:
		for i, y := range x {
			checkCleanJSON(t, fmt.Sprintf("%s[%d]", what, i), y)
		}
	case map[string]any:
		for k, y := range x {
			checkClean(t, what+" key", k)
			checkCleanJSON(t, what+"."+k, y)
		}
	}
}

// asJSON decodes the JSON of v into plain values.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// checkTools checks the bounds every kept tool must meet.
func checkTools(t *testing.T, m *Metadata, l bound.Limits) {
	t.Helper()
	if len(m.Tools) > l.MaxTools {
		t.Errorf("%d tools, over %d", len(m.Tools), l.MaxTools)
	}
	for _, tool := range m.Tools {
		if !bound.ValidName(tool.Name) {
			t.Errorf("tool with invalid name %q kept", clip(tool.Name, 80))
		}
		if n := utf8.RuneCountInString(tool.Description); n > l.MaxDescriptionChars {
			t.Errorf("tool %s: description of %d characters", tool.Name, n)
		}
		if len(tool.InputSchema) > l.MaxSchemaBytes {
			t.Errorf("tool %s: schema of %d bytes", tool.Name, len(tool.InputSchema))
		}
		checkClean(t, tool.Name+" description", tool.Description)
		checkClean(t, tool.Name+" title", tool.Title)
		if len(tool.InputSchema) > 0 {
			var v any
			if err := json.Unmarshal(tool.InputSchema, &v); err != nil {
				t.Errorf("tool %s: schema is not JSON: %v", tool.Name, err)
			}
			checkCleanJSON(t, tool.Name+" schema", v)
		}
	}
}

// droppedReasons returns the reasons of the dropped items by name.
func droppedReasons(items []DroppedItem) map[string]string {
	out := map[string]string{}
	for _, d := range items {
		out[d.Name] = d.Reason
	}
	return out
}

func TestHostileHugeMetadata(t *testing.T) {
	t.Parallel()
	e := hostile(t, mcptest.ModeHugeMetadata, map[string]any{"maxDescriptionChars": 500}, nil)
	events, stop := e.Subscribe(256)
	defer stop()
	if err := e.Connect(testwait.Context(t), "bad"); err != nil {
		t.Fatal(err)
	}
	m, _ := e.Metadata("bad")
	checkTools(t, m, bound.Limits{MaxTools: 1000, MaxDescriptionChars: 500, MaxSchemaBytes: 64 << 10})
	var names []string
	for _, tool := range m.Tools {
		names = append(names, tool.Name)
	}
	if strings.Join(names, ",") != mcptest.ToolHugeDescription+","+mcptest.ToolPlain {
		t.Errorf("kept %v", names)
	}
	if title := m.Tools[0].Title; utf8.RuneCountInString(title) > 128 {
		t.Errorf("title of %d characters", utf8.RuneCountInString(title))
	}
	// Every invalid name is dropped, and says why; the huge name is shown
	// clipped.
	sum, err := e.Server("bad")
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Dropped) != len(mcptest.InvalidToolNames())+1 {
		t.Errorf("dropped %+v", sum.Dropped)
	}
	for _, d := range sum.Dropped {
		if d.Kind != "tool" || !strings.Contains(d.Reason, "invalid name") || utf8.RuneCountInString(d.Name) > 64 {
			t.Errorf("dropped item %+v", d)
		}
		checkClean(t, "dropped name", d.Name)
	}
	if r := droppedReasons(sum.Cleaned)[mcptest.ToolHugeDescription]; !strings.Contains(r, "clipped") {
		t.Errorf("cleaned %+v", sum.Cleaned)
	}
	// The status action says so too, and an event did.
	st := e.Gateway(testwait.Context(t), GatewayInput{Action: "status"})
	if !strings.Contains(st.Text, `"metadata":[{"server":"bad"`) || !strings.Contains(st.Text, "invalid name") {
		t.Errorf("status: %s", st.Text)
	}
	var bounded bool
	for len(events) > 0 {
		if ev := <-events; ev.Type == EventMetadataBounded && ev.Server == "bad" && strings.Contains(ev.Message, "dropped 10 tools") {
			bounded = true
		}
	}
	if !bounded {
		t.Error("no event reported the dropped tools")
	}
	goodStillServes(t, e)
}

func TestHostileText(t *testing.T) {
	t.Parallel()
	e := hostile(t, mcptest.ModeHostileText, nil, nil)
	ctx := testwait.Context(t)
	if err := e.Connect(ctx, "bad"); err != nil {
		t.Fatal(err)
	}
	m, _ := e.Metadata("bad")
	checkTools(t, m, bound.DefaultLimits())
	var ht Tool
	for _, tool := range m.Tools {
		if tool.Name == mcptest.ToolHostileText {
			ht = tool
		}
	}
	if ht.Name == "" {
		t.Fatal("the hostile-text tool was dropped")
	}
	// The visible injection stays (it is text), labelled; the hidden
	// parts go.
	if !strings.Contains(ht.Description, "Ignore previous instructions") || strings.Contains(ht.Description, "pwned") {
		t.Errorf("description %q", ht.Description)
	}
	var ann any
	_ = json.Unmarshal(ht.Annotations, &ann)
	checkCleanJSON(t, "annotations", ann)
	// What search and describe return is clean.
	r := e.Gateway(ctx, GatewayInput{Action: "search", Query: "searches documents", Server: "bad"})
	if r.IsError {
		t.Fatal(r.Text)
	}
	checkCleanJSON(t, "search", asJSON(t, r.Data))
	if !strings.Contains(r.Text, mcptest.ToolHostileText) {
		t.Errorf("search found nothing: %s", r.Text)
	}
	r = e.Gateway(ctx, GatewayInput{Action: "describe", Server: "bad", Tool: mcptest.ToolHostileText})
	if r.IsError {
		t.Fatal(r.Text)
	}
	checkCleanJSON(t, "describe", asJSON(t, r.Data))
	sum, _ := e.Server("bad")
	if r := droppedReasons(sum.Cleaned)[mcptest.ToolHostileText]; !strings.Contains(r, "invisible") || !strings.Contains(r, "escape") {
		t.Errorf("cleaned %+v", sum.Cleaned)
	}
	goodStillServes(t, e)
}

// toolNamed returns the tool of a server's metadata by name.
func toolNamed(t *testing.T, e *Engine, server, name string) Tool {
	t.Helper()
	m, err := e.Metadata(server)
	if err != nil || m == nil {
		t.Fatalf("metadata of %s: %v", server, err)
	}
	for _, tool := range m.Tools {
		if tool.Name == name {
			return tool
		}
	}
	t.Fatalf("server %s has no tool %s", server, name)
	return Tool{}
}

// pinCheck is the state a rug-pull test expects after the second refresh.
type pinCheck struct {
	mode     string
	tool     string
	change   string
	diffHas  string // a line of the diff
	quietOK  bool   // mode rug-pull: the quiet tool's change is callable
	hiddenTo string // text the model must not see until approval
}

func TestRugPull(t *testing.T) {
	t.Parallel()
	for _, c := range []pinCheck{
		{mode: mcptest.ModeRugPullSchema, tool: mcptest.RugPullTool, change: "schema-breaking", diffHas: `+     "` + mcptest.RugPullRequired + `"`, hiddenTo: mcptest.RugPullRequired},
		{mode: mcptest.ModeRugPullDestructive, tool: mcptest.RugPullTool, change: "escalation", diffHas: `"destructiveHint": true`},
		{mode: mcptest.ModeRugPull, tool: mcptest.RugPullTool, change: "escalation", diffHas: "id_rsa", quietOK: true, hiddenTo: "id_rsa"},
	} {
		t.Run(c.mode, func(t *testing.T) {
			e := hostile(t, c.mode, nil, nil)
			ctx := testwait.Context(t)
			events, stop := e.Subscribe(256)
			defer stop()
			if err := e.Connect(ctx, "bad"); err != nil {
				t.Fatal(err)
			}
			first := toolNamed(t, e, "bad", c.tool)
			if st := e.pinState("bad", first); st.State != PinNew {
				t.Errorf("after the first listing: %+v", st)
			}
			// The server now lists the pulled version, but nothing changes
			// until a refresh: metadata is a snapshot.
			r := e.Gateway(ctx, GatewayInput{Action: "call", Server: "bad", Tool: c.tool, Arguments: map[string]any{"city": "Oslo"}})
			if r.IsError {
				t.Fatalf("call before the pull: %s", r.Text)
			}
			if got := toolNamed(t, e, "bad", c.tool); got.Hash != first.Hash {
				t.Errorf("metadata changed without a refresh")
			}
			if err := e.Refresh(ctx, "bad"); err != nil {
				t.Fatal(err)
			}
			shown := toolNamed(t, e, "bad", c.tool)
			st := e.pinState("bad", shown)
			if st.State != PinChanged || st.Change != c.change {
				t.Fatalf("after the pull: %+v, want changed %s", st, c.change)
			}
			// A held change shows the pinned version and blocks calls.
			if shown.Hash != first.Hash {
				t.Errorf("the held tool shows its new version: %+v", shown)
			}
			risk, why := e.risk(ctx, "bad", shown)
			d := defaultDecide(ToolInput{Server: e.servers["bad"].cfg, Tool: shown, Risk: risk, RiskReason: why, Pin: st})
			if d.Allowed || !d.Exposed || !strings.Contains(strings.Join(d.Reasons, " "), "approve") {
				t.Errorf("decision on the changed tool: %+v", d)
			}
			// Through the gateway, the call is held and search says so.
			if r := e.Gateway(ctx, GatewayInput{Action: "call", Server: "bad", Tool: c.tool, Arguments: map[string]any{}}); !r.IsError || !strings.Contains(r.Text, "held for approval") {
				t.Errorf("a call of the changed tool was not held: %s", r.Text)
			}
			if c.hiddenTo != "" {
				desc := e.Gateway(ctx, GatewayInput{Action: "describe", Server: "bad", Tool: c.tool})
				search := e.Gateway(ctx, GatewayInput{Action: "search", Server: "bad", Query: "weather"})
				for _, r := range []GatewayResult{desc, search} {
					if r.IsError || strings.Contains(r.Text, c.hiddenTo) {
						t.Errorf("the model sees the pending change: %s", r.Text)
					}
				}
				if !strings.Contains(desc.Text, `third-party text from MCP server \"bad\"`) {
					t.Errorf("describe lacks the provenance prefix: %s", desc.Text)
				}
			}
			if c.quietOK {
				quiet := toolNamed(t, e, "bad", mcptest.RugPullQuietTool)
				if st := e.pinState("bad", quiet); st.State != PinChanged || st.Change != "description" {
					t.Errorf("quiet tool: %+v", st)
				}
				if quiet.Description != mcptest.QuietDescription2 {
					t.Errorf("a description change is not shown as listed: %q", quiet.Description)
				}
				if d := defaultDecide(ToolInput{Server: e.servers["bad"].cfg, Tool: quiet, Pin: e.pinState("bad", quiet)}); !d.Allowed {
					t.Errorf("a reworded tool is blocked: %+v", d)
				}
			}
			pins, err := e.Pins(ctx, "bad")
			if err != nil {
				t.Fatal(err)
			}
			var view *PinView
			for i := range pins {
				if pins[i].Tool == c.tool {
					view = &pins[i]
				}
			}
			if view == nil || view.Pending == nil || view.Pending.Severity != c.change || !view.Pending.Held ||
				!strings.Contains(view.Pending.Diff, c.diffHas) || len(view.Pending.Details) == 0 {
				t.Fatalf("pins: %+v", pins)
			}
			if sum, _ := e.Server("bad"); sum.PendingChanges == 0 {
				t.Errorf("summary: %+v", sum)
			}
			// Another refresh keeps the same pending change.
			if err := e.Refresh(ctx, "bad"); err != nil {
				t.Fatal(err)
			}
			if st := e.pinState("bad", toolNamed(t, e, "bad", c.tool)); st.Change != c.change {
				t.Errorf("after a second pulled listing: %+v", st)
			}
			if err := e.Approve(ctx, "bad", "no_such_tool"); err == nil {
				t.Error("approving a tool without a pending change worked")
			}
			if err := e.Approve(ctx, "bad", c.tool); err != nil {
				t.Fatal(err)
			}
			approved := toolNamed(t, e, "bad", c.tool)
			if st := e.pinState("bad", approved); st.State != PinApproved {
				t.Errorf("after approval: %+v", st)
			}
			if approved.Hash == first.Hash {
				t.Error("the approved version is not shown")
			}
			if d := defaultDecide(ToolInput{Server: e.servers["bad"].cfg, Tool: approved, Pin: e.pinState("bad", approved)}); !d.Allowed {
				t.Errorf("the approved tool is blocked: %+v", d)
			}
			if err := e.Refresh(ctx, "bad"); err != nil {
				t.Fatal(err)
			}
			if st := e.pinState("bad", toolNamed(t, e, "bad", c.tool)); st.State != PinApproved {
				t.Errorf("after approval and a refresh: %+v", st)
			}
			var changed bool
			for len(events) > 0 {
				ev := <-events
				if ev.Type == EventPinsChanged && ev.Tool == c.tool && strings.Contains(ev.Message, c.change) {
					changed = true
				}
			}
			if !changed {
				t.Error("no pin event for the change")
			}
			goodStillServes(t, e)
		})
	}
}

func TestHostileManyTools(t *testing.T) {
	if testing.Short() {
		t.Skip("lists 100,000 tools")
	}
	e := hostile(t, mcptest.ModeManyTools, map[string]any{"maxTools": 64}, server{"discoveryTimeoutMs": 120000})
	ctx := testwait.Context(t)
	start := time.Now()
	if err := e.Connect(ctx, "bad"); err != nil {
		t.Fatal(err)
	}
	t.Logf("listed %d tools in %s", mcptest.ManyTools, time.Since(start))
	m, _ := e.Metadata("bad")
	checkTools(t, m, bound.Limits{MaxTools: 64, MaxDescriptionChars: 2048, MaxSchemaBytes: 64 << 10})
	if len(m.Tools) != 64 || m.Tools[0].Name != "many_000000" || m.Tools[63].Name != "many_000063" {
		t.Errorf("kept %d tools, first %s", len(m.Tools), m.Tools[0].Name)
	}
	sum, _ := e.Server("bad")
	if len(sum.Dropped) != bound.MaxListedItems || !strings.Contains(sum.Dropped[0].Reason, "over the limit of 64 tools") {
		t.Errorf("dropped %d: %+v", len(sum.Dropped), sum.Dropped[:1])
	}
	if !strings.Contains(strings.Join(sum.MetadataNotes, "\n"), fmt.Sprintf("dropped %d more items", mcptest.ManyTools-64-bound.MaxListedItems)) {
		t.Errorf("notes %q", sum.MetadataNotes)
	}
	goodStillServes(t, e)
}

func TestHostileSchemaBomb(t *testing.T) {
	// The first page holds a $ref cycle (kept: refs are never followed),
	// a million-value enum and a 50,000-property schema (both over
	// maxSchemaBytes); the second nests 10,000 levels, which the go-sdk
	// client refuses to decode, ending the session: discovery fails with
	// that reason, and nothing of the server is half-listed.
	// A few MB of schema to decode: give a loaded machine time.
	e := hostile(t, mcptest.ModeSchemaBomb, nil, server{"discoveryTimeoutMs": 50000, "connectTimeoutMs": 50000})
	ctx := testwait.Context(t)
	err := e.Connect(ctx, "bad")
	if err == nil || !strings.Contains(err.Error(), "list tools") || !strings.Contains(err.Error(), "nests deeper than 10000 levels") {
		t.Fatalf("connect: %v", err)
	}
	sum := waitStatus(t, e, "bad", StatusError)
	if !strings.Contains(sum.LastError, "list tools") {
		t.Errorf("last error %q", sum.LastError)
	}
	goodStillServes(t, e)
}

func TestHostileSchemaBombFirstPage(t *testing.T) {
	t.Parallel()
	// The bomb's tools, bounded without the go-sdk in the way: the $ref
	// cycle is kept as written, the oversized and the deep schemas drop
	// their tools, each with its reason.
	refCycle := `{"type":"object","$ref":"#/$defs/a","properties":{"self":{"$ref":"#"}},` +
		`"$defs":{"a":{"type":"object","properties":{"b":{"$ref":"#/$defs/b"},"root":{"$ref":"#"}}},` +
		`"b":{"type":"object","properties":{"a":{"$ref":"#/$defs/a"}}}}}`
	enum := `{"type":"object","properties":{"choice":{"type":"integer","enum":[0` + strings.Repeat(",1", mcptest.HugeEnumValues-1) + `]}}}`
	var wide strings.Builder
	wide.WriteString(`{"type":"object","properties":{"p0":{"type":"string"}`)
	for i := 1; i < mcptest.WideSchemaProperties; i++ {
		fmt.Fprintf(&wide, `,"p%05d":{"type":"string"}`, i)
	}
	wide.WriteString(`}}`)
	b := newBounder("bad", bound.DefaultLimits())
	b.addTools([]Tool{
		{Name: mcptest.ToolRefCycle, InputSchema: json.RawMessage(refCycle)},
		{Name: mcptest.ToolHugeEnum, InputSchema: json.RawMessage(enum)},
		{Name: mcptest.ToolWideSchema, InputSchema: json.RawMessage(wide.String())},
		{Name: mcptest.ToolDeepBomb, InputSchema: json.RawMessage(mcptest.DeepSchemaBomb())},
	})
	m := &Metadata{}
	b.finish(m)
	if len(m.Tools) != 1 || m.Tools[0].Name != mcptest.ToolRefCycle {
		t.Errorf("kept %+v", m.Tools)
	}
	reasons := droppedReasons(m.Dropped)
	for _, name := range []string{mcptest.ToolHugeEnum, mcptest.ToolWideSchema, mcptest.ToolDeepBomb} {
		if !strings.Contains(reasons[name], "input schema") {
			t.Errorf("%s: reason %q", name, reasons[name])
		}
	}
}
func TestHostileFloods(t *testing.T) {
	for _, c := range []struct {
		mode, tool string
		args       map[string]any
		fails      bool   // the call is an error result
		want       string // in the text
	}{
		// 20,000 log and progress notifications, half with a token never
		// sent: the call completes.
		{mcptest.ModeFloodNotify, mcptest.ToolFlood, map[string]any{"count": 20000}, false, "sent 20000 notifications"},
		// 50 MiB in one message: over maxMessageBytes, refused.
		{mcptest.ModeFloodResult, mcptest.ToolFloodResult, nil, true, "maxMessageBytes"},
		// A 6 MiB PNG is 8 MiB of base64: refused likewise.
		{mcptest.ModeBinaryResult, mcptest.ToolImage, nil, true, "maxMessageBytes"},
		// The 64 KiB image passes (settings.media); the 1 MiB blob of
		// no image or audio type is described.
		{mcptest.ModeBinaryResult, mcptest.ToolMixed, nil, false, "[image image/png, 65536 bytes: attached as image content]"},
		{mcptest.ModeBinaryResult, mcptest.ToolMixed, nil, false, "1048576 bytes: not passed on"},
	} {
		t.Run(c.mode+"/"+c.tool, func(t *testing.T) {
			e := hostile(t, c.mode, map[string]any{"maxMessageBytes": 4 << 20}, nil)
			ctx := testwait.Context(t)
			r := e.Gateway(ctx, GatewayInput{Action: "call", Server: "bad", Tool: c.tool, Arguments: c.args})
			if r.IsError != c.fails || !strings.Contains(r.Text, c.want) || len(r.Text) > 64<<10 {
				t.Errorf("error %v, %d bytes: %s", r.IsError, len(r.Text), clip(r.Text, 300))
			}
			goodStillServes(t, e)
		})
	}
}

func TestHostileHugeResource(t *testing.T) {
	t.Parallel()
	e := hostile(t, mcptest.ModeHugeResource, nil, nil)
	ctx := testwait.Context(t)
	if err := e.Connect(ctx, "bad"); err != nil {
		t.Fatal(err)
	}
	for _, uri := range []string{mcptest.HugeTextResource, mcptest.HugeBlobResource} {
		// An oversized message ends the connection; each read starts on a
		// new one, so that it fails for its own reason.
		if err := e.Disconnect(ctx, "bad"); err != nil {
			t.Fatal(err)
		}
		r := e.Gateway(ctx, GatewayInput{Action: "read_resource", Server: "bad", ResourceURI: uri})
		if !r.IsError || !strings.Contains(r.Text, "maxMessageBytes") {
			t.Errorf("%s: error %v, %d bytes: %s", uri, r.IsError, len(r.Text), clip(r.Text, 300))
		}
	}
	goodStillServes(t, e)
}

func TestHostileEndlessLine(t *testing.T) {
	t.Parallel()
	// 100 MiB without a newline: the read stops at maxMessageBytes (1 MiB
	// here) and the connection fails saying why.
	e := hostile(t, mcptest.ModeEndlessLine, map[string]any{"maxMessageBytes": 1 << 20}, nil)
	ctx := testwait.Context(t)
	if err := e.Connect(ctx, "bad"); err == nil {
		t.Fatal("connected to a server that never ends its line")
	}
	sum := waitStatus(t, e, "bad", StatusError)
	if !strings.Contains(sum.LastError, "maxMessageBytes") {
		t.Errorf("last error %q", sum.LastError)
	}
	goodStillServes(t, e)
}
