package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/engine/audit"
	"github.com/voltmcp/voltmcp/internal/testwait"
	"github.com/voltmcp/voltmcp/policies"
)

// TestDefaultDecideMatchesRego keeps the Go rule the engine uses when no
// policy files are configured equal to the default voltmcp.tools policy.
func TestDefaultDecideMatchesRego(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pol, err := policies.Load(ctx, &policies.Options{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	globs := [][]string{nil, {"get_*"}, {"*"}, {"get_?ile", "list_*"}, {"[a-f]*"}}
	names := []string{"get_file", "list_dir", "delete_all", "get_x", "a"}
	pins := []PinState{{}, {State: "new"}, {State: "pinned"}, {State: "changed", Change: "description"},
		{State: "changed", Change: "schema-breaking"}, {State: "changed", Change: "escalation"}, {State: "approved"}}
	n := 0
	for _, inc := range globs {
		for _, exc := range globs {
			for _, name := range names {
				for _, pin := range pins {
					for _, q := range []bool{false, true} {
						in := ToolInput{Server: cue.Server{ID: "s", IncludeTools: inc, ExcludeTools: exc}, Tool: Tool{Name: name},
							Risk: RiskUnknown, Pin: pin, Quarantined: q, Surface: cue.SurfaceServe}
						got := defaultDecide(in)
						want := pol.Tools(ctx, policyToolInput(in))
						if got.Exposed != want.Exposed || got.Allowed != want.Allowed || got.Pending != want.Pending {
							t.Errorf("include %v exclude %v %s pin %+v server not approved %v: Go %+v, Rego %+v", inc, exc, name, pin, q, got, want)
						}
						n++
					}
				}
			}
		}
	}
	t.Logf("%d inputs compared", n)
}

// writePolicy writes a Rego file into a new directory and returns it.
func writePolicy(t *testing.T, name, src string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// auditLines reads the raw audit log of an engine's options.
func auditLines(t *testing.T, opts Options) string {
	t.Helper()
	data, err := os.ReadFile(audit.DefaultPath(filepath.Join(opts.Home, ".volt", "agent")))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestTeamPolicyDeniesAndHides(t *testing.T) {
	t.Parallel()
	dir := writePolicy(t, "team.rego", `package voltmcp.tools

deny contains {"msg": "no echo on Mondays", "rule": "no_echo"} if input.tool.name == "echo"

hide contains "add is not for agents" if input.tool.name == "add"
`)
	opts := workspace(t, map[string]server{"tools": stdio("behave", nil)}, nil)
	opts.PolicyDirs = []string{dir}
	e := start(t, opts)
	if err := e.Connect(testwait.Context(t), "tools"); err != nil {
		t.Fatal(err)
	}
	r := gw(t, e, GatewayInput{Action: "call", Server: "tools", Tool: "echo", Arguments: map[string]any{"text": "hi"}})
	if !r.IsError || !strings.Contains(r.Text, "no echo on Mondays") || !strings.Contains(r.Text, "team.rego:3") {
		t.Fatalf("denied call: %s", r.Text)
	}
	r = gw(t, e, GatewayInput{Action: "search", Query: "add two numbers"})
	for _, m := range r.Data.(map[string]any)["matches"].([]SearchMatch) {
		if m.Tool == "add" {
			t.Errorf("a hidden tool is in search results: %+v", m)
		}
	}
	if r := gw(t, e, GatewayInput{Action: "describe", Server: "tools", Tool: "add"}); !r.IsError || !strings.Contains(r.Text, "add is not for agents") {
		t.Errorf("describe of a hidden tool: %s", r.Text)
	}
	e.Close()
	log := auditLines(t, opts)
	if !strings.Contains(log, `"status":"denied"`) || !strings.Contains(log, "no echo on Mondays") {
		t.Errorf("the denial is not audited:\n%s", log)
	}
}

func TestBrokenPolicyFailsClosed(t *testing.T) {
	t.Parallel()
	dir := writePolicy(t, "broken.rego", "package voltmcp.tools\n\ndeny contains x if {\n")
	opts := workspace(t, map[string]server{"tools": stdio("behave", nil)}, nil)
	opts.PolicyDirs = []string{dir}
	// Trust goes through the broken policy too: even --approve does not
	// load the project.
	e := start(t, opts)
	for _, s := range e.Servers() {
		if s.Status != StatusUntrusted || !strings.Contains(s.Reason, "broken.rego") {
			t.Fatalf("a broken trust policy loaded the project: %+v", s)
		}
	}
	found := false
	for _, d := range e.Diagnostics() {
		found = found || strings.Contains(d.Message, "broken.rego")
	}
	if !found {
		t.Errorf("no diagnostic names the broken policy: %v", e.Diagnostics())
	}
	e.Close()

	// With trust decided elsewhere, every call is refused, naming the file.
	opts.Trust = func(cue.TrustInput) cue.TrustDecision { return cue.TrustDecision{Trusted: true, Reason: "test"} }
	e = start(t, opts)
	if err := e.Connect(testwait.Context(t), "tools"); err != nil {
		t.Fatal(err)
	}
	r := gw(t, e, GatewayInput{Action: "call", Server: "tools", Tool: "echo", Arguments: map[string]any{"text": "hi"}})
	if !r.IsError || !strings.Contains(r.Text, "broken.rego") {
		t.Fatalf("a call went through a broken policy: %s", r.Text)
	}
}

func TestCallsAreAuditedWithoutSecrets(t *testing.T) {
	t.Parallel()
	const canary = "canary-audit-5b7d2e"
	opts := workspace(t, map[string]server{"tools": stdio("behave", server{"env": map[string]string{"API_TOKEN": canary}})}, nil)
	e := start(t, opts)
	r := gw(t, e, GatewayInput{Action: "call", Server: "tools", Tool: "echo", Arguments: map[string]any{"text": "the token is " + canary}})
	if r.IsError {
		t.Fatal(r.Text)
	}
	e.Close()
	log := auditLines(t, opts)
	if strings.Contains(log, canary) {
		t.Fatalf("the audit log holds a secret:\n%s", log)
	}
	recs, problems, err := audit.Read(audit.DefaultPath(filepath.Join(opts.Home, ".volt", "agent")), audit.Query{Kind: audit.KindCall})
	if err != nil || len(problems) > 0 || len(recs) != 1 {
		t.Fatalf("records %v, problems %v, err %v", recs, problems, err)
	}
	c := recs[0]
	// echo claims readOnlyHint, which does not count untrusted.
	if c.Server != "tools" || c.Tool != "echo" || c.Status != "completed" || c.Risk != "unknown" || c.ResultSHA256 == "" ||
		c.Decision == nil || !c.Decision.Allowed || c.Args["text"] == "" || c.Workspace == "" || c.Session == "" {
		t.Errorf("call record: %+v", c)
	}
	if rep, err := audit.Verify(audit.DefaultPath(filepath.Join(opts.Home, ".volt", "agent"))); err != nil || !rep.Intact {
		t.Errorf("verify: %+v %v", rep, err)
	}
}

func TestOutputIsCleanedAndShaped(t *testing.T) {
	t.Parallel()
	e := start(t, workspace(t, map[string]server{"tools": stdio("behave", nil)}, nil))
	hostile := "\x1b[31mred\x1b[0m \u202eevil\u202c \u200bzero\x07 \U000E0041tag"
	r := gw(t, e, GatewayInput{Action: "call", Server: "tools", Tool: "echo", Arguments: map[string]any{"text": hostile}})
	out := r.Data.(CallResult)
	if r.IsError || out.Content != "red evil zero tag" || len(out.Notes) == 0 {
		t.Fatalf("cleaned output = %q, notes %v", out.Content, out.Notes)
	}
	if out.Structured != nil {
		t.Errorf("structured content of a cleaned output is passed through: %v", out.Structured)
	}

	// A JSON array over the inline cap is summarized by the built-in
	// shaper, not cut mid-item; the whole of it goes to the sidecar.
	var items []string
	for i := range 1800 {
		items = append(items, fmt.Sprintf(`{"id":%d,"name":"item number %d"}`, i, i))
	}
	big := "[" + strings.Join(items, ",") + "]"
	r = gw(t, e, GatewayInput{Action: "call", Server: "tools", Tool: "echo", Arguments: map[string]any{"text": big}})
	out = r.Data.(CallResult)
	if out.Truncation == nil || out.Cache == nil || len(out.Content) > 51200 {
		t.Fatalf("large array: truncation %+v cache %+v notes %v content %.200q", out.Truncation, out.Cache, out.Notes, out.Content)
	}
	// The built-in shaper summarizes the array. On a machine too loaded
	// for it to finish within its deadline (the race detector slows the
	// host), it is skipped and says so, and the native cap still holds:
	// either is correct, nothing else is.
	notes := strings.Join(out.Notes, "; ")
	switch {
	case strings.Contains(out.Content, "JSON array of 1800 items"):
	case strings.Contains(notes, "skipped shaper builtin") && strings.Contains(notes, "deadline"):
		t.Logf("the built-in shaper missed its deadline here: %s", notes)
	default:
		t.Fatalf("large array neither summarized nor reported as skipped: notes %v content %.200q", out.Notes, out.Content)
	}
	rc := gw(t, e, GatewayInput{Action: "read_cache", CacheID: out.Cache.ID, Limit: 100})
	if rc.IsError || !strings.HasPrefix(rc.Data.(map[string]any)["content"].(string), `[{"id":0`) {
		t.Errorf("read_cache: %.300s", rc.Text)
	}
}

func TestMismatchedPluginRatesUnknown(t *testing.T) {
	t.Parallel()
	as, err := filepath.Abs(filepath.Join("..", "examples", "plugins", "as", "classifier.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]any{"plugins": map[string]any{"classifiers": []any{map[string]any{"path": as, "sha256": strings.Repeat("0", 64)}}}}
	opts := workspace(t, map[string]server{"tools": stdio("behave", nil)}, nil)
	// Plugins come from user layers only.
	user := filepath.Join(opts.Home, ".volt", "agent", "mcp.json")
	data, _ := json.Marshal(map[string]any{"version": 1, "settings": settings})
	os.MkdirAll(filepath.Dir(user), 0o755)
	if err := os.WriteFile(user, data, 0o644); err != nil {
		t.Fatal(err)
	}
	e := start(t, opts)
	events, cancel := e.Subscribe(256)
	defer cancel()
	if err := e.Connect(testwait.Context(t), "tools"); err != nil {
		t.Fatal(err)
	}
	d := gw(t, e, GatewayInput{Action: "describe", Server: "tools", Tool: "echo"})
	dr := d.Data.(DescribeResult)
	if dr.Risk != RiskUnknown || !strings.Contains(dr.RiskReason, "does not match") {
		t.Fatalf("describe with a refused classifier: risk %s (%s)", dr.Risk, dr.RiskReason)
	}
	// The engine refuses the module as it loads the config, in the
	// background from New, perhaps before the subscription: a reload
	// loads it again while the subscription listens.
	if err := e.Reload(testwait.Context(t)); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(testwait.Patience)
	for {
		select {
		case ev := <-events:
			if ev.Type == EventPluginFault && strings.Contains(ev.Error, "classifier.wasm") {
				return
			}
		case <-deadline:
			t.Fatal("no plugin fault event")
		}
	}
}

// BenchmarkDecide is the tools decision a call makes: rule=builtin is the
// Go rule used when no policy files are configured; rule=rego has a team
// policy file, so the decision is made in Rego once and then served from
// the engine's cache (what every later call of the tool pays);
// rule=rego-memo skips the engine's cache and gets the policy set's own
// memo (the input is JSON-encoded and hashed); rule=rego-evaluated
// evaluates the policy every time.
func BenchmarkDecide(b *testing.B) {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "team.rego"), []byte(`package voltmcp.tools

deny contains "no destructive tools from project servers" if {
	input.risk == "destructive"
	input.server.scope == "project"
}
`), 0o644); err != nil {
		b.Fatal(err)
	}
	in := ToolInput{Server: cue.Server{ID: "github", Transport: "stdio", Command: "npx", ExcludeTools: []string{"delete_*"}},
		Tool: Tool{Name: "create_issue", Hash: "abc"}, Risk: RiskWrite, RiskReason: "name: create", Surface: cue.SurfaceServe}
	noMemo, err := policies.Load(context.Background(), &policies.Options{Dirs: []string{dir}, DisableMemo: true, Timeout: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		dirs []string
		memo bool
		pol  *policies.Policies
	}{{"builtin", nil, true, nil}, {"rego", []string{dir}, true, nil}, {"rego-memo", []string{dir}, false, nil}, {"rego-evaluated", nil, false, noMemo}} {
		b.Run("rule="+tc.name, func(b *testing.B) {
			e := &Engine{opts: Options{PolicyDirs: tc.dirs, Policies: tc.pol}, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			g := newGuard(e, &cue.Config{})
			if d := g.decide(in); !d.Allowed {
				b.Fatalf("decision: %+v", d)
			}
			b.ReportAllocs()
			for b.Loop() {
				if !tc.memo {
					clear(g.decs)
				}
				g.decide(in)
			}
		})
	}
}
