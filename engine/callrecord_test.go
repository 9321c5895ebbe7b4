package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/engine/audit"
	"github.com/voltmcp/voltmcp/internal/testwait"
	"github.com/voltmcp/voltmcp/policies"
)

// callCase is one call of TestEveryCallLeavesOneRecord and the call
// record it must leave.
type callCase struct {
	name         string
	in           GatewayInput
	status       string // the record's status
	reason       string // in the record's decision reasons or reason
	policyErrors bool   // the call writes policy_error records too
}

// TestEveryCallLeavesOneRecord makes calls that end every way a call can
// end before the server answers, and some that reach it, on two
// surfaces (the Go API and the agent's JSON input): each leaves exactly
// one call record, with the status and reason of its end, and a policy
// that fails or times out also leaves a policy_error record.
func TestEveryCallLeavesOneRecord(t *testing.T) {
	t.Parallel()
	trust := func(cue.TrustInput) cue.TrustDecision { return cue.TrustDecision{Trusted: true, Reason: "test"} }
	servers := map[string]server{
		"s":     stdio("behave", server{"excludeTools": []string{"fail"}}),
		"fresh": stdio("behave", nil),
		"off":   stdio("behave", server{"enabled": false}),
	}
	echo := func(server string) GatewayInput {
		return GatewayInput{Action: "call", Server: server, Tool: "echo", Arguments: map[string]any{"text": "hi"}}
	}
	for _, eng := range []struct {
		name  string
		setup func(t *testing.T, opts *Options)
		cases []callCase
	}{
		{"rules", func(t *testing.T, opts *Options) {
			opts.PolicyDirs = []string{writePolicy(t, "team.rego", `package voltmcp.tools

hide contains "the team hides add" if input.tool.name == "add"

deny contains "the team denies slow" if input.tool.name == "slow"

quarantine_new_servers if input.server.id == "fresh"
`)}
		}, []callCase{
			{"allowed", echo("s"), "completed", "", false},
			{"tool error", GatewayInput{Action: "call", Server: "s", Tool: "big", ArgumentsJSON: `{"bytes": -1}`}, "failed", "", false},
			{"hidden", GatewayInput{Action: "call", Server: "s", Tool: "add", Arguments: map[string]any{"a": 1, "b": 2}}, "denied", "the team hides add", false},
			{"excluded", GatewayInput{Action: "call", Server: "s", Tool: "fail"}, "denied", "excluded by excludeTools fail", false},
			{"denied", GatewayInput{Action: "call", Server: "s", Tool: "slow", ArgumentsJSON: `{"ms": 1}`}, "denied", "the team denies slow", false},
			{"unknown tool", GatewayInput{Action: "call", Server: "s", Tool: "nosuch"}, "invalid", `has no tool "nosuch"`, false},
			{"missing tool", GatewayInput{Action: "call", Server: "s"}, "invalid", "missing tool", false},
			{"unknown server", echo("nosuch"), "invalid", "nosuch", false},
			{"disabled server", echo("off"), "denied", "server off is", false},
			{"held", echo("fresh"), "denied", "quarantined", false},
			{"bad arguments", GatewayInput{Action: "call", Server: "s", Tool: "echo", ArgumentsJSON: `[1]`}, "invalid", "not a JSON object", false},
		}},
		{"policy error", func(t *testing.T, opts *Options) {
			opts.PolicyDirs = []string{t.TempDir()} // holds no policy: every decision fails
			opts.Trust = trust
		}, []callCase{
			{"policy error", echo("s"), "denied", "holds no policy", true},
		}},
		{"policy timeout", func(t *testing.T, opts *Options) {
			dir := writePolicy(t, "team.rego", `package voltmcp.tools

deny contains "never" if count([x | some x in numbers.range(1, 200000)]) < 0
`)
			p, err := policies.Load(context.Background(), &policies.Options{Dirs: []string{dir}, Timeout: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			opts.Policies, opts.Trust = p, trust
		}, []callCase{
			{"policy timeout", echo("s"), "denied", "did not finish within", true},
		}},
	} {
		t.Run(eng.name, func(t *testing.T) {
			opts := workspace(t, servers, nil)
			eng.setup(t, &opts)
			e := start(t, opts)
			ctx := testwait.Context(t)
			if err := e.Connect(ctx, "s"); err != nil {
				t.Fatal(err)
			}
			var want []callCase
			for _, c := range eng.cases {
				// The Go API's input, and the agent's JSON.
				r := e.Gateway(ctx, c.in)
				if (c.status == "completed") == r.IsError {
					t.Errorf("%s: %s", c.name, r.Text)
				}
				raw, err := json.Marshal(c.in)
				if err != nil {
					t.Fatal(err)
				}
				e.gatewayRun(ctx, raw)
				want = append(want, c, c)
			}
			// The recent calls of every configured server, by id.
			recent := map[string]RecentCall{}
			for id := range servers {
				calls, err := e.RecentCalls(id)
				if err != nil {
					t.Fatal(err)
				}
				for _, rc := range calls {
					recent[rc.ID] = rc
				}
			}
			e.Close()
			recs := auditRecords(t, opts, audit.Query{Kind: audit.KindCall})
			// Each call of a configured server is one recent call, with
			// the id, status and outcome of its record: both are made at
			// the one place a call's record is (callAudit).
			mine := 0
			for _, r := range recs {
				if _, ok := servers[r.Server]; !ok {
					continue
				}
				mine++
				rc, ok := recent[r.CallID]
				status, outcome := callStatus(r.Status, false)
				if !ok || r.CallID == "" || rc.Server != r.Server || rc.Status != status || rc.Outcome != outcome {
					t.Errorf("record %s.%s %s (call %q) is recent call %+v", r.Server, r.Tool, r.Status, r.CallID, rc)
				}
				if outcome != "" && rc.Reason == "" {
					t.Errorf("recent call %+v says no reason", rc)
				}
			}
			if mine != len(recent) {
				t.Errorf("%d call records of configured servers, %d recent calls", mine, len(recent))
			}
			if len(recs) != len(want) {
				for _, r := range recs {
					t.Logf("record: %s.%s %s %v %q", r.Server, r.Tool, r.Status, r.Decision, r.Reason)
				}
				t.Fatalf("%d call records for %d calls", len(recs), len(want))
			}
			policyErrors := 0
			for i, c := range want {
				r := recs[i]
				if r.Server != c.in.Server || r.Tool != c.in.Tool {
					t.Errorf("%s: record %d is of %s.%s", c.name, i, r.Server, r.Tool)
				}
				if c.status != "" && r.Status != c.status {
					t.Errorf("%s: status %q, want %q", c.name, r.Status, c.status)
				}
				why := r.Reason
				if r.Decision != nil {
					why += " " + strings.Join(r.Decision.Reasons, "; ")
				}
				if !strings.Contains(why, c.reason) {
					t.Errorf("%s: the record's reason is %q, want it to say %q", c.name, why, c.reason)
				}
				if c.policyErrors {
					policyErrors++
				}
			}
			pe := auditRecords(t, opts, audit.Query{Kind: audit.KindPolicyError})
			tools := 0
			for _, r := range pe {
				if r.Detail["area"] == "tools" {
					tools++
				}
			}
			if tools < policyErrors || (policyErrors == 0 && tools > 0) {
				t.Errorf("%d policy_error records of tools decisions for %d calls the policy failed on", tools, policyErrors)
			}
		})
	}
}
