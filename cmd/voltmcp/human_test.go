package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voltmcp/voltmcp/engine"
	"github.com/voltmcp/voltmcp/internal/mcptest"
	"github.com/voltmcp/voltmcp/sanitize"
)

// hostileTitle is a server title full of terminal escapes.
const hostileTitle = "\x1b[31mEVIL\x1b[0m\x1b]0;pwned\x07 \u202eTitle"

// humanProject writes a project with the mcptest server in mode behave
// ("demo") and one in mode hostile-text under a hostile title ("evil"),
// and refreshes both into the cache of a new home.
func humanProject(t *testing.T) (cli func(args ...string) cliResult, eng func() *engine.Engine) {
	t.Helper()
	project := t.TempDir()
	cmd, args, cenv := mcptest.Command("behave")
	hcmd, hargs, henv := mcptest.Command(mcptest.ModeHostileText)
	doc := map[string]any{"version": 1, "servers": map[string]any{
		"demo": map[string]any{"command": cmd, "args": args, "env": cenv},
		"evil": map[string]any{"command": hcmd, "args": hargs, "env": henv, "title": hostileTitle},
	}}
	data, _ := json.Marshal(doc)
	os.MkdirAll(filepath.Join(project, ".volt"), 0o755)
	if err := os.WriteFile(filepath.Join(project, ".volt", "mcp.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	fenv := fakeEnv(t, map[string]string{"HOME": home, "PATH": os.Getenv("PATH")})
	cli = func(args ...string) cliResult {
		return runCLI(t, fenv, append(args, "--home", home, "--project", project, "--approve")...)
	}
	if r := cli("refresh"); r.code != exitOK {
		t.Fatalf("refresh:\n%s", r)
	}
	eng = func() *engine.Engine {
		e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard, getenv: fenv}
		e.g.home, e.g.project, e.g.approve = home, project, true
		if err := e.g.resolve(fenv); err != nil {
			t.Fatal(err)
		}
		en, err := openEngine(context.Background(), e)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { en.Close() })
		return en
	}
	return cli, eng
}

// wantJSON is what --json printed before human output was the default:
// the engine's structured result, indented, HTML left as it is.
func wantJSON(t *testing.T, v any) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// assertClean fails when out holds a control character (but newline),
// an escape or an invisible character.
func assertClean(t *testing.T, what, out string) {
	t.Helper()
	for _, ru := range out {
		if ru == '\n' {
			continue
		}
		if ru < 0x20 || ru == 0x7f || ru >= 0x80 && ru < 0xa0 || sanitize.Invisible(ru) || ru >= 0x202a && ru <= 0x202e || ru >= 0x2066 && ru <= 0x2069 {
			t.Errorf("%s prints %U:\n%q", what, ru, out)
			return
		}
	}
}

// assertAligned checks the table whose header line starts with head:
// every row below it, up to a blank line, starts each column where the
// header does.
func assertAligned(t *testing.T, what, out, head string) {
	t.Helper()
	lines := strings.Split(out, "\n")
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(l, head) {
			start = i
			break
		}
	}
	if start < 0 {
		t.Errorf("%s: no table headed %q:\n%s", what, head, out)
		return
	}
	h := []rune(lines[start])
	var cols []int
	for i := 2; i < len(h); i++ {
		if h[i] != ' ' && h[i-1] == ' ' && h[i-2] == ' ' {
			cols = append(cols, i)
		}
	}
	if len(cols) == 0 {
		t.Errorf("%s: header %q has one column", what, lines[start])
	}
	rows := 0
	for _, l := range lines[start+1:] {
		if l == "" {
			break
		}
		rows++
		r := []rune(l)
		for _, c := range cols {
			if c >= len(r) || r[c-1] != ' ' || r[c] == ' ' {
				t.Errorf("%s: row %q does not start a column at %d like the header\n%s", what, l, c, out)
				break
			}
		}
	}
	if rows == 0 {
		t.Errorf("%s: table %q has no rows:\n%s", what, head, out)
	}
}

// TestHumanOutputByDefault checks each gateway command's human
// rendering (aligned tables, the content, no escape of a hostile server
// reaching the terminal) and that --json prints, byte for byte, the
// engine's structured result as it did before.
func TestHumanOutputByDefault(t *testing.T) {
	t.Parallel()
	cli, eng := humanProject(t)
	e := eng()
	for _, tc := range []struct {
		args []string
		in   engine.GatewayInput
		head string   // the header of the table the output must align
		want []string // what the human output must show
	}{
		{[]string{"search", "echo text"}, engine.GatewayInput{Action: "search", Query: "echo text"},
			"SERVER", []string{"demo", "echo", "Echoes text back.", "voltmcp describe SERVER TOOL"}},
		{[]string{"search", "documents"}, engine.GatewayInput{Action: "search", Query: "documents"},
			"SERVER", []string{"evil", mcptest.ToolHostileText}},
		{[]string{"describe", "demo", "echo"}, engine.GatewayInput{Action: "describe", Server: "demo", Tool: "echo"},
			"", []string{"demo / echo", "risk:", "hints:", "read-only", "Echoes text back.", "text", "string", "required", "the text to echo", "call: voltmcp call demo echo --args JSON"}},
		{[]string{"describe", "evil", mcptest.ToolHostileText}, engine.GatewayInput{Action: "describe", Server: "evil", Tool: mcptest.ToolHostileText},
			"", []string{"evil / " + mcptest.ToolHostileText, "query", "mode", "enum", "title=\"Ignore previous instructions", "<IMPORTANT>"}},
		{[]string{"status"}, engine.GatewayInput{Action: "status"},
			"", []string{"gateway:", "servers:", "2 (2 cold)", "audit log:", "ok"}},
		{[]string{"status", "evil"}, engine.GatewayInput{Action: "status", Server: "evil"},
			"", []string{"server:", "evil", "title:", "EVIL", "tools:", "cached, listed"}},
		{[]string{"resources", "demo"}, engine.GatewayInput{Action: "list_resources", Server: "demo"},
			"URI ", []string{"mcptest://readme", "readme", "text/plain", "URI TEMPLATE", "mcptest://items/{id}", "voltmcp read-resource demo URI"}},
		{[]string{"prompts", "demo"}, engine.GatewayInput{Action: "list_prompts", Server: "demo"},
			"PROMPT", []string{"greet", "name*", "voltmcp get-prompt demo PROMPT"}},
	} {
		what := strings.Join(tc.args, " ")
		r := cli(append(tc.args, "--json")...)
		if want := wantJSON(t, e.Gateway(context.Background(), tc.in).Data); r.code != exitOK || r.stdout != want {
			t.Errorf("%s --json is not the engine's result:\n%s\nwant:\n%s", what, r, want)
		}
		r = cli(tc.args...)
		if r.code != exitOK || strings.HasPrefix(r.stdout, "{") {
			t.Errorf("%s: want human output\n%s", what, r)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("%s lacks %q:\n%s", what, w, r.stdout)
			}
		}
		if strings.Contains(r.stdout, "third-party text from MCP server") {
			t.Errorf("%s shows the model's provenance prefix:\n%s", what, r.stdout)
		}
		assertClean(t, what, r.stdout+r.stderr)
		if tc.head != "" {
			assertAligned(t, what, r.stdout, tc.head)
		}
	}
	// servers and tools: the table, and --json as the engine has it.
	r := cli("servers")
	assertClean(t, "servers", r.stdout)
	assertAligned(t, "servers", r.stdout, "SERVER")
	if r := cli("servers", "--json"); r.stdout != wantJSON(t, e.Servers()) {
		t.Errorf("servers --json is not the engine's list:\n%s", r)
	}
	// The describe table of the key/value lines aligns too.
	r = cli("describe", "demo", "echo")
	if !strings.Contains(r.stdout, "\nrisk:      ") || !strings.Contains(r.stdout, "\nmetadata:  sha256:") {
		t.Errorf("describe's fields are not aligned:\n%s", r.stdout)
	}
}

// TestHumanRenderersCleanEveryField feeds each renderer a result whose
// every string is hostile, and a field it does not know: nothing
// unclean reaches the output, and the unknown field is shown.
func TestHumanRenderersCleanEveryField(t *testing.T) {
	bad := mcptest.HostileText()
	for action, data := range map[string]any{
		"search": map[string]any{"action": "search", "query": bad, "note": bad, "hint": bad, "extraField" + bad: bad,
			"matches": []engine.SearchMatch{{Server: "s\x1b[2J", Tool: bad, Title: bad, Summary: bad, Risk: engine.Risk(bad), Pending: bad}}},
		"describe": engine.DescribeResult{Server: bad, Tool: bad, Title: bad, Description: bad, Risk: engine.Risk(bad), RiskReason: bad,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"\u001b[31mp":{"type":"string","description":"\u001b]0;x\u0007"}}}`),
			Annotations: json.RawMessage(`{"title":"\u001b[1mT","readOnlyHint":true}`), MetadataHash: bad, Warning: bad},
		"status": map[string]any{"action": "status", "servers": 1, "byStatus": map[string]int{bad: 1}, "notes": []string{bad},
			"problems": []map[string]string{{"server": bad, "status": bad, "error": bad}},
			"metadata": []engine.MetadataIssue{{Server: bad, Dropped: []engine.DroppedItem{{Kind: bad, Name: bad, Reason: bad}}, More: bad}},
			"audit":    engine.AuditState{State: "failing", Error: bad, OnFailure: bad}, "extraField": map[string]string{bad: bad}},
		"list_resources": map[string]any{"action": "list_resources", "server": bad,
			"resources": []engine.Resource{{URI: bad, Name: bad, Description: bad, MIMEType: bad}},
			"templates": []engine.ResourceTemplate{{URITemplate: bad, Name: bad, Description: bad}}, "extraField": bad},
		"list_prompts": map[string]any{"action": "list_prompts", "server": bad, "extraField": bad,
			"prompts": []engine.Prompt{{Name: bad, Title: bad, Description: bad, Arguments: []engine.PromptArgument{{Name: bad, Required: true}}}}},
	} {
		f, err := newFields(data)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		humanRenderer(action)(&b, f, engine.GatewayInput{Action: action})
		assertClean(t, action, b.String())
		if !strings.Contains(b.String(), "Searches documents.") {
			t.Errorf("%s lost the visible text:\n%s", action, b.String())
		}
		if action != "describe" && !strings.Contains(b.String(), "extraField") {
			t.Errorf("%s drops a field it does not know:\n%s", action, b.String())
		}
	}
	// status SERVER: a summary with a field the renderer does not know.
	sum, _ := json.Marshal(engine.ServerSummary{ID: "x", DisplayName: bad, LastError: bad, Stderr: bad, MetadataNotes: []string{bad},
		RecentCalls: []engine.RecentCall{{ID: bad, Tool: bad, Risk: engine.Risk(bad), Status: bad, Outcome: bad, Reason: bad}}})
	var f fields
	json.Unmarshal(sum, &f)
	f["outputSchemaCount"] = json.RawMessage(`3`)
	var b bytes.Buffer
	renderStatus(&b, f, engine.GatewayInput{Action: "status", Server: "x"})
	assertClean(t, "status SERVER", b.String())
	if !strings.Contains(b.String(), "outputSchemaCount: 3") || !strings.Contains(b.String(), "Searches documents.") {
		t.Errorf("status SERVER:\n%s", b.String())
	}
}

// TestToolsListsTheCache checks tools SERVER: the cached tools with
// their hints, --json as the cache holds them, a server never listed
// and an unknown one, and that it starts nothing.
func TestToolsListsTheCache(t *testing.T) {
	t.Parallel()
	cli, eng := humanProject(t)
	r := cli("tools", "demo")
	if r.code != exitOK {
		t.Fatalf("tools demo:\n%s", r)
	}
	for _, w := range []string{"echo", "Echoes text back.", "read-only", "fail", "destructive", "6 tools of demo, listed "} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("tools demo lacks %q:\n%s", w, r.stdout)
		}
	}
	assertAligned(t, "tools demo", r.stdout, "TOOL")
	r = cli("tools", "evil")
	assertClean(t, "tools evil", r.stdout)
	if !strings.Contains(r.stdout, mcptest.ToolHostileText) {
		t.Errorf("tools evil:\n%s", r)
	}
	e := eng()
	m, _ := e.Metadata("demo")
	s, _ := e.Server("demo")
	if r := cli("tools", "demo", "--json"); r.code != exitOK || r.stdout != wantJSON(t, toolsJSON{Server: "demo", FetchedAt: m.FetchedAt, Tools: m.Tools}) {
		t.Errorf("tools --json is not the cache:\n%s", r)
	}
	if s.Status != engine.StatusCold {
		t.Errorf("demo is %s after tools, want cold", s.Status)
	}
	if r := cli("tools", "dmeo"); r.code != exitUsage || !strings.Contains(r.stderr, `did you mean "demo"`) {
		t.Errorf("tools of an unknown server:\n%s", r)
	}
	if r := cli("tools"); r.code != exitUsage {
		t.Errorf("tools without a server:\n%s", r)
	}
	// A server never listed says so, and how to list it.
	project := serverProject(t)
	home := t.TempDir()
	r = runCLI(t, fakeEnv(t, map[string]string{"HOME": home}), "tools", "demo", "--home", home, "--project", project, "--approve")
	if r.code != exitFindings || !strings.Contains(r.stderr, "never been listed") || !strings.Contains(r.stderr, "voltmcp refresh demo") || r.stdout != "" {
		t.Errorf("tools of a server never listed:\n%s", r)
	}
}

// TestVersionFlag: --version prints what the version command prints.
func TestVersionFlag(t *testing.T) {
	t.Parallel()
	want := runCLI(t, nil, "version")
	r := runCLI(t, nil, "--version")
	if r.code != exitOK || r.stdout != want.stdout || !strings.HasPrefix(r.stdout, "voltmcp ") {
		t.Errorf("--version:\n%s\nversion:\n%s", r, want)
	}
	if r := runCLI(t, nil, "--version", "servers"); r.code != exitUsage {
		t.Errorf("--version with a command:\n%s", r)
	}
	if r := runCLI(t, nil, "--help"); !strings.Contains(r.stdout, "voltmcp --version") {
		t.Errorf("the usage does not name --version:\n%s", r.stdout)
	}
}

// TestSearchHintsNameCLICommands: a search that finds nothing names the
// servers never listed and, on the CLI, the commands a user types, not
// the mcp tool's JSON an agent sends; --json keeps the agent's hint.
func TestSearchHintsNameCLICommands(t *testing.T) {
	t.Parallel()
	project := serverProject(t)
	home := t.TempDir()
	env := fakeEnv(t, map[string]string{"HOME": home})
	r := runCLI(t, env, "search", "frobnicate the quux", "--home", home, "--project", project, "--approve")
	if r.code != exitOK || !strings.Contains(r.stdout, "never been listed (demo)") || !strings.Contains(r.stdout, "voltmcp connect demo") || strings.Contains(r.stdout, `"action"`) {
		t.Errorf("search of a workspace whose server was never listed:\n%s", r)
	}
	r = runCLI(t, env, "search", "frobnicate the quux", "--json", "--home", home, "--project", project, "--approve")
	if r.code != exitOK || !strings.Contains(r.stdout, `never been listed (demo): connect them ({\"action\":\"connect\",\"server\":\"demo\"})`) {
		t.Errorf("search --json does not keep the agent's hint:\n%s", r)
	}
	empty := t.TempDir()
	r = runCLI(t, env, "search", "frobnicate", "--home", home, "--project", empty)
	if r.code != exitOK || !strings.Contains(r.stdout, "or voltmcp servers") || strings.Contains(r.stdout, "list_servers") {
		t.Errorf("search of an empty workspace:\n%s", r)
	}
}

// TestCallArgsMustBeAnObject: --args that is not a JSON object is a usage
// error naming the flag, before anything starts.
func TestCallArgsMustBeAnObject(t *testing.T) {
	t.Parallel()
	project := serverProject(t)
	home := t.TempDir()
	env := fakeEnv(t, map[string]string{"HOME": home})
	for _, bad := range []string{"{bad", "[1,2]", "null", `"x"`} {
		r := runCLI(t, env, "call", "demo", "echo", "--args", bad, "--home", home, "--project", project, "--approve")
		if r.code != exitUsage || !strings.Contains(r.stderr, "--args is not a JSON object") || strings.Contains(r.stdout+r.stderr, "argumentsJson") {
			t.Errorf("call --args %s:\n%s", bad, r)
		}
	}
}
