package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/engine/audit"
	"github.com/voltmcp/voltmcp/internal/mcptest"
	"github.com/voltmcp/voltmcp/policies"
)

// replayT0 is the time of the first record of a test log.
var replayT0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// callRec is a call record as the engine writes it: the decision, and
// the tools input in Detail. Slices the engine leaves nil are nil here too.
func callRec(sec int, server, tool, risk, status string, allowed bool, reasons ...string) audit.Record {
	return audit.Record{
		Time: replayT0.Add(time.Duration(sec) * time.Second), Kind: audit.KindCall, Surface: "serve",
		Server: server, Tool: tool, Risk: risk, Status: status,
		Args:     audit.SummarizeArgs(json.RawMessage(`{"amount":10}`)),
		Decision: &audit.Decision{Allowed: allowed, Reasons: reasons},
		Detail: map[string]any{
			"risk_reason": "destructiveHint", "pin_state": "pinned", "pin_change": "", "quarantined": false,
			"server_scope": "user", "transport": "stdio", "command": "npx", "args": []string{"-y", "@acme/" + server + "-mcp@1.0.0"},
			"url": "", "include_tools": []string(nil), "exclude_tools": []string(nil),
			"annotations": json.RawMessage(`{"destructiveHint":true}`),
		},
	}
}

// writeLog appends recs to a new audit log under a temporary agent dir
// and returns the agent dir and the log's path.
func writeLog(t *testing.T, recs ...audit.Record) (agentDir, path string) {
	t.Helper()
	agentDir = t.TempDir()
	path = audit.DefaultPath(agentDir)
	l, err := audit.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := l.Append(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return agentDir, path
}

// policyDir writes one policy file into a new directory.
func policyDir(t *testing.T, name, src string) (dir, file string) {
	t.Helper()
	dir = t.TempDir()
	file = filepath.Join(dir, name)
	if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, file
}

const paymentsDenyRego = `package voltmcp.tools

deny contains {"msg": "no destructive tools on payments", "rule": "payments_no_destruction"} if {
	input.server.id == "payments"
	input.risk == "destructive"
}
`

// paymentsLog is a log of three allowed calls, one of them destructive on
// payments, and a record of another kind that replay ignores.
func paymentsLog(t *testing.T) (agentDir, path string) {
	return writeLog(t,
		audit.Record{Time: replayT0, Kind: audit.KindTrust, Status: "trusted"},
		callRec(1, "payments", "refund", "destructive", "completed", true),
		callRec(2, "payments", "list_charges", "read", "completed", true),
		callRec(3, "github", "create_issue", "write", "failed", true),
	)
}

func TestPolicyReplayDenyBlocksRecordedCall(t *testing.T) {
	t.Parallel()
	_, path := paymentsLog(t)
	dir, file := policyDir(t, "payments.rego", paymentsDenyRego)
	r := runCLI(t, nil, "policy", "replay", "--audit", path, "--policy", dir)
	if r.code != exitFindings || r.stderr != "" {
		t.Fatalf("want exit 1 and empty stderr\n%s", r)
	}
	want := "2026-05-01T12:00:01.000Z  payments.refund  allowed → blocked: no destructive tools on payments (payments_no_destruction at " + file + ":3)\n" +
		"replayed 3 calls under the built-in policies + " + dir + ": 2 same, 1 now blocked, 0 now allowed, 0 policy errors, 0 skipped\n"
	if r.stdout != want {
		t.Errorf("got\n%s\nwant\n%s", r.stdout, want)
	}

	j := runCLI(t, nil, "policy", "replay", "--audit", path, "--policy", dir, "--json")
	if j.code != exitFindings {
		t.Fatalf("--json: want exit 1\n%s", j)
	}
	var rep policies.ReplayReport
	if err := json.Unmarshal([]byte(j.stdout), &rep); err != nil {
		t.Fatalf("--json output is not a report: %v\n%s", err, j)
	}
	if rep.Total != 3 || rep.Same != 2 || len(rep.NowBlocked) != 1 || len(rep.NowAllowed) != 0 {
		t.Fatalf("report %+v", rep)
	}
	c := rep.NowBlocked[0]
	if c.Seq != 2 || c.Server != "payments" || c.Tool != "refund" || !c.WasAllowed || c.Now.Allowed ||
		len(c.Now.Reasons) != 1 || c.Now.Reasons[0].File != file || c.Now.Reasons[0].Line != 3 {
		t.Errorf("change %+v", c)
	}
	for _, key := range []string{`"now_blocked"`, `"now_allowed": []`, `"errors": []`, `"skipped": []`, `"was_allowed": true`} {
		if !strings.Contains(j.stdout, key) {
			t.Errorf("--json output lacks %s\n%s", key, j.stdout)
		}
	}
}

func TestPolicyReplayUnchangedExitsZero(t *testing.T) {
	t.Parallel()
	agentDir, _ := paymentsLog(t)
	// The default log of --agent-dir, under the built-in policies that
	// allowed every call.
	r := runCLI(t, nil, "--agent-dir", agentDir, "policy", "replay")
	if r.code != exitOK || r.stdout != "replayed 3 calls under the built-in policies: 3 same, 0 now blocked, 0 now allowed, 0 policy errors, 0 skipped\n" {
		t.Fatalf("want exit 0 and only the summary\n%s", r)
	}
}

func TestPolicyReplayAllowLiftsRecordedDenial(t *testing.T) {
	t.Parallel()
	gate := `tool "deploy" changed since it was pinned (schema-breaking); approve the change before calling it (pin_change at builtin/tools.rego:98)`
	held := callRec(1, "internal", "deploy", "write", "denied", false, gate)
	held.Detail["pin_state"], held.Detail["pin_change"] = "changed", "schema-breaking"
	other := callRec(2, "github", "deploy", "write", "denied", false, gate)
	other.Detail["pin_state"], other.Detail["pin_change"] = "changed", "schema-breaking"
	_, path := writeLog(t, held, other)

	// The built-in policies still hold both.
	if r := runCLI(t, nil, "policy", "replay", "--audit", path); r.code != exitOK {
		t.Fatalf("built-in policies: want exit 0\n%s", r)
	}
	dir, file := policyDir(t, "internal.rego", `package voltmcp.tools

allow contains {"msg": "changes to internal servers need no approval", "rule": "internal_changes"} if {
	input.server.id == "internal"
}
`)
	r := runCLI(t, nil, "policy", "replay", "--audit", path, "--policy", dir)
	want := "2026-05-01T12:00:01.000Z  internal.deploy  blocked → allowed: changes to internal servers need no approval (internal_changes at " + file + ":3)\n"
	if r.code != exitFindings || !strings.HasPrefix(r.stdout, want) ||
		!strings.HasSuffix(r.stdout, ": 1 same, 0 now blocked, 1 now allowed, 0 policy errors, 0 skipped\n") {
		t.Fatalf("want exit 1, the lifted call and the summary\n%s", r)
	}
}

func TestPolicyReplayRemovedDenyAllows(t *testing.T) {
	t.Parallel()
	// A call a deny rule blocked is allowed once the rule is gone; the
	// line says no rule denies it now.
	denied := callRec(1, "payments", "refund", "destructive", "denied", false,
		"no destructive tools on payments (payments_no_destruction at policies/payments.rego:3)")
	_, path := writeLog(t, denied)
	r := runCLI(t, nil, "policy", "replay", "--audit", path)
	if r.code != exitFindings || !strings.Contains(r.stdout, "payments.refund  blocked → allowed: no rule denies it now\n") {
		t.Fatalf("want the call now allowed\n%s", r)
	}
}

func TestPolicyReplayErrorsAndSkips(t *testing.T) {
	t.Parallel()
	bad := callRec(2, "github", "create_issue", "write", "completed", true)
	bad.Detail["quarantined"] = "yes"
	noDecision := callRec(3, "github", "list_issues", "read", "completed", true)
	noDecision.Decision = nil
	_, path := writeLog(t, callRec(1, "github", "create_issue", "write", "completed", true), bad, noDecision)

	r := runCLI(t, nil, "policy", "replay", "--audit", path)
	if r.code != exitOK || !strings.Contains(r.stdout, `github.create_issue  skipped (seq 2): detail "quarantined" is not a boolean`) ||
		!strings.HasSuffix(r.stdout, ": 2 same, 0 now blocked, 0 now allowed, 0 policy errors, 1 skipped\n") {
		t.Fatalf("want exit 0 with one skipped record\n%s", r)
	}

	// A rule that fails on these inputs is a policy error, and a change.
	dir, file := policyDir(t, "typo.rego", "package voltmcp.tools\n\ndeny contains \"x\" if {\n\tto_number(input.tool.name) > 1\n}\n")
	e := runCLI(t, nil, "policy", "replay", "--audit", path, "--policy", dir)
	if e.code != exitFindings || !strings.Contains(e.stdout, "github.create_issue  allowed → policy error (blocked): policy tools failed closed") ||
		!strings.Contains(e.stdout, file) || !strings.HasSuffix(e.stdout, ": 0 same, 0 now blocked, 0 now allowed, 2 policy errors, 1 skipped\n") {
		t.Fatalf("want exit 1 with two policy errors naming %s\n%s", file, e)
	}
}

func TestPolicyReplayFailures(t *testing.T) {
	t.Parallel()
	_, path := paymentsLog(t)
	missing := filepath.Join(t.TempDir(), "none.jsonl")
	if r := runCLI(t, nil, "policy", "replay", "--audit", missing); r.code != exitFailure || !strings.Contains(r.stderr, "no audit log at") ||
		!strings.Contains(r.stderr, "--audit)") || strings.Contains(r.stderr, "--file") {
		t.Errorf("missing log: want exit 3 naming replay's own flag, --audit\n%s", r)
	}
	dir, file := policyDir(t, "broken.rego", "package voltmcp.tools\n\ndeny contains \"x\" if {\n")
	if r := runCLI(t, nil, "policy", "replay", "--audit", path, "--policy", dir); r.code != exitFailure || !strings.Contains(r.stderr, file+":") {
		t.Errorf("broken policy: want exit 3 naming %s\n%s", file, r)
	}
	for _, args := range [][]string{
		{"policy", "replay", "extra"},
		{"policy", "replay", "--input", "x.json"},
		{"policy", "replay", "--explain"},
		{"policy", "test", "--audit", path},
		{"policy", "test", "--policy", "x"},
		{"--policy", "x", "policy", "test"},
		{"policy", "eval", "tools", "--input", "-", "--json"},
		{"policy", "replya"},
	} {
		if r := runCLI(t, nil, args...); r.code != exitUsage {
			t.Errorf("%v: want exit 2\n%s", args, r)
		}
	}
	if r := runCLI(t, nil, "policy", "replya"); !strings.Contains(r.stderr, `did you mean "replay"`) {
		t.Errorf("want a suggestion\n%s", r)
	}
}

// TestReplayRecordReadsWhatTheEngineWrites round-trips a call record
// through the log and checks that the tools input comes back as the
// engine built it.
func TestReplayRecordReadsWhatTheEngineWrites(t *testing.T) {
	t.Parallel()
	rec := callRec(1, "payments", "refund", "destructive", "completed", true, "ok")
	rec.Surface = "daemon"
	rec.Detail["server_scope"], rec.Detail["quarantined"] = "project", true
	rec.Detail["pin_state"], rec.Detail["pin_change"] = "changed", "escalation"
	rec.Detail["include_tools"], rec.Detail["exclude_tools"] = []string{"*"}, []string{"admin_*"}
	rec.Detail["url"], rec.Detail["transport"] = "https://mcp.example.com/", "streamable-http"
	rec.Detail["title"], rec.Detail["tool_hash"] = "Refund a charge", "0f0f"
	_, path := writeLog(t, rec)
	recs, probs, err := audit.Read(path, audit.Query{})
	if err != nil || len(probs) != 0 || len(recs) != 1 {
		t.Fatalf("read back: %v %v %d records", err, probs, len(recs))
	}
	got := replayRecord(recs[0])
	want := policies.ReplayRecord{
		Seq: 1, Time: replayT0.Add(time.Second), Status: "completed", Allowed: true, Reasons: []string{"ok"},
		Input: policies.ToolInput{
			Server: policies.Server{ID: "payments", Scope: "project", Transport: "streamable-http", Command: "npx",
				Args: []string{"-y", "@acme/payments-mcp@1.0.0"}, URL: "https://mcp.example.com/"},
			Tool:         policies.Tool{Name: "refund", Title: "Refund a charge", Annotations: json.RawMessage(`{"destructiveHint":true}`)},
			Risk:         "destructive",
			RiskReason:   "destructiveHint",
			IncludeTools: []string{"*"},
			ExcludeTools: []string{"admin_*"},
			Pin:          policies.Pin{State: "changed", Change: "escalation"},
			Quarantined:  true,
			Surface:      "daemon",
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("replay record\n got  %+v\n want %+v", got, want)
	}
}

func TestReplayRecordVerdictWithoutDecision(t *testing.T) {
	t.Parallel()
	for status, want := range map[string]bool{"completed": true, "failed": true, "error": true, "denied": false} {
		r := callRec(1, "s", "t", "read", status, true)
		r.Decision = nil
		if got := replayRecord(r).Allowed; got != want {
			t.Errorf("status %s without a decision: allowed %t, want %t", status, got, want)
		}
	}
	for key, v := range map[string]any{"args": "npx", "include_tools": []any{"a", 1}, "pin_state": 3, "quarantined": "true"} {
		r := callRec(1, "s", "t", "read", "completed", true)
		r.Detail = map[string]any{key: v}
		if got := replayRecord(r).Invalid; !strings.Contains(got, `"`+key+`"`) {
			t.Errorf("detail %s = %v: invalid %q, want it named", key, v, got)
		}
	}
}

// TestPolicyReplayOfAGatewayCallSeesItsTitle records a real call through
// the gateway (`voltmcp call`) that a policy on the tool's title denies,
// and replays the log: under the same policy the call is decided as
// recorded, which it is only if the record kept the title the live
// decision saw; under the built-in policies it is now allowed.
func TestPolicyReplayOfAGatewayCallSeesItsTitle(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	// The hostile-text tool has a title; the gateway cleans it.
	cmd, args, env := mcptest.Command(mcptest.ModeHostileText)
	doc := map[string]any{"version": 1, "servers": map[string]any{"docs": map[string]any{"command": cmd, "args": args, "env": env}}}
	data, _ := json.Marshal(doc)
	if err := os.MkdirAll(filepath.Join(project, ".volt"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, ".volt", "mcp.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	dir, _ := policyDir(t, "title.rego", `package voltmcp.tools

deny contains {"msg": "titled tools are held", "rule": "no_titles"} if input.tool.title != ""
`)
	home := t.TempDir()
	cliEnv := fakeEnv(t, map[string]string{"HOME": home, "PATH": os.Getenv("PATH")})
	r := runCLI(t, cliEnv, "call", "docs", mcptest.ToolHostileText, "--home", home, "--project", project, "--approve", "--policy", dir)
	if r.code == exitOK || !strings.Contains(r.stdout+r.stderr, "titled tools are held") {
		t.Fatalf("the call was not denied by its title:\n%s", r)
	}
	same := runCLI(t, cliEnv, "policy", "replay", "--home", home, "--policy", dir)
	if same.code != exitOK || !strings.HasSuffix(same.stdout, "1 same, 0 now blocked, 0 now allowed, 0 policy errors, 0 skipped\n") {
		t.Errorf("replay under the same policy: want the call decided as recorded\n%s", same)
	}
	builtin := runCLI(t, cliEnv, "policy", "replay", "--home", home)
	if builtin.code != exitFindings || !strings.Contains(builtin.stdout, "docs."+mcptest.ToolHostileText+"  blocked → allowed") {
		t.Errorf("replay under the built-in policies: want the call now allowed\n%s", builtin)
	}
}
