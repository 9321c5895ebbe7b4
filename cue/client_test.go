package cue

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const clientCanary = "ghp_CANARYcanary0123456789abcdefABCDEF01"

func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadClientFileClaude(t *testing.T) {
	p := writeTemp(t, "claude.json", `{
  "numStartups": 3,
  "mcpServers": {
    "github": {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-github@1.0.0"], "env": {"GITHUB_TOKEN": "`+clientCanary+`"}},
    "voltmcp": {"type": "stdio", "command": "voltmcp", "args": ["serve"]}
  },
  "projects": {"/p": {"mcpServers": {"api": {"type": "http", "url": "https://api.example/mcp", "headers": {"Authorization": "Bearer `+clientCanary+`"}}}},
    "/q": {"allowedTools": [], "mcpServers": {}},
    "/r": {"mcpServers": {"voltmcp": {"command": "voltmcp", "args": ["serve"]}, "db": {"command": "db-mcp"}}}}
}`)
	cf, err := ReadClientFile(p, &ClientFileOptions{Schema: testSchema()})
	if err != nil {
		t.Fatal(err)
	}
	if len(cf.Servers) != 2 || cf.Dialect != DialectClaude {
		t.Fatalf("servers = %+v", cf.Servers)
	}
	gh := cf.Servers[0]
	if gh.At.Line != 4 || gh.Invalid || gh.Gateway || len(gh.Secrets) != 1 || gh.Secrets[0].Variable != "GITHUB_TOKEN" {
		t.Errorf("github = %+v", gh)
	}
	if !cf.Servers[1].Gateway {
		t.Error("the gateway entry is not recognized")
	}
	def := string(gh.Definition(false))
	if strings.Contains(def, clientCanary) || !strings.Contains(def, `"GITHUB_TOKEN":"${env:GITHUB_TOKEN}"`) || !strings.Contains(def, `"transport":"stdio"`) {
		t.Errorf("definition = %s", def)
	}
	if !strings.Contains(string(gh.Definition(true)), clientCanary) {
		t.Error("keepSecrets lost the literal")
	}
	if cf.Projects != nil {
		t.Errorf("projects listed unasked: %+v", cf.Projects)
	}
	// The per-project entry of ~/.claude.json; with Projects, every
	// project entry that has servers of its own, but voltmcp's.
	cf, err = ReadClientFile(p, &ClientFileOptions{Schema: testSchema(), Under: []string{"projects", "/p"}, Projects: true})
	if err != nil || len(cf.Servers) != 1 {
		t.Fatalf("project servers = %+v, %v", cf, err)
	}
	if len(cf.Projects) != 2 || cf.Projects[0].Dir != "/p" || cf.Projects[1].Dir != "/r" ||
		len(cf.Projects[0].Servers) != 1 || cf.Projects[0].Servers[0].Key != "api" || cf.Projects[0].Servers[0].At.Line != 7 ||
		len(cf.Projects[1].Servers) != 1 || cf.Projects[1].Servers[0].Key != "db" || cf.Projects[1].Servers[0].At.Line != 9 {
		t.Errorf("projects = %+v", cf.Projects)
	}
	api := cf.Servers[0]
	def = string(api.Definition(false))
	if api.At.Line != 7 || !strings.Contains(def, `"Authorization":"Bearer ${env:API_TOKEN}"`) || !strings.Contains(def, `"streamable-http"`) {
		t.Errorf("api = %+v %s", api, def)
	}
	// The written definition passes the checks a write makes.
	if ds, err := CheckServer(testSchema(), "api", api.Definition(false)); err != nil || ds.HasErrors() {
		t.Errorf("check: %v%s", err, dump(ds))
	}
}

func TestReadClientFileCodex(t *testing.T) {
	p := writeTemp(t, "config.toml", `model = "o3"

[mcp_servers.docs]
command = "docs-server"
args = ["--port", "4000"]
env = { "API_KEY" = "`+clientCanary+`" }
startup_timeout_sec = 20
tool_timeout_sec = 60
env_vars = ["HOME_TOKEN"]

[mcp_servers.figma]
url = "https://mcp.figma.example/mcp"
bearer_token_env_var = "FIGMA_TOKEN"
unknown_thing = 1
`)
	cf, err := ReadClientFile(p, &ClientFileOptions{Schema: testSchema(), Codex: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(cf.Servers) != 2 || cf.Diagnostics.HasErrors() {
		t.Fatalf("servers = %+v%s", cf.Servers, dump(cf.Diagnostics))
	}
	docs, figma := cf.Servers[0], cf.Servers[1]
	def := string(docs.Definition(false))
	if docs.At.Line != 3 || len(docs.Secrets) != 1 || strings.Contains(def, clientCanary) ||
		!strings.Contains(def, `"connectTimeoutMs":20000`) || !strings.Contains(def, `"callTimeoutMs":60000`) || !strings.Contains(def, `"envAllowlist":["HOME_TOKEN"]`) {
		t.Errorf("docs = %+v %s", docs, def)
	}
	if figma.At.Line != 11 || !strings.Contains(string(figma.Definition(false)), `"Authorization":"Bearer ${env:FIGMA_TOKEN}"`) {
		t.Errorf("figma = %+v %s", figma, figma.Definition(false))
	}
	if len(cf.Diagnostics) != 1 || cf.Diagnostics[0].Code != CodeIgnoredField || cf.Diagnostics[0].Line != 14 {
		t.Errorf("diagnostics:%s", dump(cf.Diagnostics))
	}
	bad := writeTemp(t, "bad.toml", "[mcp_servers.x]\ncommand = \"x\"\nargs = [\n")
	cf, err = ReadClientFile(bad, &ClientFileOptions{Schema: testSchema(), Codex: true})
	if err != nil || len(cf.Diagnostics) != 1 || cf.Diagnostics[0].Line == 0 {
		t.Errorf("bad toml: %v%s", err, dump(cf.Diagnostics))
	}
}

func TestReadClientFileErrors(t *testing.T) {
	p := writeTemp(t, "mcp.json", "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"a\"},\n  }\n}\n")
	cf, err := ReadClientFile(p, &ClientFileOptions{Schema: testSchema()})
	if err != nil || len(cf.Servers) != 0 || len(cf.Diagnostics) != 1 || cf.Diagnostics[0].Line != 4 {
		t.Errorf("%v%s", err, dump(cf.Diagnostics))
	}
	p = writeTemp(t, "mcp.json", `{"servers": {"a": {"type": "stdio", "command": 3}, "b": {"type": "stdio", "command": "b"}}}`)
	cf, err = ReadClientFile(p, &ClientFileOptions{Schema: testSchema(), Dialect: DialectVSCode})
	if err != nil || len(cf.Servers) != 2 || !cf.Servers[0].Invalid || cf.Servers[1].Invalid || !cf.Diagnostics.HasErrors() {
		t.Errorf("%v %+v%s", err, cf.Servers, dump(cf.Diagnostics))
	}
	cf, err = ReadClientFile(filepath.Join(t.TempDir(), "none.json"), nil)
	if err != nil || cf.Found {
		t.Errorf("missing file: %+v %v", cf, err)
	}
}

func TestAddRemoveServer(t *testing.T) {
	ctx := context.Background()
	loc := layers(t, map[Layer]string{LayerUser: `{"version": 1, "x-note": "keep", "servers": {"old": {"command": "o"}}}`})
	opts := &AddOptions{Schema: testSchema()}
	if err := AddServer(ctx, loc, LayerUser, "web", []byte(`{"url": "https://web.example/mcp", "headers": {"X-Team": "a"}}`), opts); err != nil {
		t.Fatal(err)
	}
	if err := AddServer(ctx, loc, LayerUser, "Web", []byte(`{"command": "w"}`), opts); !errors.Is(err, ErrServerExists) {
		t.Errorf("err = %v", err)
	}
	err := AddServer(ctx, loc, LayerUser, "bad", []byte(`{"url": "ftp://x"}`), opts)
	if err == nil || !strings.Contains(err.Error(), "servers.bad.url") {
		t.Errorf("err = %v", err)
	}
	err = AddServer(ctx, loc, LayerUser, "leak", []byte(`{"command": "x", "env": {"API_TOKEN": "`+clientCanary+`"}}`), opts)
	if err == nil || strings.Contains(err.Error(), clientCanary) || !strings.Contains(err.Error(), "literal secret") {
		t.Errorf("err = %v", err)
	}
	if err := AddServer(ctx, loc, LayerUser, "!!", []byte(`{"command": "x"}`), opts); err == nil {
		t.Error("accepted a bad name")
	}
	res, err := Load(ctx, loc, &Options{Schema: testSchema(), Lint: true})
	if err != nil {
		t.Fatal(err)
	}
	noErrors(t, res)
	if s := mustServer(t, res, "web"); s.Headers["X-Team"] != "a" {
		t.Errorf("web = %+v", s)
	}
	if err := RemoveServer(ctx, loc, LayerUser, "WEB", nil); err != nil {
		t.Fatal(err)
	}
	if err := RemoveServer(ctx, loc, LayerUser, "web", nil); !errors.Is(err, ErrServerNotFound) {
		t.Errorf("err = %v", err)
	}
	data, _ := os.ReadFile(loc.Path(LayerUser))
	if !strings.Contains(string(data), `"x-note": "keep"`) || strings.Contains(string(data), "web") || !strings.Contains(string(data), `"old"`) {
		t.Errorf("file:\n%s", data)
	}
}

func TestEditClientFile(t *testing.T) {
	ctx := context.Background()
	orig := `{"numStartups": 7, "mcpServers": {"a": {"command": "a"}, "b": {"command": "b"}}, "tipsHistory": {"x": 1}}`
	p := writeTemp(t, ".claude.json", orig)
	loc := Locations{Home: t.TempDir()}
	backup := loc.BackupFile(p)
	if !strings.HasPrefix(backup, filepath.Join(loc.Home, ".volt", "agent", "backups", "claude.json.")) || backup == loc.BackupFile(writeTemp(t, ".claude.json", "")) {
		t.Errorf("backup file = %s", backup)
	}
	edit := &ClientEdit{Map: "mcpServers", Set: []NewServer{{Key: "voltmcp", Def: []byte(`{"type":"stdio","command":"voltmcp","args":["serve"]}`)}},
		Remove: []string{"a"}, Backup: backup}
	if err := EditClientFile(ctx, loc, p, edit); err != nil {
		t.Fatal(err)
	}
	// Nothing is left beside another client's file: its lock is in the
	// agent directory.
	if ents, _ := os.ReadDir(filepath.Dir(p)); len(ents) != 1 {
		t.Errorf("beside the client's file: %v", ents)
	}
	if _, err := os.Stat(loc.LockFile(p)); err != nil || filepath.Dir(loc.LockFile(p)) != filepath.Join(loc.Home, ".volt", "agent", "locks") {
		t.Errorf("lock file %s: %v", loc.LockFile(p), err)
	}
	data, _ := os.ReadFile(p)
	text := string(data)
	if strings.Contains(text, `"a"`) || !strings.Contains(text, `"b"`) || !strings.Contains(text, `"voltmcp"`) ||
		strings.Index(text, "numStartups") > strings.Index(text, "mcpServers") || strings.Index(text, "mcpServers") > strings.Index(text, "tipsHistory") {
		t.Errorf("edited:\n%s", text)
	}
	if b, _ := os.ReadFile(backup); string(b) != orig {
		t.Errorf("backup = %q", b)
	}
	// A second change keeps the first backup: the file as it was before voltmcp.
	if err := EditClientFile(ctx, loc, p, &ClientEdit{Map: "mcpServers", Remove: []string{"b"}, Backup: backup}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(backup); string(b) != orig {
		t.Errorf("backup replaced: %q", b)
	}
	// Under creates the project entry.
	if err := EditClientFile(ctx, loc, p, &ClientEdit{Under: []string{"projects", "/p"}, Map: "mcpServers",
		Set: []NewServer{{Key: "x", Def: []byte(`{"command":"x"}`)}}}); err != nil {
		t.Fatal(err)
	}
	cf, err := ReadClientFile(p, &ClientFileOptions{Schema: testSchema(), Under: []string{"projects", "/p"}})
	if err != nil || len(cf.Servers) != 1 || cf.Servers[0].Key != "x" {
		t.Errorf("%+v %v", cf, err)
	}
	broken := writeTemp(t, "broken.json", `{"mcpServers": {`)
	if err := EditClientFile(ctx, loc, broken, edit); err == nil || !strings.Contains(err.Error(), "not changed") {
		t.Errorf("err = %v", err)
	}
}

// TestEditKeepsTheFileLayout edits client files of several layouts: each
// keeps its indent, one line or many, line ends and final newline, so
// that the edit is the whole difference.
func TestEditKeepsTheFileLayout(t *testing.T) {
	ctx := context.Background()
	edit := func() *ClientEdit {
		return &ClientEdit{Map: "mcpServers", Set: []NewServer{{Key: "v", Def: []byte(`{"command":"v"}`)}}, Remove: []string{"a"}}
	}
	for _, c := range []struct{ name, orig, want string }{
		{"two spaces, no final newline (JSON.stringify)",
			"{\n  \"n\": 7,\n  \"mcpServers\": {\n    \"a\": {\n      \"command\": \"a\"\n    }\n  },\n  \"tips\": []\n}",
			"{\n  \"n\": 7,\n  \"mcpServers\": {\n    \"v\": {\n      \"command\": \"v\"\n    }\n  },\n  \"tips\": []\n}"},
		{"four spaces, final newline",
			"{\n    \"mcpServers\": {\n        \"a\": {\"command\": \"a\"}\n    }\n}\n",
			"{\n    \"mcpServers\": {\n        \"v\": {\n            \"command\": \"v\"\n        }\n    }\n}\n"},
		{"tabs, CRLF",
			"{\r\n\t\"mcpServers\": {\r\n\t\t\"a\": {\"command\": \"a\"}\r\n\t}\r\n}\r\n",
			"{\r\n\t\"mcpServers\": {\r\n\t\t\"v\": {\r\n\t\t\t\"command\": \"v\"\r\n\t\t}\r\n\t}\r\n}\r\n"},
		{"one line",
			`{"mcpServers": {"a": {"command": "a"}}, "tips": [1, 2]}`,
			`{"mcpServers": {"v": {"command": "v"}}, "tips": [1, 2]}`},
		{"one line, compact",
			`{"mcpServers":{"a":{"command":"a"}}}`,
			`{"mcpServers":{"v":{"command":"v"}}}`},
		{"empty, then a blank first line",
			"{\n\n  \"mcpServers\": {}\n}\n",
			"{\n  \"mcpServers\": {\n    \"v\": {\n      \"command\": \"v\"\n    }\n  }\n}\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := writeTemp(t, "mcp.json", c.orig)
			if err := EditClientFile(ctx, Locations{Home: t.TempDir()}, p, edit()); err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(p); string(got) != c.want {
				t.Errorf("got\n%q\nwant\n%q", got, c.want)
			}
		})
	}
	// A file voltmcp creates is indented by two spaces, with a final
	// newline.
	p := filepath.Join(t.TempDir(), "new.json")
	if err := EditClientFile(ctx, Locations{Home: t.TempDir()}, p, edit()); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(p); string(got) != "{\n  \"mcpServers\": {\n    \"v\": {\n      \"command\": \"v\"\n    }\n  }\n}\n" {
		t.Errorf("new file: %q", got)
	}
}
