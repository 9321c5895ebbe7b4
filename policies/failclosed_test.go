package policies

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

// assertClosed checks that every decision of p fails closed and that the
// tools reason mentions each of want.
func assertClosed(t *testing.T, p *Policies, want ...string) {
	t.Helper()
	if p == nil {
		t.Fatal("Load returned a nil *Policies with its error")
	}
	ctx := context.Background()
	td := p.Tools(ctx, githubTool())
	if td.Allowed || td.Exposed || td.Pending {
		t.Errorf("tools decision did not fail closed: %+v", td)
	}
	if len(td.Reasons) != 1 {
		t.Fatalf("want one reason, got %+v", td.Reasons)
	}
	for _, w := range want {
		if !strings.Contains(td.Reasons[0].String(), w) {
			t.Errorf("reason %q does not mention %q", td.Reasons[0], w)
		}
	}
	in := askInput()
	in.Approve = true
	if d := p.Trust(ctx, in); d.Trusted || len(d.Reasons) == 0 {
		t.Errorf("trust decision did not fail closed: %+v", d)
	}
	if d := p.Remote(ctx, RemoteInput{Command: "list_mcp_servers", Caller: "local"}); d.Allow || len(d.Reasons) == 0 {
		t.Errorf("remote decision did not fail closed: %+v", d)
	}
	r, err := p.Redactor(ctx, RedactInput{EnvNames: []string{"CANARY_TOKEN"}, LookupEnv: func(string) (string, bool) { return "canary-7f3a9c", true }})
	if r == nil {
		t.Fatalf("no fallback redactor (err %v)", err)
	}
	if got := r.Redact("v=canary-7f3a9c ghp_0123456789abcdefghijklmnopqrstuvwxyz"); strings.Contains(got, "canary-7f3a9c") || strings.Contains(got, "ghp_") {
		t.Errorf("fallback redactor leaked: %s", got)
	}
}

func TestLoadFailsClosed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, file, src string
		want            []string // in the load error and the reason
	}{
		{"syntax error", "broken.rego", "package voltmcp.tools\n\ndeny contains \"x\" if {\n", []string{"broken.rego:"}},
		{"http.send", "exfil.rego", "package voltmcp.tools\n\ndeny contains \"x\" if {\n\thttp.send({\"method\": \"get\", \"url\": \"https://example.com\"}).status_code == 200\n}\n", []string{"exfil.rego:4", "http.send"}},
		{"net.lookup_ip_addr", "dns.rego", "package voltmcp.tools\n\ndeny contains \"x\" if {\n\tcount(net.lookup_ip_addr(\"example.com\")) > 0\n}\n", []string{"dns.rego:4", "net.lookup_ip_addr"}},
		{"opa.runtime", "env.rego", "package voltmcp.tools\n\ndeny contains \"x\" if {\n\topa.runtime().env.HOME\n}\n", []string{"env.rego:4", "opa.runtime"}},
		{"redefines decision", "override.rego", "package voltmcp.tools\n\ndecision := {\"exposed\": true, \"allowed\": true, \"pending\": false, \"reasons\": []}\n", []string{"override.rego:3", "decision"}},
		{"redefines a built-in helper", "helper.rego", "package voltmcp.tools\n\n_name_ok := true\n", []string{"helper.rego:3", "_name_ok"}},
		{"boolean deny", "bool.rego", "package voltmcp.tools\n\ndeny if input.risk == \"destructive\"\n", []string{"bool.rego:3", "deny contains reason"}},
		{"allow where not offered", "remote.rego", "package voltmcp.remote\n\nallow contains \"x\" if true\n", []string{"remote.rego:3", "offers no allow"}},
		{"reserved package", "lib.rego", "package voltmcp.lib\n\nreason(r) := {\"msg\": \"hidden\"}\n", []string{"lib.rego:1", "reserved"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir, _ := writePolicy(t, tt.file, tt.src)
			p, err := Load(context.Background(), &Options{Dirs: []string{dir}})
			if err == nil {
				t.Fatal("Load succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if !errors.Is(p.Err(), err) {
				t.Errorf("Err() = %v, want the load error", p.Err())
			}
			assertClosed(t, p, tt.want...)
		})
	}
}

func TestMissingPolicyDirectoryFailsClosed(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "nope")
	p, err := Load(context.Background(), &Options{Dirs: []string{missing}})
	if err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("want an error naming the directory, got %v", err)
	}
	assertClosed(t, p, "nope")
}

func TestProjectAllowIsRejected(t *testing.T) {
	t.Parallel()
	dir, file := writePolicy(t, "project.rego", "package voltmcp.trust\n\n# A project cannot trust itself.\nallow contains \"trust me\" if true\n")
	p, err := Load(context.Background(), &Options{ProjectFiles: projectFiles(t, dir)})
	if err == nil || !strings.Contains(err.Error(), file+":4") || !strings.Contains(err.Error(), "may only deny") {
		t.Fatalf("want an error naming %s:4, got %v", file, err)
	}
	assertClosed(t, p, file+":4")
}

func TestProjectMayNotExtendUserRules(t *testing.T) {
	t.Parallel()
	userDir, _ := writePolicy(t, "org.rego", "package voltmcp.tools\n\nallowed_servers contains \"github\"\n\ndeny contains \"server not allowed\" if not input.server.id in allowed_servers\n")
	projDir, projFile := writePolicy(t, "sneaky.rego", "package voltmcp.tools\n\nallowed_servers contains \"evil\"\n")
	_, err := Load(context.Background(), &Options{Dirs: []string{userDir}, ProjectFiles: projectFiles(t, projDir)})
	if err == nil || !strings.Contains(err.Error(), projFile+":3") {
		t.Fatalf("want an error naming %s:3, got %v", projFile, err)
	}
	// A project package of its own could feed a user helper package.
	projDir2, projFile2 := writePolicy(t, "other.rego", "package acme\n\nservers contains \"evil\"\n")
	_, err = Load(context.Background(), &Options{ProjectFiles: projectFiles(t, projDir2)})
	if err == nil || !strings.Contains(err.Error(), projFile2+":1") {
		t.Fatalf("want an error naming %s:1, got %v", projFile2, err)
	}
}

func TestProjectDenyApplies(t *testing.T) {
	t.Parallel()
	dir, file := writePolicy(t, "project.rego", "package voltmcp.tools\n\ndeny contains \"this repo forbids writes\" if input.risk == \"write\"\n")
	p := mustLoad(t, &Options{ProjectFiles: projectFiles(t, dir)})
	d := p.Tools(context.Background(), githubTool())
	if d.Allowed || !d.Exposed {
		t.Fatalf("want exposed but not allowed, got %+v", d)
	}
	want := Reason{Message: "this repo forbids writes", Rule: "deny", File: file, Line: 3}
	if len(d.Reasons) != 1 || d.Reasons[0] != want {
		t.Fatalf("reasons = %+v, want %+v", d.Reasons, want)
	}
}

func TestRuntimeErrorInUserRuleFailsClosed(t *testing.T) {
	t.Parallel()
	// Loads fine; at evaluation a string is added to a number, a type
	// error that StrictBuiltinErrors turns into an evaluation error.
	dir, file := writePolicy(t, "typo.rego", "package voltmcp.tools\n\ndeny contains \"x\" if {\n\tto_number(input.tool.name) > 1\n}\n")
	p := mustLoad(t, &Options{Dirs: []string{dir}})
	d := p.Tools(context.Background(), githubTool())
	if d.Allowed || d.Exposed || len(d.Reasons) != 1 {
		t.Fatalf("want a fail-closed decision, got %+v", d)
	}
	if r := d.Reasons[0]; r.File != file || r.Line != 4 || !strings.Contains(r.Message, "failed closed") {
		t.Fatalf("reason %+v does not name %s:4", r, file)
	}
	// Errors are not memoized: a second call evaluates (and fails) again.
	if d2 := p.Tools(context.Background(), githubTool()); d2.Allowed {
		t.Fatal("second call allowed")
	}
}

func TestTimeoutFailsClosed(t *testing.T) {
	t.Parallel()
	// 10^10 iterations: runs until the deadline stops it.
	dir, file := writePolicy(t, "slow.rego", "package voltmcp.tools\n\ndeny contains \"slow\" if {\n\tcount({1 | some i in numbers.range(1, 100000); some j in numbers.range(1, 100000); i == j + 1}) > 100000\n}\n")
	p, err := Load(context.Background(), &Options{Dirs: []string{dir}, Timeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	d := p.Tools(context.Background(), githubTool())
	if d.Allowed || d.Exposed || len(d.Reasons) != 1 {
		t.Fatalf("want a fail-closed decision, got %+v", d)
	}
	if !strings.Contains(d.Reasons[0].Message, "did not finish within 20ms") {
		t.Fatalf("reason %q does not mention the deadline (policy %s)", d.Reasons[0].Message, file)
	}
}

func TestCallerCancellationFailsClosed(t *testing.T) {
	t.Parallel()
	p, err := Load(context.Background(), &Options{DisableMemo: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if d := p.Tools(ctx, githubTool()); d.Allowed {
		t.Fatalf("canceled evaluation allowed: %+v", d)
	}
}

// testBundle is the default bundle with one file replaced, to fault the
// decision itself (users cannot: decision is reserved).
func testBundle(t *testing.T, file, src string) fstest.MapFS {
	t.Helper()
	m := fstest.MapFS{}
	entries, err := bundleFS.ReadDir("rego")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := bundleFS.ReadFile("rego/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		m["rego/"+e.Name()] = &fstest.MapFile{Data: b}
	}
	m["rego/"+file] = &fstest.MapFile{Data: []byte(src)}
	return m
}

func TestUndefinedDecisionFailsClosed(t *testing.T) {
	t.Parallel()
	b := testBundle(t, "tools.rego", "package voltmcp.tools\n\ndecision := {\"exposed\": true, \"allowed\": true, \"pending\": false, \"reasons\": []} if input.never_set\n")
	p, err := load(context.Background(), b, &Options{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	d := p.Tools(context.Background(), githubTool())
	if d.Allowed || d.Exposed || len(d.Reasons) != 1 || !strings.Contains(d.Reasons[0].Message, "undefined") || d.Reasons[0].File != "builtin/tools.rego" {
		t.Fatalf("want a fail-closed decision naming builtin/tools.rego, got %+v", d)
	}
}

func TestWrongShapedDecisionFailsClosed(t *testing.T) {
	t.Parallel()
	for name, src := range map[string]string{
		"not an object":    `decision := true`,
		"missing field":    `decision := {"exposed": true, "allowed": true, "reasons": []}`,
		"string for bool":  `decision := {"exposed": true, "allowed": "yes", "pending": false, "reasons": []}`,
		"reason sans msg":  `decision := {"exposed": true, "allowed": true, "pending": false, "reasons": [{"rule": "x"}]}`,
		"reasons not list": `decision := {"exposed": true, "allowed": true, "pending": false, "reasons": "none"}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p, err := load(context.Background(), testBundle(t, "tools.rego", "package voltmcp.tools\n\n"+src+"\n"), &Options{Timeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if d := p.Tools(context.Background(), githubTool()); d.Allowed || d.Exposed || len(d.Reasons) != 1 {
				t.Fatalf("want a fail-closed decision, got %+v", d)
			}
		})
	}
}

func TestBrokenUserPolicyNeverAllowsMore(t *testing.T) {
	t.Parallel()
	// A user file that errors only on some inputs must not turn a deny of
	// the default policy into an allow for those inputs.
	dir, _ := writePolicy(t, "partial.rego", "package voltmcp.trust\n\nallow contains \"numbers\" if to_number(input.project) > 0\n")
	p, err := Load(context.Background(), &Options{Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	d := p.Trust(context.Background(), askInput()) // project "/src/app" is not a number
	if d.Trusted {
		t.Fatalf("broken allow rule trusted the project: %+v", d)
	}
}

func TestEvalReportsFaults(t *testing.T) {
	t.Parallel()
	dir, _ := writePolicy(t, "typo.rego", "package voltmcp.remote\n\ndeny contains \"x\" if to_number(input.command) > 1\n")
	p, err := Load(context.Background(), &Options{Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := p.Eval(context.Background(), AreaRemote, []byte(`{"command":"list_mcp_servers","caller":"local"}`), false)
	if err == nil {
		t.Fatal("want the evaluation error")
	}
	if !strings.Contains(string(out), `"allow": false`) {
		t.Fatalf("want the fail-closed decision, got %s", out)
	}
	if _, _, err := p.Eval(context.Background(), "nope", []byte(`{}`), false); err == nil {
		t.Fatal("unknown area accepted")
	}
	if _, _, err := p.Eval(context.Background(), AreaTools, []byte(`{`), false); err == nil {
		t.Fatal("malformed input accepted")
	}
}

// TestEmptyPolicyDirectoryFailsClosed configures a policy directory that
// holds no policy (nothing, or only tests): the set fails to load, naming
// the directory, and every decision denies, as for a broken policy.
func TestEmptyPolicyDirectoryFailsClosed(t *testing.T) {
	t.Parallel()
	onlyTests, _ := writePolicy(t, "team_test.rego", "package voltmcp.tools_test\n\ntest_nothing if true\n")
	for name, dir := range map[string]string{"empty": t.TempDir(), "only tests": onlyTests} {
		// A project's directories are read by cue.Load, which refuses
		// them the same way (cue's TestProjectPolicyFilesAreRead).
		p, err := Load(context.Background(), &Options{Dirs: []string{dir}})
		if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "holds no policy") {
			t.Fatalf("%s: error %v; want one naming the directory", name, err)
		}
		assertClosed(t, p, dir)
	}
}

// TestFailedDecisionIsNotMemoized evaluates one input past a deadline and
// then within one: the first decision fails closed with Err set, the
// second is the policies' own, with Err nil.
func TestFailedDecisionIsNotMemoized(t *testing.T) {
	t.Parallel()
	dir, _ := writePolicy(t, "team.rego", "package voltmcp.tools\n\n# Work that never denies, slow enough to miss a millisecond.\ndeny contains \"never\" if count([x | some x in numbers.range(1, 200000)]) < 0\n")
	// The work takes more than the default memory budget: the budget is
	// raised so that only the deadline can stop it.
	p, err := Load(context.Background(), &Options{Dirs: []string{dir}, Timeout: time.Minute, MemoryBudget: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	// testwait: the deadline under test, which must fail closed
	short, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	if d := p.Tools(short, githubTool()); d.Allowed || d.Err == nil {
		t.Fatalf("past the deadline: %+v; want a fail-closed deny with Err set", d)
	}
	if d := p.Tools(context.Background(), githubTool()); !d.Allowed || d.Err != nil {
		t.Fatalf("within the deadline: %+v; want the policies' allow", d)
	}
}

// TestProjectFileErrorFailsClosed gives a project policy file its reader
// could not read (Options.ProjectFiles with Err): the set fails to load
// with that error, and every decision denies.
func TestProjectFileErrorFailsClosed(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"/p/team.rego: not a regular file (fifo)", "policy path /p/gone: no such file or directory"} {
		p, err := Load(context.Background(), &Options{ProjectFiles: []File{{Name: "/p/team.rego", Err: errors.New(name)}}})
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Fatalf("error %v; want one with %q", err, name)
		}
		assertClosed(t, p, name)
	}
}
