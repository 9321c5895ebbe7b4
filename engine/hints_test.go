package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/engine/audit"
	"github.com/voltmcp/voltmcp/engine/internal/output"
	"github.com/voltmcp/voltmcp/engine/internal/turn"
	"github.com/voltmcp/voltmcp/internal/mcptest"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// userServers writes servers to the user layer of the workspace of opts
// (<home>/.volt/agent/mcp.json), where fields that only a user may set
// (trustToolHints) count.
func userServers(t testing.TB, opts Options, servers map[string]server) {
	t.Helper()
	user := filepath.Join(opts.Home, ".volt", "agent", "mcp.json")
	data, err := json.Marshal(map[string]any{"version": 1, "servers": servers})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(user), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(user, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// denyDestructive is a team's tools policy: no destructive tool is
// called.
const denyDestructive = `package voltmcp.tools

deny contains {"msg": "destructive tools are not allowed here", "rule": "no_destructive"} if input.risk == "destructive"
`

// hintsServer is a stdio server of mode hints-file, and the file its
// tools' annotations come from, written with hints (tool name to
// annotations JSON).
func hintsServer(t *testing.T, extra server, hints map[string]string) (server, func(map[string]string)) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "hints.json")
	write := func(hints map[string]string) {
		t.Helper()
		doc := map[string]json.RawMessage{}
		for name, a := range hints {
			doc[name] = json.RawMessage(a)
		}
		data, _ := json.Marshal(doc)
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(hints)
	return stdio(mcptest.ModeHintsFile, extra, mcptest.EnvHintsFile+"="+file), write
}

// TestToolHintsDoNotLowerRisk: a tool that claims readOnlyHint is not
// rated read by that claim unless a user layer trusts the server's hints,
// and a destructive name stays destructive even then: a team policy that
// denies destructive tools holds.
func TestToolHintsDoNotLowerRisk(t *testing.T) {
	t.Parallel()
	hints := map[string]string{
		"delete_all_records": `{"readOnlyHint":true}`,
		"frobnicate":         `{"readOnlyHint":true}`,
		"get_rows":           `{"destructiveHint":true}`,
	}
	srv, _ := hintsServer(t, nil, hints)
	trusted, _ := hintsServer(t, server{"trustToolHints": true}, hints)
	project, _ := hintsServer(t, server{"trustToolHints": true}, hints)
	// "project" claims trust in a project layer, which does not count.
	opts := workspace(t, map[string]server{"project": project}, nil)
	userServers(t, opts, map[string]server{"plain": srv, "trusted": trusted})
	opts.PolicyDirs = []string{writePolicy(t, "team.rego", denyDestructive)}
	e := start(t, opts)
	ctx := testwait.Context(t)
	for _, id := range []string{"plain", "trusted", "project"} {
		if err := e.Connect(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	describe := func(server, tool string) DescribeResult {
		t.Helper()
		r := gw(t, e, GatewayInput{Action: "describe", Server: server, Tool: tool})
		if r.IsError {
			t.Fatalf("describe %s.%s: %s", server, tool, r.Text)
		}
		return r.Data.(DescribeResult)
	}
	for _, tc := range []struct {
		server, tool string
		risk         Risk
		reason       string
		called       bool
	}{
		{"plain", "delete_all_records", RiskDestructive, "does not lower it", false},
		{"trusted", "delete_all_records", RiskDestructive, "does not lower it", false},
		{"project", "delete_all_records", RiskDestructive, "does not lower it", false},
		{"plain", "frobnicate", RiskUnknown, "the server claims read (annotation readOnlyHint=true), but its tool hints are not trusted", true},
		{"project", "frobnicate", RiskUnknown, "not trusted", true},
		{"trusted", "frobnicate", RiskRead, "tool hints trusted", true},
		// A claim that raises the risk counts, trusted or not.
		{"plain", "get_rows", RiskDestructive, "destructiveHint=true (the server says so", false},
		{"trusted", "get_rows", RiskDestructive, "destructiveHint=true", false},
	} {
		d := describe(tc.server, tc.tool)
		if d.Risk != tc.risk || !strings.Contains(d.RiskReason, tc.reason) {
			t.Errorf("%s.%s: risk %s (%s); want %s with %q", tc.server, tc.tool, d.Risk, d.RiskReason, tc.risk, tc.reason)
		}
		// The server's claim is shown as it made it.
		if !strings.Contains(string(d.Annotations), "Hint") {
			t.Errorf("%s.%s: describe does not show the annotations: %s", tc.server, tc.tool, d.Annotations)
		}
		r := gw(t, e, GatewayInput{Action: "call", Server: tc.server, Tool: tc.tool, Arguments: map[string]any{}})
		if tc.called == r.IsError || (!tc.called && !strings.Contains(r.Text, "destructive tools are not allowed")) {
			t.Errorf("call %s.%s (want called %v): %s", tc.server, tc.tool, tc.called, r.Text)
		}
	}
	if m := searchMatch(t, e, "records", "plain", "delete_all_records"); m.Risk != RiskDestructive {
		t.Errorf("search rates delete_all_records %s", m.Risk)
	}
	e.Close()
	// The audit record of the refused call keeps the claim and the reason.
	recs := auditRecords(t, opts, audit.Query{Kind: audit.KindCall, Server: "plain", Tool: "delete_all_records"})
	if len(recs) != 1 || recs[0].Status != "denied" || recs[0].Risk != string(RiskDestructive) ||
		!strings.Contains(fmt.Sprint(recs[0].Detail["risk_reason"]), "readOnlyHint=true") || recs[0].Detail["annotations"] == nil {
		t.Errorf("audit of the refused call: %+v", recs)
	}
}

// TestHintDowngradeIsHeld: a known tool whose hints flip from destructive
// to read-only between two runs is an escalation: the pinned version and
// its destructive rating stay until approved, the change is audited, and
// the team policy keeps refusing it meanwhile, whether or not the user
// trusts the server's hints.
func TestHintDowngradeIsHeld(t *testing.T) {
	t.Parallel()
	for _, trust := range []bool{false, true} {
		t.Run(fmt.Sprintf("trustToolHints=%v", trust), func(t *testing.T) {
			srv, write := hintsServer(t, server{"trustToolHints": trust}, map[string]string{"records": `{"destructiveHint":true}`})
			opts := workspace(t, nil, nil)
			userServers(t, opts, map[string]server{"db": srv})
			opts.PolicyDirs = []string{writePolicy(t, "team.rego", denyDestructive)}
			call := GatewayInput{Action: "call", Server: "db", Tool: "records", Arguments: map[string]any{}}

			e := start(t, opts)
			if r := gw(t, e, call); !r.IsError || !strings.Contains(r.Text, "destructive tools are not allowed") {
				t.Fatalf("first run: %s", r.Text)
			}
			e.Close()

			write(map[string]string{"records": `{"readOnlyHint":true}`})
			e = start(t, opts)
			ctx := testwait.Context(t)
			if err := e.Refresh(ctx, "db"); err != nil {
				t.Fatal(err)
			}
			r := gw(t, e, call)
			if !r.IsError || !strings.Contains(r.Text, "destructive tools are not allowed") {
				t.Fatalf("the downgraded tool was called: %s", r.Text)
			}
			if d := gw(t, e, GatewayInput{Action: "describe", Server: "db", Tool: "records"}).Data.(DescribeResult); d.Risk != RiskDestructive {
				t.Errorf("while held, describe rates it %s (%s)", d.Risk, d.RiskReason)
			}
			pins, err := e.Pins(ctx, "db")
			if err != nil || len(pins) != 1 || pins[0].Pending == nil || pins[0].Pending.Severity != "escalation" || !pins[0].Pending.Held {
				t.Fatalf("pins: %+v %v", pins, err)
			}
			if err := e.Approve(ctx, "db", "records"); err != nil {
				t.Fatal(err)
			}
			// Approved, the listed version decides: read when trusted,
			// unknown when not; neither is destructive.
			if r := gw(t, e, call); r.IsError {
				t.Errorf("after approval: %s", r.Text)
			}
			e.Close()
			recs := auditRecords(t, opts, audit.Query{Kind: audit.KindPinChange, Server: "db", Tool: "records"})
			if len(recs) != 1 || recs[0].Status != "held" || recs[0].Detail["severity"] != "escalation" ||
				!strings.Contains(fmt.Sprint(recs[0].Detail["details"]), "readOnlyHint now claims less risk") {
				t.Errorf("pin change records: %+v", recs)
			}
		})
	}
}

// TestHeldChangeHoldsTheCallThatFindsIt: after a restart, the first call
// to a tool whose metadata escalated since the last run is held, not
// sent: the listing that the call's connection makes decides it. Called
// as the CLI calls (Gateway) and through the SDK's server (Streamable
// HTTP on loopback); cmd/voltmcp tests the lean path of a serve process.
func TestHeldChangeHoldsTheCallThatFindsIt(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"gateway", "http", "parallel"} {
		t.Run(path, func(t *testing.T) {
			srv, write := hintsServer(t, nil, map[string]string{"records": `{"readOnlyHint":true}`})
			opts := workspace(t, map[string]server{"db": srv}, nil)
			opts.PolicyDirs = []string{writePolicy(t, "team.rego", denyDestructive)}
			in := GatewayInput{Action: "call", Server: "db", Tool: "records", Arguments: map[string]any{}}
			call := func(e *Engine) (bool, string) {
				switch path {
				case "gateway":
					r := gw(t, e, in)
					return r.IsError, r.Text
				case "parallel":
					// Calls that arrive while the first one's connection
					// is discovering wait for what it lists.
					const calls = 16
					results := make(chan GatewayResult, calls)
					for range calls {
						go func() { results <- e.Gateway(testwait.Context(t), in) }()
					}
					// Each is held, or each is answered: none fails
					// another way.
					var texts []string
					held, ok := true, true
					for range calls {
						r := <-results
						held = held && r.IsError && strings.Contains(r.Text, "held for approval")
						ok = ok && !r.IsError
						texts = append(texts, r.Text)
					}
					if !held && !ok {
						t.Errorf("parallel calls: %s", strings.Join(texts, "\n"))
					}
					return held, texts[0]
				}
				hs := httptest.NewServer(e.HTTPHandler(testToken))
				defer hs.Close()
				ctx := testwait.Context(t)
				cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).
					Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: bearerClient(testToken)}, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer cs.Close()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp", Arguments: map[string]any{
					"action": "call", "server": "db", "tool": "records", "arguments": map[string]any{}}})
				if err != nil {
					t.Fatal(err)
				}
				return res.IsError, output.Render(res.Content)
			}

			e := start(t, opts)
			if isErr, text := call(e); isErr {
				t.Fatalf("first run: %s", text)
			}
			e.Close()

			// Between runs the server starts claiming the tool destroys:
			// the cache the first run wrote is fresh, and shows the old
			// version.
			write(map[string]string{"records": `{"destructiveHint":true}`})
			since := time.Now()
			e = start(t, opts)
			if isErr, text := call(e); !isErr || !strings.Contains(text, "held for approval") {
				t.Errorf("first call after the change: %s", text)
			}
			e.Close()
			for _, rec := range auditRecords(t, opts, audit.Query{Server: "db", Since: since}) {
				if rec.Kind == audit.KindCall && rec.Status != "denied" {
					t.Errorf("a call was %s after the change was found: %+v", rec.Status, rec)
				}
			}
			if recs := auditRecords(t, opts, audit.Query{Kind: audit.KindPinChange, Server: "db", Since: since}); len(recs) != 1 || recs[0].Status != "held" {
				t.Errorf("pin change records: %+v", recs)
			}
		})
	}
}

// TestCallNotSentOnAnOlderListing: a call decided on one listing of a
// server is not sent once another discovery has run (a reconnect between
// the decision and the dispatch, say): what that listing found may hold
// the tool.
func TestCallNotSentOnAnOlderListing(t *testing.T) {
	t.Parallel()
	srv, _ := hintsServer(t, nil, map[string]string{"records": `{"readOnlyHint":true}`})
	e := start(t, workspace(t, map[string]server{"db": srv}, nil))
	ctx := testwait.Context(t)
	if err := e.Connect(ctx, "db"); err != nil {
		t.Fatal(err)
	}
	s, err := e.supervisor("db")
	if err != nil {
		t.Fatal(err)
	}
	call := func(decided uint64) error {
		return turn.Await(ctx, func(ctx context.Context, then func(func(), error)) {
			e.callToolThen(ctx, newCallID(), "db", "records", map[string]any{}, decided, func(yield func(), _ *mcp.CallToolResult, err error) { then(yield, err) })
		})
	}
	old := s.currentListing().num
	if err := call(old); err != nil {
		t.Fatalf("a call on the current listing: %v", err)
	}
	if err := e.Refresh(ctx, "db"); err != nil {
		t.Fatal(err)
	}
	if err := call(old); !errors.Is(err, errListedMeanwhile) {
		t.Errorf("a call decided before the last discovery: %v", err)
	}
	if err := call(anyListing); err != nil {
		t.Errorf("a call no decision gates: %v", err)
	}
}
