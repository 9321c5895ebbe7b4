package engine

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/engine/audit"
	"github.com/voltmcp/voltmcp/internal/mcptest"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// auditRecords reads the audit log of an engine's options, failing on
// any problem in it.
func auditRecords(t *testing.T, opts Options, q audit.Query) []audit.Record {
	t.Helper()
	recs, probs, err := audit.Read(audit.DefaultPath(filepath.Join(opts.Home, ".volt", "agent")), q)
	if err != nil || len(probs) != 0 {
		t.Fatalf("read audit log: %v %v", err, probs)
	}
	return recs
}

// searchMatch returns the search match of server.tool, or fails.
func searchMatch(t *testing.T, e *Engine, query, server, tool string) SearchMatch {
	t.Helper()
	r := gw(t, e, GatewayInput{Action: "search", Query: query, Server: server})
	if r.IsError {
		t.Fatalf("search: %s", r.Text)
	}
	for _, m := range r.Data.(map[string]any)["matches"].([]SearchMatch) {
		if m.Server == server && m.Tool == tool {
			return m
		}
	}
	t.Fatalf("search %q has no %s.%s: %s", query, server, tool, r.Text)
	return SearchMatch{}
}

func TestQuarantineHoldsNewServersUntilApproved(t *testing.T) {
	t.Parallel()
	opts := workspace(t, map[string]server{"old": stdio("behave", nil), "fresh": stdio("behave", nil)}, nil)
	echo := GatewayInput{Action: "call", Tool: "echo", Arguments: map[string]any{"text": "hi"}}
	call := func(e *Engine, server string) GatewayResult {
		in := echo
		in.Server = server
		return gw(t, e, in)
	}

	// Without quarantine, "old" is seen first: it is approved by its
	// first sight.
	e := start(t, opts)
	if err := e.Connect(testwait.Context(t), "old"); err != nil {
		t.Fatal(err)
	}
	e.Close()

	// A user policy turns quarantine on. "fresh" is seen for the first
	// time now; "old" is not new.
	opts.PolicyDirs = []string{writePolicy(t, "quarantine.rego", "package voltmcp.tools\n\nquarantine_new_servers if true\n")}
	e = start(t, opts)
	ctx := testwait.Context(t)
	for _, id := range []string{"old", "fresh"} {
		if err := e.Connect(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if r := call(e, "old"); r.IsError {
		t.Errorf("a server seen before quarantine applied is held: %s", r.Text)
	}
	r := call(e, "fresh")
	if !r.IsError || !strings.Contains(r.Text, "held for approval") || !strings.Contains(r.Text, "quarantined") ||
		!strings.Contains(r.Text, "voltmcp approve fresh") {
		t.Fatalf("call to a quarantined server: %s", r.Text)
	}
	if m := searchMatch(t, e, "echo text back", "fresh", "echo"); !strings.Contains(m.Pending, "quarantined") {
		t.Errorf("search does not show the quarantined tool as pending: %+v", m)
	}
	if m := searchMatch(t, e, "echo text back", "old", "echo"); m.Pending != "" {
		t.Errorf("search shows an approved server's tool as pending: %+v", m)
	}
	if r := gw(t, e, GatewayInput{Action: "describe", Server: "fresh", Tool: "echo"}); r.IsError || !strings.Contains(r.Text, "echo") {
		t.Errorf("describe of a quarantined tool: %s", r.Text)
	}
	// status says which server waits, and how to let it through.
	if sum, _ := e.Server("fresh"); !sum.Quarantined {
		t.Errorf("the summary of the quarantined server: %+v", sum)
	}
	if sum, _ := e.Server("old"); sum.Quarantined {
		t.Errorf("the summary of the approved server says quarantined")
	}
	if st := gw(t, e, GatewayInput{Action: "status"}); !strings.Contains(st.Text, `"quarantined":true`) ||
		!strings.Contains(st.Text, "voltmcp approve fresh") {
		t.Errorf("status does not show the quarantined server: %s", clip(st.Text, 2000))
	}
	pins, err := e.Pins(ctx, "fresh")
	if err != nil || len(pins) == 0 || !pins[0].Quarantined {
		t.Errorf("pins of the quarantined server: %+v, %v", pins, err)
	}
	if pins, _ := e.Pins(ctx, "old"); len(pins) == 0 || pins[0].Quarantined {
		t.Errorf("pins of the approved server: %+v", pins)
	}
	// Approving a tool does not approve its server.
	if err := e.Approve(ctx, "fresh", "echo"); err == nil {
		t.Error("approving a tool without a pending change worked")
	}

	// Another engine approves, as `voltmcp approve fresh` does; the
	// serving one sees it without a refresh, within pinRecheck.
	passive := opts
	passive.Passive = true
	other := start(t, passive)
	if err := other.Approve(ctx, "fresh"); err != nil {
		t.Fatal(err)
	}
	other.Close()
	approvedAt, deadline := time.Now(), testwait.Deadline(t)
	for r := call(e, "fresh"); r.IsError; r = call(e, "fresh") {
		if time.Now().After(deadline) {
			t.Fatalf("call %s after the server was approved: %s", time.Since(approvedAt), r.Text)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if m := searchMatch(t, e, "echo text back", "fresh", "echo"); m.Pending != "" {
		t.Errorf("search still shows the approved server as pending: %+v", m)
	}
	if sum, _ := e.Server("fresh"); sum.Quarantined {
		t.Errorf("the summary of the approved server still says quarantined")
	}
	e.Close()

	recs := auditRecords(t, opts, audit.Query{Server: "fresh"})
	var kinds []string
	for _, r := range recs {
		kinds = append(kinds, r.Kind+":"+r.Status)
	}
	for _, want := range []string{"pin_change:quarantined", "call:denied", "approve:approved", "call:completed"} {
		if !slices.Contains(kinds, want) {
			t.Errorf("the audit log of fresh lacks %s: %v", want, kinds)
		}
	}
	for _, r := range recs {
		if r.Kind == audit.KindApprove && r.Detail["server"] != true {
			t.Errorf("the approval does not say the server was approved: %+v", r.Detail)
		}
		if r.Kind == audit.KindCall && r.Status == "denied" && r.Detail["quarantined"] != true {
			t.Errorf("the refused call does not record that the server was held: %+v", r.Detail)
		}
	}
	if recs := auditRecords(t, opts, audit.Query{Server: "old", Kind: audit.KindPinChange}); len(recs) != 0 {
		t.Errorf("the server seen before quarantine has pin_change records: %+v", recs)
	}
}

func TestQuarantineByCondition(t *testing.T) {
	t.Parallel()
	// Only project servers are held, and one approved ahead of its first
	// sight is not.
	opts := workspace(t, map[string]server{"a": stdio("behave", nil), "b": stdio("behave", nil)}, nil)
	opts.PolicyDirs = []string{writePolicy(t, "quarantine.rego", `package voltmcp.tools

quarantine_new_servers if input.server.scope == "project"
`)}
	e := start(t, opts)
	ctx := testwait.Context(t)
	if err := e.Approve(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		if err := e.Connect(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if r := gw(t, e, GatewayInput{Action: "call", Server: "a", Tool: "echo", Arguments: map[string]any{"text": "x"}}); !r.IsError || !strings.Contains(r.Text, "held for approval") {
		t.Errorf("a new project server is not held: %s", r.Text)
	}
	if r := gw(t, e, GatewayInput{Action: "call", Server: "b", Tool: "echo", Arguments: map[string]any{"text": "x"}}); r.IsError {
		t.Errorf("a server approved ahead is held: %s", r.Text)
	}
}

func TestQuarantineFailsClosedOnFirstSight(t *testing.T) {
	t.Parallel()
	// A quarantine rule of the wrong type makes every decision deny, and
	// the server seen meanwhile is recorded as waiting for approval: a
	// fixed policy that quarantines still holds it.
	opts := workspace(t, map[string]server{"s": stdio("behave", nil)}, nil)
	opts.PolicyDirs = []string{writePolicy(t, "quarantine.rego", "package voltmcp.tools\n\nquarantine_new_servers := \"yes\"\n")}
	e := start(t, opts)
	if err := e.Connect(testwait.Context(t), "s"); err != nil {
		t.Fatal(err)
	}
	if r := gw(t, e, GatewayInput{Action: "call", Server: "s", Tool: "echo", Arguments: map[string]any{"text": "x"}}); !r.IsError || !strings.Contains(r.Text, "quarantine_new_servers must be true or false") {
		t.Errorf("call under a bad quarantine rule: %s", r.Text)
	}
	e.Close()
	opts.PolicyDirs = []string{writePolicy(t, "quarantine.rego", "package voltmcp.tools\n\nquarantine_new_servers if true\n")}
	e = start(t, opts)
	if err := e.Connect(testwait.Context(t), "s"); err != nil {
		t.Fatal(err)
	}
	if r := gw(t, e, GatewayInput{Action: "call", Server: "s", Tool: "echo", Arguments: map[string]any{"text": "x"}}); !r.IsError || !strings.Contains(r.Text, "held for approval") {
		t.Errorf("a server first seen under a broken policy is not held: %s", r.Text)
	}
}

func TestPinChangesAndApprovalsAreAudited(t *testing.T) {
	t.Parallel()
	url := mcptest.ServeStreamableOnly(t, mcptest.ModeRugPullDestructive)
	opts := workspace(t, map[string]server{"bad": {"url": url}}, nil)
	e := start(t, opts)
	ctx := testwait.Context(t)
	if err := e.Connect(ctx, "bad"); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second refresh finds the same pending change
		if err := e.Refresh(ctx, "bad"); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Approve(ctx, "bad"); err != nil {
		t.Fatal(err)
	}
	e.Close()
	changes := auditRecords(t, opts, audit.Query{Kind: audit.KindPinChange})
	if len(changes) != 1 {
		t.Fatalf("pin_change records: %+v", changes)
	}
	c := changes[0]
	details, _ := c.Detail["details"].([]any)
	if c.Server != "bad" || c.Tool != mcptest.RugPullTool || c.Status != "held" || c.Detail["severity"] != "escalation" || len(details) == 0 {
		t.Errorf("pin_change record: %+v", c)
	}
	approvals := auditRecords(t, opts, audit.Query{Kind: audit.KindApprove})
	if len(approvals) != 1 {
		t.Fatalf("approve records: %+v", approvals)
	}
	a := approvals[0]
	if tools, _ := a.Detail["tools"].([]any); a.Server != "bad" || len(tools) != 1 || tools[0] != mcptest.RugPullTool || a.Detail["server"] != false {
		t.Errorf("approve record: %+v", a)
	}
}

func TestSetEnabledIsAudited(t *testing.T) {
	t.Parallel()
	opts := workspace(t, map[string]server{"s": stdio("behave", nil)}, nil)
	e := start(t, opts)
	ctx := testwait.Context(t)
	if err := e.SetEnabled(ctx, "s", false); err != nil {
		t.Fatal(err)
	}
	if err := e.SetEnabled(ctx, "s", true); err != nil {
		t.Fatal(err)
	}
	e.Close()
	recs := auditRecords(t, opts, audit.Query{Kind: audit.KindConfigChange})
	if len(recs) != 2 {
		t.Fatalf("config_change records: %+v", recs)
	}
	for i, want := range []bool{false, true} {
		if r := recs[i]; r.Server != "s" || r.Detail["enabled"] != want || r.Detail["change"] != "set_enabled" || r.Detail["layer"] != "project" {
			t.Errorf("record %d: %+v", i, r)
		}
	}
}

// TestDecidePanicOnFirstSightHoldsTheServer checks that an Options.Decide
// hook that panics while a new server is looked at holds the server for
// approval (fail closed) rather than ending discovery, that the engine
// goes on serving, and that the panic's value is not logged.
func TestDecidePanicOnFirstSightHoldsTheServer(t *testing.T) {
	t.Parallel()
	const canary = "sk-decide-canary-91c3"
	opts := workspace(t, map[string]server{"s": stdio("behave", nil)}, nil)
	// The hook holds the tools of a server waiting for approval, and
	// panics on them while boom is set.
	var boom atomic.Bool
	opts.Decide = func(in ToolInput) ToolDecision {
		if in.Quarantined {
			if boom.Load() {
				panic(canary)
			}
			return ToolDecision{Exposed: true, Pending: true, Reasons: []string{"waiting for approval"}}
		}
		return ToolDecision{Exposed: true, Allowed: true}
	}
	logs := &syncWriter{w: &bytes.Buffer{}}
	opts.Logger = slog.New(slog.NewTextHandler(logs, nil))
	e := start(t, opts)
	boom.Store(true)
	if err := e.Connect(testwait.Context(t), "s"); err != nil {
		t.Fatal(err)
	}
	boom.Store(false)
	sum, err := e.Server("s")
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Quarantined {
		t.Error("a server whose first-sight decision panicked is not held")
	}
	if r := gw(t, e, GatewayInput{Action: "call", Server: "s", Tool: "echo", Arguments: map[string]any{"text": "x"}}); !r.IsError || !strings.Contains(r.Text, "held for approval") {
		t.Errorf("a call to the held server: %s", r.Text)
	}
	if r := gw(t, e, GatewayInput{Action: "list_servers"}); r.IsError {
		t.Errorf("the engine stopped serving: %s", r.Text)
	}
	logs.mu.Lock()
	logged := logs.w.String()
	logs.mu.Unlock()
	if !strings.Contains(logged, "the Decide hook panicked") {
		t.Errorf("the panic was not logged: %s", logged)
	}
	if strings.Contains(logged, canary) {
		t.Error("the panic's value was logged")
	}
}
