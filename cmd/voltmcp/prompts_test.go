package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/engine/audit"
	"github.com/voltmcp/voltmcp/internal/npmpeers"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// userSettings writes the user layer of home with settings.
func userSettings(t *testing.T, home string, settings map[string]any) {
	t.Helper()
	data, _ := json.Marshal(map[string]any{"version": 1, "settings": settings})
	dir := filepath.Join(home, ".volt", "agent")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "mcp.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestGetPromptUserPreview: under the default prompts setting
// (user-preview) `voltmcp get-prompt` fetches and shows a prompt, its
// text cleaned like every server text, and the audit log records the
// fetch with the CLI's surface; under "disabled" the CLI is refused too.
func TestGetPromptUserPreview(t *testing.T) {
	t.Parallel()
	project := serverProject(t)
	home := t.TempDir()
	env := fakeEnv(t, map[string]string{"HOME": home, "PATH": os.Getenv("PATH")})
	cli := func(args ...string) cliResult {
		return runCLI(t, env, append(args, "--home", home, "--project", project, "--approve")...)
	}
	// The server echoes the name into the prompt: an escape sequence and
	// an invisible character must not reach the terminal.
	r := cli("get-prompt", "demo", "greet", "--args", `{"name": "Ada\u001b[31m\u200b"}`)
	if r.code != exitOK || !strings.Contains(r.stdout, "user: Hello, Ada") {
		t.Fatalf("get-prompt under user-preview:\n%s", r)
	}
	if strings.ContainsAny(r.stdout, "\x1b\u200b") {
		t.Errorf("get-prompt printed the server's escapes uncleaned: %q", r.stdout)
	}
	r = cli("get-prompt", "demo", "greet", "--args", `{"name": "Ada"}`, "--json")
	var data struct{ Action, Server, Prompt, Content, Note string }
	if err := json.Unmarshal([]byte(r.stdout), &data); err != nil || r.code != exitOK {
		t.Fatalf("get-prompt --json: %v\n%s", err, r)
	}
	if data.Action != "get_prompt" || data.Prompt != "greet" || data.Content != "user: Hello, Ada!" || !strings.Contains(data.Note, "third-party") {
		t.Errorf("get-prompt --json: %+v", data)
	}
	recs, _, err := audit.Read(audit.DefaultPath(filepath.Join(home, ".volt", "agent")), audit.Query{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, rec := range recs {
		if rec.Kind == audit.KindGetPrompt {
			n++
			if rec.Surface != "interactive" || rec.Server != "demo" || rec.Prompt != "greet" || rec.Status != "completed" {
				t.Errorf("get_prompt record: %+v", rec)
			}
		}
	}
	if n != 2 {
		t.Errorf("%d get_prompt records, want 2", n)
	}

	userSettings(t, home, map[string]any{"prompts": "disabled"})
	if r := cli("get-prompt", "demo", "greet", "--args", `{"name": "Ada"}`); r.code != exitFindings || !strings.Contains(r.stdout, "prompts are disabled") {
		t.Errorf("get-prompt under disabled:\n%s", r)
	}
}

// servePrompt runs `voltmcp serve` with a go-sdk client and asks its mcp
// tool for demo's prompt greet, as the model would.
func servePrompt(t *testing.T, home, project string) (bool, string) {
	t.Helper()
	cmd := cliCommand("serve", "--home", home, "--project", project, "--approve")
	cs := connectCommand(t, cmd, "2025-11-25")
	ctx, cancel := context.WithDeadline(context.Background(), testwait.Deadline(t))
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp", Arguments: map[string]any{
		"action": "get_prompt", "server": "demo", "prompt": "greet", "arguments": map[string]any{"name": "Ada"}}})
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	text := strings.Join(parts, "\n")
	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	waitExited(ctx, t, cmd)
	return res.IsError, text
}

// TestServeGetPromptIsTheModels: through `voltmcp serve` the model's
// get_prompt is refused under user-preview, with the error it always had,
// and answered once the user sets prompts: "model".
func TestServeGetPromptIsTheModels(t *testing.T) {
	t.Parallel()
	project := serverProject(t)
	home := t.TempDir()
	isErr, text := servePrompt(t, home, project)
	const refusal = `error: prompts are user-preview: the user can preview them, the model may not fetch them (setting prompts: "model" allows it)`
	if !isErr || text != refusal {
		t.Errorf("serve's get_prompt under user-preview: error %v, %q; want %q", isErr, text, refusal)
	}
	userSettings(t, home, map[string]any{"prompts": "model"})
	if isErr, text := servePrompt(t, home, project); isErr || text != "user: Hello, Ada!" {
		t.Errorf("serve's get_prompt under model: error %v, %q", isErr, text)
	}
}

// helpExample returns the argv of the first example line of command
// name's --help, in the shell's single quotes only.
func helpExample(t *testing.T, name string) []string {
	t.Helper()
	help := runCLI(t, nil, name, "--help")
	_, after, ok := strings.Cut(help.stdout, "Example:\n")
	if !ok {
		t.Fatalf("%s --help has no example:\n%s", name, help)
	}
	line, _, _ := strings.Cut(strings.TrimSpace(after), "\n")
	var argv []string
	var cur strings.Builder
	quoted, have := false, false
	for _, r := range line {
		switch {
		case r == '\'':
			quoted, have = !quoted, true
		case r == ' ' && !quoted:
			if have {
				argv = append(argv, cur.String())
			}
			cur.Reset()
			have = false
		default:
			cur.WriteRune(r)
			have = true
		}
	}
	if quoted {
		t.Fatalf("unbalanced quotes in %q", line)
	}
	if have {
		argv = append(argv, cur.String())
	}
	if len(argv) < 2 || argv[0] != "voltmcp" || argv[1] != name {
		t.Fatalf("example %q does not run voltmcp %s", line, name)
	}
	return argv[1:]
}

// TestGetPromptHelpExample: the example of `get-prompt --help` is a form
// the command accepts under the default settings. Offline its server
// "everything" is the test server, which answers that it has no such
// prompt (the form reached the server: no usage error, no refusal); with
// the npm servers (VOLTMCP_NPM_DIR) it is server-everything, whose
// args-prompt the example shows.
func TestGetPromptHelpExample(t *testing.T) {
	t.Parallel()
	argv := helpExample(t, "get-prompt")
	project := serverProject(t)
	data, err := os.ReadFile(filepath.Join(project, ".volt", "mcp.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Replace(string(data), `"demo"`, `"everything"`, 1)
	if err := os.WriteFile(filepath.Join(project, ".volt", "mcp.json"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	env := fakeEnv(t, map[string]string{"HOME": home, "PATH": os.Getenv("PATH")})
	r := runCLI(t, env, append(argv, "--home", home, "--project", project, "--approve")...)
	if r.code != exitFindings || !strings.Contains(r.stdout, "get prompt args-prompt") || strings.Contains(r.stdout, "user-preview") {
		t.Errorf("the example against the test server:\n%s", r)
	}

	t.Run("server-everything", func(t *testing.T) {
		home := everythingHome(t)
		env := fakeEnv(t, map[string]string{"HOME": home, "PATH": os.Getenv("PATH")})
		r := runCLI(t, env, append(argv, "--home", home, "--project", t.TempDir())...)
		if r.code != exitOK || !strings.Contains(r.stdout, "user: What's weather in Oslo?") {
			t.Errorf("the example against server-everything:\n%s", r)
		}
	})
}

// TestReadResourceHelpExample: the example of read-resource --help reads
// a resource of the server-everything version CI installs.
func TestReadResourceHelpExample(t *testing.T) {
	argv := helpExample(t, "read-resource")
	home := everythingHome(t)
	env := fakeEnv(t, map[string]string{"HOME": home, "PATH": os.Getenv("PATH")})
	r := runCLI(t, env, append(argv, "--home", home, "--project", t.TempDir())...)
	if r.code != exitOK || len(strings.TrimSpace(r.stdout)) < 100 {
		t.Errorf("the example against server-everything:\n%s", r)
	}
}

// everythingHome returns a home whose user file configures the npm
// server-everything as "everything" (skipping t without the npm peers).
func everythingHome(t *testing.T) string {
	t.Helper()
	node := npmpeers.Node(t)
	everything := npmpeers.Path(t, npmpeers.EverythingEntry)
	home := t.TempDir()
	data, _ := json.Marshal(map[string]any{"version": 1, "servers": map[string]any{
		"everything": map[string]any{"command": node, "args": []string{everything, "stdio"}}}})
	dir := filepath.Join(home, ".volt", "agent")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "mcp.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return home
}
