package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/engine/audit"
	"github.com/voltmcp/voltmcp/internal/mcptest"
	"github.com/voltmcp/voltmcp/internal/testwait"
	"github.com/voltmcp/voltmcp/policies"
)

// echoInputPolicy denies every tool that has a title, with the whole
// input document it was decided on as the reason's message.
const echoInputPolicy = `package voltmcp.tools

deny contains {"msg": json.marshal(input), "rule": "echo_input"} if input.tool.title != ""
`

// TestReplaySeesTheLiveInput checks that a call's audit record holds the
// tools input the live decision was made on, title included: read back
// as `voltmcp policy replay` reads it (policies.ToolInputRecord.Input)
// and decided again under the same policy, the call is decided the same
// way, and the policy sees the same input document, byte for byte.
func TestReplaySeesTheLiveInput(t *testing.T) {
	t.Parallel()
	dir := writePolicy(t, "echo.rego", echoInputPolicy)
	// The hostile-text tool has a title; the engine cleans it.
	opts := workspace(t, map[string]server{"s": stdio(mcptest.ModeHostileText, nil)}, nil)
	opts.PolicyDirs = []string{dir}
	e := start(t, opts)
	ctx := testwait.Context(t)
	if err := e.Connect(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	title := toolNamed(t, e, "s", mcptest.ToolHostileText).Title
	if title == "" {
		t.Fatal("the tool has no title: the test proves nothing")
	}
	r := gw(t, e, GatewayInput{Action: "call", Server: "s", Tool: mcptest.ToolHostileText, Arguments: map[string]any{}})
	if !r.IsError || !strings.Contains(r.Text, "echo_input") {
		t.Fatalf("the echo policy did not deny the call: %s", r.Text)
	}
	e.Close()

	recs := auditRecords(t, opts, audit.Query{Kind: audit.KindCall, Server: "s", Tool: mcptest.ToolHostileText})
	if len(recs) != 1 || recs[0].Status != "denied" || recs[0].Decision == nil || len(recs[0].Decision.Reasons) != 1 {
		t.Fatalf("call records %+v", recs)
	}
	rec := recs[0]
	in, err := policies.ToolInputRecord{Server: rec.Server, Tool: rec.Tool, Risk: rec.Risk, Surface: rec.Surface, Detail: rec.Detail}.Input()
	if err != nil {
		t.Fatal(err)
	}
	if in.Tool.Title != title {
		t.Errorf("the record's title is %q, the live one %q", in.Tool.Title, title)
	}
	pol, err := policies.Load(ctx, &policies.Options{Dirs: []string{dir}, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	d := pol.Tools(ctx, in)
	if d.Err != nil || d.Allowed || len(d.Reasons) != 1 {
		t.Fatalf("replayed decision %+v", d)
	}
	if live, replayed := rec.Decision.Reasons[0], d.Reasons[0].String(); live != replayed {
		t.Errorf("the policy saw another input on replay:\n live     %s\n replayed %s", live, replayed)
	}
	rep, err := pol.Replay(ctx, []policies.ReplayRecord{{Seq: rec.Seq, Time: rec.Time, Status: rec.Status, Input: in,
		Allowed: rec.Decision.Allowed, Reasons: rec.Decision.Reasons}})
	if err != nil || rep.Same != 1 {
		t.Errorf("replay %+v, %v; want the call decided as recorded", rep, err)
	}
}
