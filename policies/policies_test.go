package policies

import (
	"context"
	"fmt"
	"path"
	"strings"
	"sync"
	"testing"
	"time"
)

// mustLoad loads policies for a test. Unless the test sets a deadline, it
// gets a generous one: these tests check decisions, not speed, and a
// loaded machine (or -race) can make one evaluation take longer than the
// default deadline, which would rightly fail closed.
func mustLoad(t testing.TB, opts *Options) *Policies {
	t.Helper()
	o := Options{}
	if opts != nil {
		o = *opts
	}
	if o.Timeout == 0 {
		o.Timeout = time.Minute
	}
	p, err := Load(context.Background(), &o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// decideTrustRef is the built-in trust rule the Rego trust policy
// replaces (cue.DecideTrust), restated here because policies may not
// import cue.
func decideTrustRef(in TrustInput) (bool, string) {
	switch {
	case in.NoApprove:
		return false, "--no-approve ignores project MCP config"
	case in.Approve:
		return true, "--approve trusts the project for this run"
	}
	switch in.DefaultProjectTrust {
	case "always":
		return true, `defaultProjectTrust is "always"`
	case "never":
		return false, `defaultProjectTrust is "never"`
	}
	return false, fmt.Sprintf(`defaultProjectTrust is "ask" and the %s surface cannot ask; run with --approve to trust it for one run`, in.Surface)
}

func TestTrustReproducesBuiltinRule(t *testing.T) {
	t.Parallel()
	p := mustLoad(t, nil)
	for _, surface := range []string{"interactive", "serve", "print", "json", "rpc", "daemon", "vet"} {
		for _, def := range []string{"ask", "never", "always", "", "bogus"} {
			for _, flags := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
				in := askInput()
				in.Surface, in.DefaultProjectTrust, in.Approve, in.NoApprove = surface, def, flags[0], flags[1]
				wantTrusted, wantMsg := decideTrustRef(in)
				d := p.Trust(context.Background(), in)
				if d.Trusted != wantTrusted || d.NeedsTrust || len(d.Reasons) != 1 || d.Reasons[0].Message != wantMsg {
					t.Errorf("%+v: got %+v, want trusted=%v %q", in, d, wantTrusted, wantMsg)
				}
			}
		}
	}
}

func TestTrustRecord(t *testing.T) {
	t.Parallel()
	p := mustLoad(t, nil)
	in := askInput()
	in.TrustedProjects = []FileHash{{Path: "/src/app/.mcp.json", ContentHash: "sha256:aaa"}}
	if d := p.Trust(context.Background(), in); !d.Trusted || d.NeedsTrust {
		t.Errorf("matching record: %+v", d)
	}
	in.TrustedProjects[0].ContentHash = "sha256:old"
	d := p.Trust(context.Background(), in)
	if d.Trusted || !d.NeedsTrust {
		t.Fatalf("changed file: %+v", d)
	}
	var found bool
	for _, r := range d.Reasons {
		found = found || strings.Contains(r.Message, "/src/app/.mcp.json changed since trust was recorded")
	}
	if !found {
		t.Errorf("no reason says the file changed: %+v", d.Reasons)
	}
}

// decideToolsRef is the engine's built-in tools rule (include/exclude
// with path.Match, exclude wins), restated for comparison.
func decideToolsRef(include, exclude []string, name string) (exposed bool, reason string) {
	match := func(g string) bool { ok, err := path.Match(g, name); return err == nil && ok }
	for _, g := range exclude {
		if match(g) {
			return false, "excluded by excludeTools " + g
		}
	}
	if len(include) > 0 {
		for _, g := range include {
			if match(g) {
				return true, ""
			}
		}
		return false, "not in includeTools"
	}
	return true, ""
}

func TestToolsGlobsReproduceBuiltinRule(t *testing.T) {
	t.Parallel()
	p := mustLoad(t, &Options{DisableMemo: true})
	patterns := []string{
		"*", "", "create_*", "*_issue", "create_?ssue", "c*e*", "[a-c]*", "[^a-c]*", "[!c]*", "[z-a]*",
		"[c-c]reate_issue", "\\c*", "create\\_issue", "{create,delete}_issue", "create_issue", "CREATE_ISSUE",
		"[", "[]", "*[", "a\\", "[a-]", "[\\]]*", "create.issue", "create_iss(ue|ux)", "^create", "create_issue$",
		"**", "*/*", "?reate_issue", "??", "[^^]*", "[-a]", "delete-*", "*-*",
	}
	names := []string{"create_issue", "delete_issue", "list-repos", "c", "", "zz", "/x", "create.issue", "CREATE_ISSUE", "ärger"}
	for _, pat := range patterns {
		for _, name := range names {
			for _, where := range []string{"include", "exclude"} {
				in := githubTool()
				in.Tool.Name = name
				var inc, exc []string
				if where == "include" {
					inc = []string{pat}
				} else {
					exc = []string{pat}
				}
				in.IncludeTools, in.ExcludeTools = inc, exc
				want, reason := decideToolsRef(inc, exc, name)
				d := p.Tools(context.Background(), in)
				if d.Exposed != want || d.Allowed != want {
					t.Errorf("%s %q, tool %q: got %+v, want exposed=allowed=%v", where, pat, name, d, want)
					continue
				}
				if !want && (len(d.Reasons) != 1 || d.Reasons[0].Message != reason) {
					t.Errorf("%s %q, tool %q: reasons %+v, want %q", where, pat, name, d.Reasons, reason)
				}
			}
		}
	}
}

func TestToolsExcludeWins(t *testing.T) {
	t.Parallel()
	p := mustLoad(t, nil)
	in := githubTool()
	in.IncludeTools, in.ExcludeTools = []string{"*"}, []string{"create_*"}
	d := p.Tools(context.Background(), in)
	if d.Exposed || d.Allowed || len(d.Reasons) != 1 || d.Reasons[0].Message != "excluded by excludeTools create_*" {
		t.Fatalf("got %+v", d)
	}
}

// lineOf returns the 1-based line of the first line of an embedded policy
// file containing s.
func lineOf(t *testing.T, file, s string) int {
	t.Helper()
	b, err := bundleFS.ReadFile("rego/" + file)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, s) {
			return i + 1
		}
	}
	t.Fatalf("%s has no %q", file, s)
	return 0
}

func TestReasonsNameRuleFileAndLine(t *testing.T) {
	t.Parallel()
	p := mustLoad(t, nil)
	in := githubTool()
	in.Pin = Pin{State: "changed", Change: "schema-breaking"}
	d := p.Tools(context.Background(), in)
	want := Reason{
		Message: `tool "create_issue" changed since it was pinned (schema-breaking); approve the change before calling it`,
		Rule:    "pin_change", File: "builtin/tools.rego", Line: lineOf(t, "tools.rego", `"rule": "pin_change"`),
	}
	if !d.Exposed || d.Allowed || !d.Pending || len(d.Reasons) != 1 || d.Reasons[0] != want {
		t.Fatalf("got %+v\nwant reason %+v", d, want)
	}
	// Extension rules of the bundle are located by their head.
	in = githubTool()
	in.ExcludeTools = []string{"create_*"}
	d = p.Tools(context.Background(), in)
	if r := d.Reasons[0]; r.Rule != "exclude_tools" || r.File != "builtin/tools.rego" || r.Line != lineOf(t, "tools.rego", `hide contains {"msg": concat("", ["excluded`) {
		t.Fatalf("got %+v", r)
	}
}

func TestUserRulesAndTheirLocations(t *testing.T) {
	t.Parallel()
	dir, file := writePolicy(t, "org.rego", `package voltmcp.tools

deny contains {"msg": "destructive tools need the ops server", "rule": "ops_only"} if {
	input.risk == "destructive"
	input.server.id != "ops"
}

hide contains "experimental tools are hidden" if startswith(input.tool.name, "x_")
`)
	p := mustLoad(t, &Options{Dirs: []string{dir}})
	in := githubTool()
	in.Risk = "destructive"
	d := p.Tools(context.Background(), in)
	want := Reason{Message: "destructive tools need the ops server", Rule: "ops_only", File: file, Line: 3}
	if !d.Exposed || d.Allowed || d.Pending || len(d.Reasons) != 1 || d.Reasons[0] != want {
		t.Fatalf("got %+v, want reason %+v", d, want)
	}
	in = githubTool()
	in.Tool.Name = "x_magic"
	d = p.Tools(context.Background(), in)
	want = Reason{Message: "experimental tools are hidden", Rule: "hide", File: file, Line: 8}
	if d.Exposed || d.Allowed || len(d.Reasons) != 1 || d.Reasons[0] != want {
		t.Fatalf("got %+v, want reason %+v", d, want)
	}
}

func TestRemoteDefaults(t *testing.T) {
	t.Parallel()
	p := mustLoad(t, nil)
	tests := []struct {
		in   RemoteInput
		want bool
	}{
		{RemoteInput{Command: "add_mcp_server", Caller: "local"}, true},
		{RemoteInput{Command: "add_mcp_server", Caller: "remote"}, false},
		{RemoteInput{Command: "set_mcp_server_env", Caller: "remote", Server: "github", ServerInTrustedConfig: true}, false},
		{RemoteInput{Command: "set_mcp_env_allowlist", Caller: "remote", Server: "github", ServerInTrustedConfig: true}, false},
		{RemoteInput{Command: "list_mcp_servers", Caller: "remote"}, true},
		{RemoteInput{Command: "connect_mcp_server", Caller: "remote", Server: "github", ServerInTrustedConfig: true}, true},
		{RemoteInput{Command: "connect_mcp_server", Caller: "remote", Server: "github"}, false},
		{RemoteInput{Command: "start_mcp_server_auth", Caller: "remote", Server: "github", ServerInTrustedConfig: true, AuthFlow: "device"}, true},
		{RemoteInput{Command: "start_mcp_server_auth", Caller: "remote", Server: "github", ServerInTrustedConfig: true, AuthFlow: "browser"}, false},
		{RemoteInput{Command: "complete_mcp_server_auth", Caller: "remote", Server: "github", ServerInTrustedConfig: true}, false},
		{RemoteInput{Command: "list_mcp_servers", Caller: ""}, false},
	}
	for _, tt := range tests {
		d := p.Remote(context.Background(), tt.in)
		if d.Allow != tt.want || len(d.Reasons) == 0 {
			t.Errorf("%+v: got %+v, want allow=%v", tt.in, d, tt.want)
		}
	}
}

func TestMemoReturnsCopiesAndStaysBounded(t *testing.T) {
	t.Parallel()
	p := mustLoad(t, nil)
	in := githubTool()
	in.ExcludeTools = []string{"*"}
	d := p.Tools(context.Background(), in)
	d.Reasons[0].Message = "mutated"
	if d2 := p.Tools(context.Background(), in); d2.Reasons[0].Message == "mutated" {
		t.Fatal("memo shares reasons with callers")
	}
	m := newMemo(8)
	for i := range 100 {
		m.put(inputKey("tools", []byte(fmt.Sprint(i))), i)
	}
	if len(m.m) > 8 {
		t.Fatalf("memo grew to %d entries", len(m.m))
	}
}

func TestConcurrentDecisions(t *testing.T) {
	t.Parallel()
	p := mustLoad(t, nil)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 20 {
				in := githubTool()
				in.Tool.Name = fmt.Sprintf("tool_%d_%d", i, j%5)
				if d := p.Tools(context.Background(), in); !d.Allowed {
					t.Errorf("got %+v", d)
				}
			}
		})
	}
	wg.Wait()
}

func TestEvalExplain(t *testing.T) {
	t.Parallel()
	p := mustLoad(t, nil)
	out, trace, err := p.Eval(context.Background(), AreaTools, []byte(`{"tool":{"name":"create_issue"},"exclude_tools":["create_*"]}`), true)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"exposed": false`) || !strings.Contains(string(out), "excluded by excludeTools create_*") {
		t.Errorf("decision:\n%s", out)
	}
	if !strings.Contains(trace, "data.voltmcp.tools.decision") || !strings.Contains(trace, "builtin/tools.rego") {
		t.Errorf("trace does not show the evaluation:\n%.2000s", trace)
	}
	out, _, err = p.Eval(context.Background(), AreaRedact, []byte(`{"env_names":["GITHUB_TOKEN"]}`), false)
	if err != nil || !strings.Contains(string(out), `"GITHUB_TOKEN"`) {
		t.Fatalf("redact spec: %v\n%s", err, out)
	}
}
