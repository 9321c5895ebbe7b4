package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

const (
	cleanHome    = "testdata/vet/clean/home"
	cleanProject = "testdata/vet/clean/project"
)

// valuePos returns the 1-based line and byte column of the value of the
// first "key": in file, found independently of the loader.
func valuePos(t *testing.T, file, key string) (line, col int) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`"` + regexp.QuoteMeta(key) + `"\s*:\s*`).FindIndex(data)
	if m == nil {
		t.Fatalf("%s has no %q", file, key)
	}
	off := m[1]
	line = bytes.Count(data[:off], []byte("\n")) + 1
	col = off - (bytes.LastIndexByte(data[:off], '\n') + 1) + 1
	return line, col
}

func TestConfigShowTextSources(t *testing.T) {
	t.Parallel()
	r := runCLI(t, nil, "config", "show", "--home", cleanHome, "--project", cleanProject, "--approve")
	if r.code != exitOK || r.stderr != "" {
		t.Fatalf("want exit 0 and empty stderr\n%s", r)
	}
	lines := strings.Split(r.stdout, "\n")
	find := func(path string) string {
		t.Helper()
		for _, l := range lines {
			if strings.HasPrefix(l, path+" = ") {
				return l
			}
		}
		t.Errorf("config show has no line for %s\n%s", path, r.stdout)
		return ""
	}
	at := func(layer, file, key string) string {
		l, c := valuePos(t, file, key)
		return fmt.Sprintf("# %s %s:%d:%d", layer, file, l, c)
	}
	userFile := cleanHome + "/.volt/agent/mcp.json"
	sharedFile := cleanHome + "/.config/mcp/mcp.json"
	projFile := cleanProject + "/.volt/mcp.json"
	for _, tc := range []struct{ path, value, source string }{
		{"settings.mode", `"proxy"`, "# default"},
		{"settings.maxOutputLines", "2000", "# default"},
		{"settings.callTimeoutMs", "120000", at("user", userFile, "callTimeoutMs")},
		{"settings.maxOutputBytes", "32768", at("project", projFile, "maxOutputBytes")},
		{"servers.fetch.command", `"uvx"`, at("user-shared", sharedFile, "command")},
		{"servers.fetch.lifecycle", `"eager"`, at("user", userFile, "lifecycle")},
		{"servers.fetch.transport", `"stdio"`, "# derived"},
		// A server timeout left unset takes the gateway setting, and its source.
		{"servers.fetch.callTimeoutMs", "120000", at("user", userFile, "callTimeoutMs")},
		{"servers.github.includeTools", `["get_*","list_*"]`, at("project", projFile, "includeTools")},
		{"servers.github.url", `"https://api.githubcopilot.com/mcp/"`, at("user", userFile, "url")},
		{"servers.github.lifecycle", `"lazy"`, "# default"},
		{"servers.docs.url", `"http://127.0.0.1:8931/mcp"`, at("project-shared", cleanProject+"/.mcp.json", "url")},
		{"servers.memory.env.MEMORY_FILE_PATH", `"${env:HOME}/.cache/voltmcp-memory.json"`, at("project", projFile, "MEMORY_FILE_PATH")},
	} {
		l := find(tc.path)
		if l == "" {
			continue
		}
		re := regexp.MustCompile(`^` + regexp.QuoteMeta(tc.path+" = "+tc.value) + ` +` + regexp.QuoteMeta(tc.source) + `$`)
		if !re.MatchString(l) {
			t.Errorf("got  %q\nwant %s = %s  %s", l, tc.path, tc.value, tc.source)
		}
	}
	for _, want := range []string{
		"# user-shared    " + sharedFile + ": loaded (mcpServers)",
		"# user           " + userFile + ": loaded (voltmcp)",
		"# project-shared " + cleanProject + "/.mcp.json: loaded (vscode)",
		"# project        " + projFile + ": loaded (voltmcp)",
	} {
		if !strings.Contains(r.stdout, want+"\n") {
			t.Errorf("config show lacks %q", want)
		}
	}
	// Every value line names a source.
	for _, l := range lines {
		if strings.Contains(l, " = ") && !regexp.MustCompile(`  # (default|derived|(user-shared|user|project-shared|project) \S+:\d+:\d+)$`).MatchString(l) {
			t.Errorf("line without a source: %q", l)
		}
	}
}

// configJSON is the shape of `config show --json`.
type configJSON struct {
	Settings map[string]any            `json:"settings"`
	Servers  map[string]map[string]any `json:"servers"`
	Sources  map[string]struct {
		Layer string `json:"layer"`
		File  string `json:"file"`
		Line  int    `json:"line"`
		Col   int    `json:"col"`
	} `json:"sources"`
	Files []struct {
		Layer  string `json:"layer"`
		Path   string `json:"path"`
		Found  bool   `json:"found"`
		Loaded bool   `json:"loaded"`
	} `json:"files"`
	Trust *struct {
		Trusted bool   `json:"trusted"`
		Reason  string `json:"reason"`
	} `json:"trust"`
	Diagnostics []struct {
		Severity string `json:"severity"`
		Code     string `json:"code"`
	} `json:"diagnostics"`
}

func decodeConfigJSON(t *testing.T, r cliResult) configJSON {
	t.Helper()
	var c configJSON
	if err := json.Unmarshal([]byte(r.stdout), &c); err != nil {
		t.Fatalf("config show --json: %v\n%s", err, r)
	}
	return c
}

func TestConfigShowJSON(t *testing.T) {
	t.Parallel()
	r := runCLI(t, nil, "config", "show", "--json", "--home", cleanHome, "--project", cleanProject, "--approve")
	if r.code != exitOK || r.stderr != "" {
		t.Fatalf("want exit 0 and empty stderr\n%s", r)
	}
	c := decodeConfigJSON(t, r)
	if c.Settings["maxOutputBytes"] != 32768.0 || c.Settings["mode"] != "proxy" {
		t.Errorf("settings = %v", c.Settings)
	}
	for _, id := range []string{"docs", "fetch", "github", "memory"} {
		if _, ok := c.Servers[id]; !ok {
			t.Errorf("no server %q", id)
		}
	}
	if len(c.Servers) != 4 {
		t.Errorf("%d servers, want 4", len(c.Servers))
	}
	if c.Servers["fetch"]["layer"] != "user-shared" || c.Servers["fetch"]["lifecycle"] != "eager" {
		t.Errorf("fetch = %v", c.Servers["fetch"])
	}
	projFile := cleanProject + "/.volt/mcp.json"
	line, col := valuePos(t, projFile, "maxOutputBytes")
	if s := c.Sources["settings.maxOutputBytes"]; s.Layer != "project" || s.File != projFile || s.Line != line || s.Col != col {
		t.Errorf("source of settings.maxOutputBytes = %+v, want project %s:%d:%d", s, projFile, line, col)
	}
	if s, ok := c.Sources["settings.mode"]; !ok || s.Layer != "default" || s.File != "" || s.Line != 0 {
		t.Errorf("source of settings.mode = %+v (present %t), want default without a position", s, ok)
	}
	line, col = valuePos(t, cleanHome+"/.config/mcp/mcp.json", "args")
	if s := c.Sources["servers.fetch.args"]; s.Layer != "user-shared" || s.Line != line || s.Col != col {
		t.Errorf("source of servers.fetch.args = %+v, want user-shared line %d col %d", s, line, col)
	}
	if c.Trust == nil || !c.Trust.Trusted || !strings.Contains(c.Trust.Reason, "--approve") {
		t.Errorf("trust = %+v, want trusted by --approve", c.Trust)
	}
	if len(c.Files) != 4 {
		t.Errorf("%d files, want 4", len(c.Files))
	}
	for _, f := range c.Files {
		if !f.Found || !f.Loaded {
			t.Errorf("file %s: found %t loaded %t", f.Path, f.Found, f.Loaded)
		}
	}
	if c.Diagnostics == nil {
		t.Errorf("diagnostics is null, want a list")
	}
}

func TestConfigShowUntrusted(t *testing.T) {
	t.Parallel()
	home, project := "testdata/vet/untrusted/home", "testdata/vet/untrusted/project"
	for _, flags := range [][]string{nil, {"--no-approve"}} {
		r := runCLI(t, nil, append([]string{"config", "show", "--json", "--home", home, "--project", project}, flags...)...)
		if r.code != exitOK {
			t.Fatalf("%v: want exit 0\n%s", flags, r)
		}
		c := decodeConfigJSON(t, r)
		if _, ok := c.Servers["everything"]; ok {
			t.Errorf("%v: the untrusted project's server is in the effective config", flags)
		}
		if _, ok := c.Servers["time"]; !ok {
			t.Errorf("%v: the user's server is missing", flags)
		}
		if c.Trust == nil || c.Trust.Trusted {
			t.Errorf("%v: trust = %+v, want untrusted", flags, c.Trust)
		}
		ignored := false
		for _, d := range c.Diagnostics {
			ignored = ignored || d.Code == "project-ignored"
		}
		if !ignored {
			t.Errorf("%v: no project-ignored diagnostic", flags)
		}
	}
	text := runCLI(t, nil, "config", "show", "--home", home, "--project", project)
	if !strings.Contains(text.stdout, "warning[project-ignored]: project MCP config is ignored") ||
		strings.Contains(text.stdout, "servers.everything.") || !strings.Contains(text.stdout, "servers.time.command") {
		t.Errorf("config show on an untrusted project:\n%s", text)
	}
}

// The canary is a literal secret in a well-known token format. No output
// of voltmcp may hold it, nor a long enough piece of it to matter.
const secretCanary = "ghp_CANARY0123456789abcdefghijklmnopqrstuv"

var canaryPieces = []string{secretCanary, "CANARY", "0123456789abcdefghij"}

// writeProject writes a project's two layer files into a new directory.
func writeProject(t *testing.T, shared, project string) string {
	t.Helper()
	dir := t.TempDir()
	if shared != "" {
		if err := os.WriteFile(filepath.Join(dir, ".mcp.json"), []byte(shared), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if project != "" {
		if err := os.MkdirAll(filepath.Join(dir, ".volt"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ".volt", "mcp.json"), []byte(project), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func canaryProject(t *testing.T) string {
	c := secretCanary
	shared := `{
  "mcpServers": {
    "claude": {
      "command": "node",
      "args": ["server.js"],
      "env": { "API_KEY": "` + c + `" }
    }
  }
}
`
	project := `{
  "version": 1,
  "servers": {
    "local": {
      "command": "node",
      "args": ["server.js", "--token", "` + c + `", "--api-key=` + c + `", "` + c + `"],
      "env": { "GITHUB_TOKEN": "` + c + `", "PLAIN": "` + c + `" }
    },
    "remote": {
      "url": "https://mcp.example.com/mcp?token=` + c + `&page=2",
      "headers": { "Authorization": "Bearer ` + c + `", "X-Custom": "` + c + `" },
      "auth": { "type": "bearer", "token": "` + c + `" }
    },
    "userinfo": {
      "url": "https://user:` + c + `@mcp.example.com/mcp"
    },
    "oauth": {
      "url": "https://mcp.example.com/mcp",
      "auth": { "type": "oauth", "clientSecret": "` + c + `" }
    }
  }
}
`
	dir := writeProject(t, shared, project)
	for _, f := range []string{".mcp.json", ".volt/mcp.json"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil || !bytes.Contains(data, []byte(secretCanary)) {
			t.Fatalf("the canary project lacks the canary in %s (%v)", f, err)
		}
	}
	return dir
}

func assertNoCanary(t *testing.T, what string, r cliResult) {
	t.Helper()
	for _, p := range canaryPieces {
		if strings.Contains(r.stdout, p) {
			t.Errorf("%s: stdout holds %q of the secret canary:\n%s", what, p, r.stdout)
		}
		if strings.Contains(r.stderr, p) {
			t.Errorf("%s: stderr holds %q of the secret canary:\n%s", what, p, r.stderr)
		}
	}
}

func TestSecretCanaryNeverPrinted(t *testing.T) {
	t.Parallel()
	project := canaryProject(t)
	home := t.TempDir()
	base := []string{"--home", home, "--project", project}
	trust := [][]string{{"--approve"}, nil, {"--no-approve"}}
	for _, format := range vetFormats {
		for _, tr := range trust {
			args := append(append([]string{"vet", "--format", format}, base...), tr...)
			r := runCLI(t, nil, args...)
			if r.code != exitFindings {
				t.Errorf("%v: exit %d, want 1 (the literal secrets are errors)", args, r.code)
			}
			assertNoCanary(t, strings.Join(args, " "), r)
		}
		// Standalone files too.
		r := runCLI(t, nil, "vet", "--format", format, filepath.Join(project, ".mcp.json"), filepath.Join(project, ".volt", "mcp.json"))
		assertNoCanary(t, "vet "+format+" FILE...", r)
	}
	for _, asJSON := range []bool{false, true} {
		for _, tr := range trust {
			args := append(append([]string{"config", "show"}, base...), tr...)
			if asJSON {
				args = append(args, "--json")
			}
			r := runCLI(t, nil, args...)
			if r.code != exitOK {
				t.Errorf("%v: exit %d, want 0\n%s", args, r.code, r)
			}
			assertNoCanary(t, strings.Join(args, " "), r)
		}
	}

	// The test is only worth something if the canaries were read: vet
	// finds each one, and config show prints the servers that held them.
	v := decodeVetJSON(t, runCLI(t, nil, append([]string{"vet", "--format", "json", "--approve"}, base...)...))
	found := map[string]bool{}
	for _, d := range v.Diagnostics {
		if d.Code == "literal-secret" {
			found[d.Path] = true
		}
	}
	for _, p := range []string{
		"mcpServers.claude.env.API_KEY",
		"servers.local.args[2]", "servers.local.args[3]", "servers.local.args[4]",
		"servers.local.env.GITHUB_TOKEN", "servers.local.env.PLAIN",
		"servers.remote.url", "servers.remote.headers.Authorization", "servers.remote.headers.X-Custom",
		"servers.remote.auth.token", "servers.userinfo.url", "servers.oauth.auth.clientSecret",
	} {
		if !found[p] {
			t.Errorf("vet did not report the literal secret at %s (found %v)", p, found)
		}
	}
	c := decodeConfigJSON(t, runCLI(t, nil, append([]string{"config", "show", "--json", "--approve"}, base...)...))
	local, remote := c.Servers["local"], c.Servers["remote"]
	if local == nil || remote == nil || c.Servers["claude"] == nil {
		t.Fatalf("config show lacks the canary servers: %v", c.Servers)
	}
	if env, _ := local["env"].(map[string]any); env["GITHUB_TOKEN"] != "<redacted>" {
		t.Errorf("local env = %v, want GITHUB_TOKEN <redacted>", local["env"])
	}
	if u, _ := remote["url"].(string); !strings.Contains(u, "token=REDACTED") || !strings.Contains(u, "page=2") {
		t.Errorf("remote url = %q, want token=REDACTED and the rest kept", u)
	}
	if auth, _ := remote["auth"].(map[string]any); auth["token"] != "<redacted>" || auth["type"] != "bearer" {
		t.Errorf("remote auth = %v", remote["auth"])
	}
	if args, _ := local["args"].([]any); len(args) != 5 || args[0] != "server.js" || args[1] != "--token" {
		t.Errorf("local args = %v, want the non-secret arguments kept", local["args"])
	}
}

// recordingEnv answers every variable with a recognizable value and
// records which were asked for.
type recordingEnv struct {
	mu    sync.Mutex
	asked map[string]bool
	home  string
}

func (e *recordingEnv) getenv(name string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.asked[name] = true
	if name == "HOME" {
		return e.home
	}
	if name == "VOLTMCP_HOME" || name == "XDG_CACHE_HOME" {
		return ""
	}
	return "RESOLVED-" + name + "-VALUE"
}

func TestEnvReferencesAreNeverResolved(t *testing.T) {
	t.Parallel()
	shared := `{
  "mcpServers": {
    "docs": {
      "type": "http",
      "url": "https://docs.example.com/mcp",
      "headers": { "Authorization": "Bearer ${DOCS_TOKEN}" }
    }
  }
}
`
	project := `{
  "version": 1,
  "servers": {
    "local": {
      "command": "node",
      "args": ["server.js", "--token=${env:API_TOKEN}"],
      "cwd": "${env:WORKDIR}/srv",
      "env": { "API_TOKEN": "${env:API_TOKEN}", "MEMORY_FILE_PATH": "${env:HOME}/.cache/m.json" }
    },
    "remote": {
      "url": "https://${env:MCP_HOST}/mcp",
      "auth": { "type": "bearer", "token": "${env:REMOTE_TOKEN}" }
    }
  }
}
`
	dir := writeProject(t, shared, project)
	e := &recordingEnv{asked: map[string]bool{}, home: t.TempDir()}
	var outputs []string
	for _, args := range [][]string{
		{"vet", "--format", "text"}, {"vet", "--format", "json"}, {"vet", "--format", "sarif"}, {"vet", "--format", "github"},
		{"config", "show"}, {"config", "show", "--json"},
	} {
		args = append(args, "--project", dir, "--approve")
		r := runCLI(t, e.getenv, args...)
		if r.code != exitOK {
			t.Errorf("%v: exit %d, want 0 (references are not literal secrets)\n%s", args, r.code, r)
		}
		if strings.Contains(r.stdout+r.stderr, "RESOLVED-") {
			t.Errorf("%v resolved a reference:\n%s", args, r)
		}
		outputs = append(outputs, r.stdout)
	}
	text, js := outputs[4], outputs[5]
	for _, want := range []string{
		`servers.docs.headers.Authorization = "Bearer ${env:DOCS_TOKEN}"`,
		`servers.local.env.API_TOKEN = "${env:API_TOKEN}"`,
		`servers.local.env.MEMORY_FILE_PATH = "${env:HOME}/.cache/m.json"`,
		`servers.local.cwd = "${env:WORKDIR}/srv"`,
		`servers.remote.url = "https://${env:MCP_HOST}/mcp"`,
		`servers.remote.auth.token = "${env:REMOTE_TOKEN}"`,
		`"--token=${env:API_TOKEN}"`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("config show lacks %s\n%s", want, text)
		}
	}
	c := decodeConfigJSON(t, cliResult{stdout: js})
	if h, _ := c.Servers["docs"]["headers"].(map[string]any); h["Authorization"] != "Bearer ${env:DOCS_TOKEN}" {
		t.Errorf("config show --json: docs headers = %v", c.Servers["docs"]["headers"])
	}
	if a, _ := c.Servers["remote"]["auth"].(map[string]any); a["token"] != "${env:REMOTE_TOKEN}" {
		t.Errorf("config show --json: remote auth = %v", c.Servers["remote"]["auth"])
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for name := range e.asked {
		if name != "HOME" && name != "VOLTMCP_HOME" && name != "XDG_CACHE_HOME" {
			t.Errorf("the CLI read $%s; it should only look up the home and cache directories", name)
		}
	}
}
