package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/internal/mcptest"
)

// missingCanary is a secret in an untrusted project's definitions: no
// surface that says why its servers are missing may show it.
const missingCanary = "canary-missing-7c41d0"

// untrustedProject writes a project whose .mcp.json defines everything
// (a command with a secret in its env and args) and remote (a URL with
// credentials), and a home with one user server, clock.
func untrustedProject(t *testing.T) (home, project string) {
	t.Helper()
	home, project = t.TempDir(), t.TempDir()
	writeFileAt(t, filepath.Join(project, ".mcp.json"), `{"mcpServers":{
  "everything": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything", "--token=`+missingCanary+`"], "env": {"API_KEY": "`+missingCanary+`"}},
  "remote": {"url": "https://user:`+missingCanary+`@mcp.example.com/mcp?key=`+missingCanary+`"}
}}`)
	writeFileAt(t, filepath.Join(home, ".volt", "agent", "mcp.json"), `{"version": 1, "servers": {"clock": {"command": "true"}}}`)
	return home, project
}

func writeFileAt(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// serverEntry is what the tests read of `voltmcp servers --json`.
type serverEntry struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Reason string `json:"reason"`
	Fix    string `json:"fix"`
	Source string `json:"sourceLabel"`
}

func serversJSON(t *testing.T, r cliResult) map[string]serverEntry {
	t.Helper()
	var list []serverEntry
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		t.Fatalf("servers --json: %v\n%s", err, r)
	}
	out := map[string]serverEntry{}
	for _, s := range list {
		out[s.ID] = s
	}
	return out
}

// TestServersListUntrustedProjectServers: servers (text and --json) and
// status list the servers of an untrusted project by name, with status
// untrusted, the reason and `voltmcp trust`, and show nothing of what
// they run; a command on one of them says why it is not loaded.
func TestServersListUntrustedProjectServers(t *testing.T) {
	t.Parallel()
	home, project := untrustedProject(t)
	env := fakeEnv(t, map[string]string{"HOME": home})
	cli := func(args ...string) cliResult {
		r := runCLI(t, env, append(args, "--home", home, "--project", project)...)
		if strings.Contains(r.stdout+r.stderr, missingCanary) || strings.Contains(r.stdout+r.stderr, "mcp.example.com") ||
			strings.Contains(r.stdout+r.stderr, "server-everything") {
			t.Errorf("voltmcp %s shows what an untrusted server runs:\n%s", strings.Join(args, " "), r)
		}
		return r
	}

	r := cli("servers")
	if r.code != exitOK {
		t.Fatalf("servers:\n%s", r)
	}
	for _, want := range []string{"everything  untrusted", "remote      untrusted", "project-shared " + filepath.Join(project, ".mcp.json"),
		"project MCP config is not loaded", "its servers everything, remote are not loaded", "run voltmcp trust"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("servers lacks %q:\n%s", want, r.stdout)
		}
	}

	r = cli("servers", "--json")
	list := serversJSON(t, r)
	if s := list["everything"]; s.Status != "untrusted" || !strings.Contains(s.Reason, "not trusted") || !strings.Contains(s.Fix, "voltmcp trust") {
		t.Errorf("servers --json: everything is %+v", s)
	}
	if s := list["clock"]; s.Status != "cold" || s.Reason != "" {
		t.Errorf("servers --json: clock is %+v", s)
	}
	if !strings.Contains(r.stderr, "voltmcp servers: project MCP config is not loaded") {
		t.Errorf("servers --json does not say on stderr why:\n%s", r)
	}

	r = cli("status", "--json")
	if !strings.Contains(r.stdout, `"untrusted": 2`) || !strings.Contains(r.stdout, "its servers everything, remote are not loaded") ||
		!strings.Contains(r.stdout, "run voltmcp trust") {
		t.Errorf("status:\n%s", r)
	}
	if r := cli("status", "everything", "--json"); r.code != exitOK || !strings.Contains(r.stdout, `"status": "untrusted"`) {
		t.Errorf("status everything:\n%s", r)
	}

	// Each command on it names the cause and the fix, not "unknown".
	for _, args := range [][]string{{"describe", "everything", "echo"}, {"call", "everything", "echo"}, {"enable", "everything"}, {"refresh", "everything"}} {
		r := cli(args...)
		out := r.stdout + r.stderr
		if r.code == exitOK || !strings.Contains(out, `server "everything" is not loaded`) || !strings.Contains(out, "voltmcp trust") ||
			strings.Contains(out, "unknown server") {
			t.Errorf("voltmcp %s:\n%s", strings.Join(args, " "), r)
		}
	}
	// A name that is nowhere keeps its suggestion.
	if r := cli("describe", "clok", "x"); r.code != exitUsage || !strings.Contains(r.stderr, `unknown server "clok" (did you mean "clock"?)`) {
		t.Errorf("describe of an unknown server:\n%s", r)
	}
	for _, args := range [][]string{{"call", "clok", "x"}, {"connect", "clok"}, {"status", "clok"}, {"resources", "clok"}} {
		if r := cli(args...); r.code != exitUsage || !strings.Contains(r.stderr, `unknown server "clok" (did you mean "clock"?)`) {
			t.Errorf("%s of an unknown server exits %d, want %d as tools, enable and remove do:\n%s", args[0], r.code, exitUsage, r)
		}
	}
	// voltmcp's own write to a project trusted for one run records no
	// trust: there was no record to keep.
	if r := cli("disable", "everything", "--approve"); r.code != exitOK {
		t.Fatalf("disable --approve:\n%s", r)
	}
	if s := serversJSON(t, cli("servers", "--json"))["everything"]; s.Status != "untrusted" {
		t.Errorf("after disable --approve: everything is %+v", s)
	}
	if _, err := os.Stat(filepath.Join(home, ".volt", "agent", "trusted-projects.json")); err == nil {
		t.Errorf("a write to an untrusted project recorded trust")
	}
}

// TestServeExplainsAnUntrustedServer: an agent's describe and call of a
// server of an untrusted project, through `voltmcp serve` and a go-sdk
// client, get the cause and `voltmcp trust`; a truly unknown name gets a
// suggestion.
func TestServeExplainsAnUntrustedServer(t *testing.T) {
	t.Parallel()
	home, project := untrustedProject(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	serve := cliCommand("serve", "--home", home, "--project", project)
	serve.Env = append(serve.Env, "HOME="+home, "XDG_CACHE_HOME="+testCacheDir)
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: serve}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		cs.Close()
		waitExited(ctx, t, serve)
	}()
	ask := func(args map[string]any) (string, bool) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp", Arguments: args})
		if err != nil {
			t.Fatalf("mcp %v: %v", args, err)
		}
		var text strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text.WriteString(tc.Text)
			}
		}
		if strings.Contains(text.String(), missingCanary) || strings.Contains(text.String(), "mcp.example.com") {
			t.Errorf("mcp %v shows what an untrusted server runs: %s", args, text.String())
		}
		return text.String(), res.IsError
	}
	for _, args := range []map[string]any{
		{"action": "describe", "server": "everything", "tool": "echo"},
		{"action": "call", "server": "everything", "tool": "echo", "arguments": map[string]any{"message": "hi"}},
	} {
		text, isErr := ask(args)
		if !isErr || !strings.Contains(text, `server "everything" is not loaded`) || !strings.Contains(text, "not trusted") ||
			!strings.Contains(text, "voltmcp trust") || strings.Contains(text, "unknown server") {
			t.Errorf("%s of an untrusted server: %s", args["action"], text)
		}
	}
	if text, _ := ask(map[string]any{"action": "list_servers"}); !strings.Contains(text, `"server":"everything","status":"untrusted"`) ||
		!strings.Contains(text, "voltmcp trust") {
		t.Errorf("list_servers: %s", text)
	}
	if text, _ := ask(map[string]any{"action": "search", "query": "echo"}); !strings.Contains(text, "not trusted") || !strings.Contains(text, "voltmcp trust") {
		t.Errorf("a search that finds nothing does not say servers are not loaded: %s", text)
	}
	if text, isErr := ask(map[string]any{"action": "describe", "server": "everythin", "tool": "echo"}); !isErr ||
		!strings.Contains(text, `unknown server "everythin" (did you mean "everything"?)`) {
		t.Errorf("describe of a misspelt server: %s", text)
	}
}

// TestServersNameAFileThatDoesNotParse: a config file with a syntax
// error is named with its file:line:col by servers (under the table, on
// stderr with --json), status, and the error for a server it may define.
func TestServersNameAFileThatDoesNotParse(t *testing.T) {
	t.Parallel()
	home, project := t.TempDir(), t.TempDir()
	file := filepath.Join(home, ".volt", "agent", "mcp.json")
	writeFileAt(t, file, "{\"version\": 1,\n \"servers\": {\"clock\": {\"command\": \"true\",}}}\n")
	env := fakeEnv(t, map[string]string{"HOME": home})
	cli := func(args ...string) cliResult {
		return runCLI(t, env, append(args, "--home", home, "--project", project)...)
	}
	// The error is at the brace after the comma.
	line := ` "servers": {"clock": {"command": "true",}}}`
	at := fmt.Sprintf("%s:2:%d: the user config file does not load (invalid JSON at byte %d: trailing comma before '}')",
		file, strings.Index(line, ",}")+2, len("{\"version\": 1,\n")+strings.Index(line, ",}")+1)
	if r := cli("servers"); !strings.Contains(r.stdout, at) || !strings.Contains(r.stdout, "voltmcp vet") {
		t.Errorf("servers does not name the file:\n%s\nwant %s", r, at)
	}
	if r := cli("servers", "--json"); r.stdout != "[]\n" || !strings.Contains(r.stderr, "voltmcp servers: "+at) {
		t.Errorf("servers --json:\n%s", r)
	}
	if r := cli("status"); !strings.Contains(r.stdout, at) {
		t.Errorf("status does not name the file:\n%s", r)
	}
	if r := cli("describe", "clock", "x"); r.code == exitOK || !strings.Contains(r.stdout+r.stderr, `unknown server "clock"; `+at) {
		t.Errorf("describe of a server of the file:\n%s", r)
	}
}

// TestStatusNamesABrokenPolicy: with a policy file that does not
// compile, status says the policies do not load and names the file and
// line, and the trusted project's servers are listed as not loaded
// because the trust policy failed, not as merely untrusted.
func TestStatusNamesABrokenPolicy(t *testing.T) {
	t.Parallel()
	home, project := untrustedProject(t)
	policy := filepath.Join(home, ".volt", "agent", "policies", "bad.rego")
	writeFileAt(t, policy, "package voltmcp.tools\n\ndeny contains x if {\n  x := \n}\n")
	writeFileAt(t, filepath.Join(home, ".volt", "agent", "mcp.json"),
		`{"version": 1, "servers": {"clock": {"command": "true"}}, "settings": {"policies": ["policies"]}}`)
	env := fakeEnv(t, map[string]string{"HOME": home})
	cli := func(args ...string) cliResult {
		return runCLI(t, env, append(args, "--home", home, "--project", project)...)
	}
	if r := cli("trust", "--yes"); r.code != exitOK {
		t.Fatalf("trust:\n%s", r)
	}
	r := cli("status")
	for _, want := range []string{"the policies do not load", policy + ":5:", "every tool call is denied",
		"project MCP config is not loaded: policies failed to load: " + policy + ":5", "fix the policy file"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("status lacks %q:\n%s", want, r.stdout)
		}
	}
	list := serversJSON(t, cli("servers", "--json"))
	if s := list["everything"]; s.Status != "untrusted" || !strings.Contains(s.Reason, policy+":5") || !strings.Contains(s.Fix, "fix the policy file") {
		t.Errorf("servers --json: everything is %+v", s)
	}
}

// TestServersSayWhyAServerIsDisabled: a server disabled by its config
// and one whose definition is invalid each say why, with file:line:col,
// in servers and in the error of a command on it.
func TestServersSayWhyAServerIsDisabled(t *testing.T) {
	home, project := t.TempDir(), t.TempDir()
	file := filepath.Join(home, ".volt", "agent", "mcp.json")
	writeFileAt(t, file, "{\"version\": 1, \"servers\": {\n  \"off\": {\"command\": \"true\", \"enabled\": false},\n  \"bad\": {\"command\": \"true\", \"lifecycle\": \"sometimes\"}\n}}\n")
	env := fakeEnv(t, map[string]string{"HOME": home})
	cli := func(args ...string) cliResult {
		return runCLI(t, env, append(args, "--home", home, "--project", project)...)
	}
	lines := strings.Split(string(mustRead(t, file)), "\n")
	off := fmt.Sprintf(`off: disabled by "enabled": false at user %s:2:%d; run voltmcp enable off`, file, strings.Index(lines[1], "false")+1)
	bad := fmt.Sprintf("bad: disabled because its definition has errors: %s:3:%d: error[invalid-value]: servers.bad.lifecycle: invalid value", file,
		strings.Index(lines[2], `"sometimes"`)+1)
	r := cli("servers")
	for _, want := range []string{off, bad} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("servers lacks %q:\n%s", want, r.stdout)
		}
	}
	if r := cli("describe", "off", "x"); r.code == exitOK || !strings.Contains(r.stdout+r.stderr, "server off is "+strings.TrimPrefix(off, "off: ")) {
		t.Errorf("describe of a disabled server:\n%s", r)
	}
	if r := cli("connect", "bad"); r.code == exitOK || !strings.Contains(r.stdout+r.stderr, "server bad is "+strings.TrimPrefix(bad, "bad: ")) {
		t.Errorf("connect of an invalid server:\n%s", r)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// trustedTwoServerProject writes a project with two servers in .mcp.json
// and trusts it.
func trustedTwoServerProject(t *testing.T) (cli func(args ...string) cliResult, project string) {
	t.Helper()
	home, project := t.TempDir(), t.TempDir()
	writeFileAt(t, filepath.Join(project, ".mcp.json"), `{"mcpServers":{"everything":{"command":"true"},"memory":{"command":"true"}}}`)
	env := fakeEnv(t, map[string]string{"HOME": home})
	cli = func(args ...string) cliResult {
		return runCLI(t, env, append(args, "--home", home, "--project", project)...)
	}
	if r := cli("trust", "--yes"); r.code != exitOK {
		t.Fatalf("trust:\n%s", r)
	}
	return cli, project
}

// TestDisableEnableKeepsProjectTrust: disabling and enabling a server of
// a trusted project writes .volt/mcp.json and keeps every project server
// loaded and the project trusted; an edit of that file by anything else
// still takes the trust away.
func TestDisableEnableKeepsProjectTrust(t *testing.T) {
	t.Parallel()
	cli, project := trustedTwoServerProject(t)
	statuses := func() string {
		list := serversJSON(t, cli("servers", "--json"))
		return list["everything"].Status + "," + list["memory"].Status
	}
	if got := statuses(); got != "cold,cold" {
		t.Fatalf("trusted project: %s", got)
	}
	for _, step := range []struct{ verb, want string }{{"disable", "disabled,cold"}, {"enable", "cold,cold"}, {"disable", "disabled,cold"}} {
		if r := cli(step.verb, "everything"); r.code != exitOK {
			t.Fatalf("%s everything:\n%s", step.verb, r)
		}
		if got := statuses(); got != step.want {
			t.Fatalf("after %s everything: %s, want %s", step.verb, got, step.want)
		}
	}
	file := filepath.Join(project, ".volt", "mcp.json")
	data, err := os.ReadFile(file)
	if err != nil || !strings.Contains(string(data), `"enabled": false`) {
		t.Fatalf("%s: %v\n%s", file, err, data)
	}
	if r := cli("vet"); strings.Contains(r.stdout, "project-ignored") {
		t.Errorf("vet after disable:\n%s", r)
	}
	// An outside edit needs trust again.
	writeFileAt(t, file, strings.Replace(string(data), `"version": 1,`, `"version": 1, "x-note": "edited outside",`, 1))
	if got := statuses(); got != "untrusted,untrusted" {
		t.Fatalf("after an outside edit: %s", got)
	}
	// voltmcp's own write to a file that changed since it was trusted
	// does not trust the change.
	if r := cli("enable", "everything", "--approve"); r.code != exitOK {
		t.Fatalf("disable --approve:\n%s", r)
	}
	if got := statuses(); got != "untrusted,untrusted" {
		t.Fatalf("voltmcp's write over an outside edit: %s", got)
	}
}

// TestOutsideEditDuringDisableIsNotTrusted runs `voltmcp disable` and
// `voltmcp enable` processes while another writer edits .volt/mcp.json
// without voltmcp's lock, adding a server. However the writes
// interleave, a project whose file holds that server is never trusted.
func TestOutsideEditDuringDisableIsNotTrusted(t *testing.T) {
	t.Parallel()
	cli, project := trustedTwoServerProject(t)
	file := filepath.Join(project, ".volt", "mcp.json")
	const rounds = 4
	for round := range rounds {
		if round > 0 {
			if r := cli("trust", "--yes"); r.code != exitOK {
				t.Fatalf("round %d: trust:\n%s", round, r)
			}
		}
		verb := []string{"disable", "enable"}[round%2]
		done := make(chan cliResult, 1)
		go func() { done <- cli(verb, "everything") }()
		outside := fmt.Sprintf(`{"version": 1, "servers": {"injected%d": {"command": "true"}}}`, round)
		writeFileAt(t, file, outside)
		<-done // it may fail, if it read the outside edit half way; it must not trust it
		data, _ := os.ReadFile(file)
		list := serversJSON(t, cli("servers", "--json"))
		injected := fmt.Sprintf("injected%d", round)
		if strings.Contains(string(data), injected) && list["everything"].Status != "untrusted" {
			t.Fatalf("round %d: the outside edit is trusted: %+v\n%s", round, list, data)
		}
		if s, ok := list[injected]; ok && s.Status != "untrusted" {
			t.Fatalf("round %d: the injected server loads: %+v", round, s)
		}
	}
}

// envCanary is the value of a variable a server's env reads that is set:
// no surface that says another one is unset may show it.
const envCanary = "canary-env-set-5e02b9"

// unsetEnvProject writes and trusts a project whose .mcp.json defines
// everything, a stdio server (the test binary, which exists) whose env
// reads API_KEY, unset, and SET_TOKEN, set to envCanary; and remote, an
// HTTP server whose Authorization header reads REMOTE_TOKEN, unset.
func unsetEnvProject(t *testing.T) func(args ...string) cliResult {
	t.Helper()
	home, project := t.TempDir(), t.TempDir()
	cmd, args, cenv := mcptest.Command("behave")
	cenv["API_KEY"], cenv["SET_TOKEN"] = "${env:API_KEY}", "${env:SET_TOKEN}"
	writeJSONFile(t, filepath.Join(project, ".mcp.json"), map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": cmd, "args": args, "env": cenv},
		"remote":     map[string]any{"url": "http://127.0.0.1:1/mcp", "headers": map[string]any{"Authorization": "Bearer ${env:REMOTE_TOKEN}"}},
	}})
	env := fakeEnv(t, map[string]string{"HOME": home, "PATH": os.Getenv("PATH"), "SET_TOKEN": envCanary})
	cli := func(args ...string) cliResult {
		r := runCLI(t, env, append(args, "--home", home, "--project", project)...)
		if strings.Contains(r.stdout+r.stderr, envCanary) {
			t.Errorf("%s shows the value of a variable:\n%s", args, r)
		}
		return r
	}
	if r := cli("trust", "--yes"); r.code != exitOK {
		t.Fatalf("trust:\n%s", r)
	}
	return cli
}

// TestServersSayWhichVariableIsUnset: a trusted server whose config
// reads an unset variable says so, by the variable's name and the field
// that reads it, with the fix, in servers (text and --json), status and
// status SERVER, which does not advise a refresh that cannot work; the
// agent's answers (search's hint for no match, connect, describe) say
// the same. No value shows.
func TestServersSayWhichVariableIsUnset(t *testing.T) {
	t.Parallel()
	cli := unsetEnvProject(t)
	const (
		why    = "everything: cannot start: environment variable API_KEY is not set (referenced in env.API_KEY); export API_KEY=…"
		remote = "remote: cannot connect: environment variable REMOTE_TOKEN is not set (referenced in headers.Authorization); export REMOTE_TOKEN=…"
	)
	r := cli("servers")
	for _, want := range []string{why, remote} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("servers lacks %q:\n%s", want, r)
		}
	}
	list := serversJSON(t, cli("servers", "--json"))
	if s := list["everything"]; s.Status != "cold" || !strings.Contains(s.Reason, "API_KEY is not set") ||
		!strings.HasPrefix(s.Fix, "export API_KEY=…, or set it in the environment the gateway runs with") {
		t.Errorf("servers --json: %+v", s)
	}
	if s := list["remote"]; !strings.Contains(s.Reason, "REMOTE_TOKEN is not set") || !strings.HasPrefix(s.Fix, "export REMOTE_TOKEN=…") {
		t.Errorf("servers --json: %+v", s)
	}

	r = cli("status")
	if !strings.Contains(r.stdout, "problems:") {
		t.Errorf("status names no problem:\n%s", r)
	}
	for _, want := range []string{"API_KEY is not set (referenced in env.API_KEY); fix: export API_KEY=…", "REMOTE_TOKEN is not set"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("status lacks %q:\n%s", want, r)
		}
	}
	r = cli("status", "everything")
	for _, want := range []string{"cannot start: environment variable API_KEY is not set (referenced in env.API_KEY)", "fix:", "export API_KEY=…"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("status everything lacks %q:\n%s", want, r)
		}
	}
	if strings.Contains(r.stdout, "voltmcp refresh") || strings.Contains(r.stdout, "refresh\n") {
		t.Errorf("status everything advises a refresh that cannot work:\n%s", r)
	}

	// What the agent is told, and a command that tries anyway.
	r = cli("search", "zzzqqq-no-such-tool")
	if !strings.Contains(r.stdout+r.stderr, "cannot run until the user sets an environment variable") || !strings.Contains(r.stdout+r.stderr, "API_KEY is not set") {
		t.Errorf("search's hint does not name the unset variable:\n%s", r)
	}
	for _, args := range [][]string{{"connect", "everything"}, {"describe", "everything", "echo"}, {"refresh", "everything"}} {
		r := cli(args...)
		if r.code == exitOK || !strings.Contains(r.stdout+r.stderr, "environment variable API_KEY is not set") || !strings.Contains(r.stdout+r.stderr, "export API_KEY=…") {
			t.Errorf("%s:\n%s", args, r)
		}
	}
}
