package policies

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// paymentsDeny denies destructive tools of the payments server.
const paymentsDeny = `package voltmcp.tools

deny contains {"msg": "no destructive tools on payments", "rule": "payments_no_destruction"} if {
	input.server.id == "payments"
	input.risk == "destructive"
}
`

// replayCall is a recorded call of tool on server with the given risk,
// recorded as allowed by the built-in policies.
func replayCall(seq int64, server, tool, risk string) ReplayRecord {
	in := githubTool()
	in.Server.ID, in.Tool.Name, in.Risk = server, tool, risk
	return ReplayRecord{
		Seq: seq, Time: time.Date(2026, 5, 1, 12, 0, int(seq), 0, time.UTC),
		Status: "completed", Input: in, Allowed: true,
	}
}

func loadReplay(t *testing.T, opts *Options) *Policies {
	t.Helper()
	p, err := Load(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// checkTotal checks that every record is accounted for exactly once.
func checkTotal(t *testing.T, rep ReplayReport, n int) {
	t.Helper()
	if rep.Total != n || rep.Same+len(rep.NowBlocked)+len(rep.NowAllowed)+len(rep.Errors)+len(rep.Skipped) != n {
		t.Errorf("report does not account for %d records: %+v", n, rep)
	}
}

func TestReplayDenyRuleBlocksRecordedCalls(t *testing.T) {
	t.Parallel()
	dir, file := writePolicy(t, "payments.rego", paymentsDeny)
	p := loadReplay(t, &Options{Dirs: []string{dir}})
	recs := []ReplayRecord{
		replayCall(1, "payments", "refund", "destructive"),
		replayCall(2, "payments", "list_charges", "read"),
		replayCall(3, "github", "delete_repo", "destructive"),
		replayCall(4, "payments", "refund", "destructive"),
	}
	rep, err := p.Replay(t.Context(), recs)
	if err != nil {
		t.Fatal(err)
	}
	checkTotal(t, rep, 4)
	if rep.Same != 2 || len(rep.NowAllowed) != 0 || len(rep.Errors) != 0 || len(rep.Skipped) != 0 || !rep.Changed() {
		t.Fatalf("report %+v", rep)
	}
	if len(rep.NowBlocked) != 2 || rep.NowBlocked[0].Seq != 1 || rep.NowBlocked[1].Seq != 4 {
		t.Fatalf("now blocked %+v, want seq 1 and 4", rep.NowBlocked)
	}
	c := rep.NowBlocked[0]
	if c.Server != "payments" || c.Tool != "refund" || c.Risk != "destructive" || !c.WasAllowed || c.Now.Allowed || !c.Now.Exposed ||
		!c.Time.Equal(recs[0].Time) || c.Status != "completed" {
		t.Errorf("change %+v", c)
	}
	if len(c.Now.Reasons) != 1 {
		t.Fatalf("reasons %+v", c.Now.Reasons)
	}
	r := c.Now.Reasons[0]
	if r.Rule != "payments_no_destruction" || r.File != file || r.Line != 3 || r.Message != "no destructive tools on payments" {
		t.Errorf("reason %+v, want the rule at %s:3", r, file)
	}
}

func TestReplayAllowLiftsRecordedDenial(t *testing.T) {
	t.Parallel()
	// The built-in policies held a schema-breaking change for approval;
	// a team policy lifts the gate for its own server.
	dir, file := writePolicy(t, "trusted.rego", `package voltmcp.tools

allow contains {"msg": "internal server changes need no approval", "rule": "internal_changes"} if {
	input.server.id == "internal"
}
`)
	changed := replayCall(7, "internal", "deploy", "write")
	changed.Input.Pin = Pin{State: "changed", Change: "schema-breaking"}
	changed.Status, changed.Allowed = "denied", false
	changed.Reasons = []string{`tool "deploy" changed since it was pinned (schema-breaking); approve the change before calling it`}
	other := replayCall(8, "github", "deploy", "write")
	other.Input.Pin = changed.Input.Pin
	other.Status, other.Allowed = "denied", false
	recs := []ReplayRecord{changed, other}

	// The built-in policies alone decide both as recorded.
	base, err := loadReplay(t, nil).Replay(t.Context(), recs)
	if err != nil {
		t.Fatal(err)
	}
	if base.Same != 2 || base.Changed() {
		t.Fatalf("built-in replay of its own decisions changed: %+v", base)
	}

	rep, err := loadReplay(t, &Options{Dirs: []string{dir}}).Replay(t.Context(), recs)
	if err != nil {
		t.Fatal(err)
	}
	checkTotal(t, rep, 2)
	if rep.Same != 1 || len(rep.NowBlocked) != 0 || len(rep.NowAllowed) != 1 {
		t.Fatalf("report %+v", rep)
	}
	c := rep.NowAllowed[0]
	if c.Seq != 7 || c.WasAllowed || !c.Now.Allowed || c.Status != "denied" || len(c.WasReasons) != 1 {
		t.Errorf("change %+v", c)
	}
	if len(c.Now.Reasons) != 1 || c.Now.Reasons[0].Rule != "internal_changes" || c.Now.Reasons[0].File != file {
		t.Errorf("reasons %+v, want the allow rule of %s", c.Now.Reasons, file)
	}
}

func TestReplayPolicyFailureIsAnError(t *testing.T) {
	t.Parallel()
	dir, file := writePolicy(t, "typo.rego", "package voltmcp.tools\n\ndeny contains \"x\" if {\n\tto_number(input.tool.name) > 1\n}\n")
	p := loadReplay(t, &Options{Dirs: []string{dir}})
	denied := replayCall(2, "github", "delete_repo", "destructive")
	denied.Allowed, denied.Status = false, "denied"
	rep, err := p.Replay(t.Context(), []ReplayRecord{replayCall(1, "github", "create_issue", "write"), denied})
	if err != nil {
		t.Fatal(err)
	}
	checkTotal(t, rep, 2)
	// Both fail, whatever was recorded: a policy that errors on a call is
	// worth knowing about even where the verdict (deny) would not change.
	if len(rep.Errors) != 2 || rep.Same != 0 || len(rep.NowBlocked) != 0 || !rep.Changed() {
		t.Fatalf("report %+v", rep)
	}
	e := rep.Errors[0]
	if e.Seq != 1 || !e.WasAllowed || e.Server != "github" || e.Tool != "create_issue" ||
		e.Reason.File != file || !strings.Contains(e.Reason.Message, "failed closed") {
		t.Errorf("error %+v, want a fail-closed reason naming %s", e, file)
	}
}

func TestReplaySkipsRecordsItCannotDecide(t *testing.T) {
	t.Parallel()
	p := loadReplay(t, nil)
	noTool := replayCall(1, "github", "", "write")
	noServer := replayCall(2, "", "create_issue", "write")
	invalid := replayCall(3, "github", "create_issue", "write")
	invalid.Invalid = `detail "quarantined" is a string, want a boolean`
	rep, err := p.Replay(t.Context(), []ReplayRecord{noTool, noServer, invalid, replayCall(4, "github", "create_issue", "write")})
	if err != nil {
		t.Fatal(err)
	}
	checkTotal(t, rep, 4)
	if rep.Same != 1 || len(rep.Skipped) != 3 || rep.Changed() {
		t.Fatalf("report %+v", rep)
	}
	if rep.Skipped[2].Reason.Message != invalid.Invalid || rep.Skipped[0].Reason.Message == "" {
		t.Errorf("skipped %+v", rep.Skipped)
	}
}

func TestReplayEmptyAndUnchanged(t *testing.T) {
	t.Parallel()
	p := loadReplay(t, nil)
	rep, err := p.Replay(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// The lists are empty, not nil, so JSON shows [] rather than null.
	if rep.Total != 0 || rep.Changed() || rep.NowBlocked == nil || rep.NowAllowed == nil || rep.Errors == nil || rep.Skipped == nil {
		t.Errorf("report %+v", rep)
	}
}

func TestReplayFailsOnLoadErrorAndCancellation(t *testing.T) {
	t.Parallel()
	p, lerr := Load(t.Context(), &Options{Dirs: []string{filepath.Join(t.TempDir(), "missing")}})
	if lerr == nil {
		t.Fatal("want a load error")
	}
	if _, err := p.Replay(t.Context(), []ReplayRecord{replayCall(1, "github", "x", "read")}); !errors.Is(err, lerr) {
		t.Errorf("replay on a failed load: %v, want the load error", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := loadReplay(t, nil).Replay(ctx, []ReplayRecord{replayCall(1, "github", "x", "read")}); !errors.Is(err, context.Canceled) {
		t.Errorf("replay with a canceled context: %v", err)
	}
}
