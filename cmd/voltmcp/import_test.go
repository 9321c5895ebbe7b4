package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/voltmcp/voltmcp/cue"
)

// importCanary is a credential written in plain text in the fixtures: it
// must never reach output or a file voltmcp writes.
const importCanary = "ghp_IMPORTcanary0123456789abcdefABCDEF99"

// clientFixtures writes one MCP config per client under a fresh home and
// project and returns them.
func clientFixtures(t *testing.T) (home, project string) {
	t.Helper()
	root := t.TempDir()
	home, project = filepath.Join(root, "home"), filepath.Join(root, "project")
	abs, _ := filepath.Abs(project)
	files := map[string]string{
		filepath.Join(home, ".claude.json"): `{
  "numStartups": 12,
  "mcpServers": {
    "github": {"type": "stdio", "command": "github-mcp-server", "args": ["stdio"], "env": {"GITHUB_TOKEN": "` + importCanary + `"}}
  },
  "projects": {"` + abs + `": {"mcpServers": {"local-db": {"type": "stdio", "command": "db-mcp"}}},
    "/elsewhere/other": {"mcpServers": {"other-db": {"command": "other-db-mcp"}}}}
}
`,
		filepath.Join(project, ".mcp.json"): `{"mcpServers": {"shared": {"command": "shared-mcp"}}}
`,
		filepath.Join(home, ".config", "Claude", "claude_desktop_config.json"): `{"mcpServers": {"desktop-fs": {"command": "fs-mcp", "args": ["/tmp"]}}}
`,
		filepath.Join(home, ".cursor", "mcp.json"): `{"mcpServers": {
  "github": {"command": "github-mcp-server", "args": ["stdio"], "env": {"GITHUB_TOKEN": "` + importCanary + `"}},
  "linear": {"url": "https://mcp.linear.example/sse", "headers": {"Authorization": "Bearer ` + importCanary + `"}}
}}
`,
		filepath.Join(project, ".vscode", "mcp.json"): `{"servers": {"vs-notes": {"type": "http", "url": "https://notes.example/mcp"}}}
`,
		filepath.Join(home, ".codeium", "windsurf", "mcp_config.json"): `{"mcpServers": {"wind": {"command": "wind-mcp"}}}
`,
		filepath.Join(home, ".codex", "config.toml"): `model = "o3"

[mcp_servers.docs]
command = "docs-mcp"
args = ["--port", "4000"]
startup_timeout_sec = 20
`,
	}
	for p, content := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return home, project
}

func noCanary(t *testing.T, what, text string) {
	t.Helper()
	if strings.Contains(text, importCanary) || strings.Contains(text, importCanary[4:20]) {
		t.Errorf("%s holds the secret:\n%s", what, text)
	}
}

func TestImport(t *testing.T) {
	home, project := clientFixtures(t)
	env := fakeEnv(t, map[string]string{"HOME": home})
	cli := func(args ...string) cliResult {
		return runCLI(t, env, append(args, "--home", home, "--project", project)...)
	}
	user := filepath.Join(home, ".volt", "agent", "mcp.json")
	projectFile := filepath.Join(project, ".volt", "mcp.json")
	r := cli("import")
	noCanary(t, "import's output", r.stdout+r.stderr)
	if r.code != exitOK {
		t.Fatalf("import:\n%s", r)
	}
	for _, want := range []string{
		"+ github", filepath.Join(home, ".claude.json") + ":4",
		// Claude Code's servers of this project go to the project's file;
		// another project's are that project's alone.
		"+ local-db", filepath.Join(home, ".claude.json") + ":6",
		"Claude Code starts these in this project alone: they go to " + projectFile + ", never to the user file",
		"Claude Code (project /elsewhere/other, local): " + filepath.Join(home, ".claude.json") + " (projects → /elsewhere/other)",
		"- other-db", "skipped: Claude Code starts it in /elsewhere/other alone; run 'voltmcp import' there (or with --project /elsewhere/other) to import it for that project (" +
			filepath.Join(home, ".claude.json") + ":7)",
		"= shared", "voltmcp reads this file itself (project-shared layer); run 'voltmcp trust' to load it",
		"+ desktop-fs", "claude_desktop_config.json:1",
		"- github", "the same as at " + filepath.Join(home, ".claude.json") + ":4",
		"+ linear", filepath.Join(home, ".cursor", "mcp.json") + ":3",
		"headers.Authorization holds a literal secret: written as ${env:LINEAR_TOKEN}",
		"env.GITHUB_TOKEN holds a literal secret: written as ${env:GITHUB_TOKEN}",
		// So are the servers of a client's file of the project.
		"VS Code (project): " + filepath.Join(project, ".vscode", "mcp.json") + "\n  (VS Code starts these in this project alone: they go to " + projectFile + ", never to the user file)\n  + vs-notes",
		"+ wind",
		"+ docs", filepath.Join(home, ".codex", "config.toml") + ":3",
		"Set these variables in the environment voltmcp serve runs in (the client that starts it): GITHUB_TOKEN, LINEAR_TOKEN.",
		"Would write 5 servers to " + user + " and 2 servers to " + projectFile + ". Run again with --yes",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("dry run lacks %q\n%s", want, r)
		}
	}
	if _, err := os.Stat(user); err == nil {
		t.Fatal("the dry run wrote the user file")
	}
	r = cli("import", "--yes")
	noCanary(t, "import --yes's output", r.stdout+r.stderr)
	if r.code != exitOK || !strings.Contains(r.stdout, "Wrote 5 servers to "+user+" and 2 servers to "+projectFile) ||
		!strings.Contains(r.stdout, "run 'voltmcp trust'") {
		t.Fatalf("import --yes:\n%s", r)
	}
	data, err := os.ReadFile(user)
	if err != nil {
		t.Fatal(err)
	}
	noCanary(t, "the written file", string(data))
	if strings.Contains(string(data), "local-db") || strings.Contains(string(data), "other-db") || strings.Contains(string(data), "vs-notes") {
		t.Errorf("the user file holds a project's own server:\n%s", data)
	}
	if local, _ := os.ReadFile(projectFile); !strings.Contains(string(local), `"local-db"`) || !strings.Contains(string(local), `"vs-notes"`) ||
		strings.Contains(string(local), "other-db") {
		t.Errorf("%s:\n%s", projectFile, local)
	}
	for _, want := range []string{`"GITHUB_TOKEN": "${env:GITHUB_TOKEN}"`, `"Authorization": "Bearer ${env:LINEAR_TOKEN}"`, `"connectTimeoutMs": 20000`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("written file lacks %s:\n%s", want, data)
		}
	}
	r = cli("servers", "--approve")
	for _, id := range []string{"github", "local-db", "desktop-fs", "linear", "vs-notes", "wind", "docs"} {
		if !strings.Contains(r.stdout, id) {
			t.Errorf("servers lacks %s\n%s", id, r)
		}
	}
	if r := cli("vet", "--no-approve"); r.code != exitOK {
		t.Errorf("vet rejects the imported file:\n%s", r)
	}
	// Again: everything is already there.
	r = cli("import", "--from", "cursor")
	if r.code != exitOK || !strings.Contains(r.stdout, `voltmcp already has "github" from `+user+" (user); --force replaces it") ||
		!strings.Contains(r.stdout, "Nothing to import.") {
		t.Errorf("second import:\n%s", r)
	}
	if r := cli("import", "--from", "emacs"); r.code != exitUsage || !strings.Contains(r.stderr, "unknown client") {
		t.Errorf("unknown client:\n%s", r)
	}
}

// projectClientFixtures writes Cursor's and VS Code's user and project
// MCP files under a fresh home and project, and returns their root, home
// and project: cursor-user and vs-user in the user files, cursor-proj
// (with a literal secret) and vs-proj in the project's.
func projectClientFixtures(t *testing.T) (root, home, project string) {
	t.Helper()
	root = t.TempDir()
	home, project = filepath.Join(root, "home"), filepath.Join(root, "project")
	for p, content := range map[string]string{
		filepath.Join(home, ".cursor", "mcp.json"):     `{"mcpServers": {"cursor-user": {"command": "cursor-user-mcp"}}}` + "\n",
		filepath.Join(vscodeUserDir(home), "mcp.json"): `{"servers": {"vs-user": {"type": "stdio", "command": "vs-user-mcp"}}}` + "\n",
		filepath.Join(project, ".cursor", "mcp.json"):  `{"mcpServers": {"cursor-proj": {"command": "cursor-proj-mcp", "env": {"API_TOKEN": "` + importCanary + `"}}}}` + "\n",
		filepath.Join(project, ".vscode", "mcp.json"):  `{"servers": {"vs-proj": {"type": "http", "url": "https://vs-proj.example/mcp"}}}` + "\n",
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return root, home, project
}

// TestImportProjectFiles: the servers of a client's file of the project
// (Cursor's .cursor/mcp.json, VS Code's .vscode/mcp.json) are the
// project's alone, so import writes them to the project's
// .volt/mcp.json whatever --scope says, never to the user file, where
// they would start in every project; the servers of the same clients'
// user files still go where --scope says.
func TestImportProjectFiles(t *testing.T) {
	root, home, project := projectClientFixtures(t)
	cursorProject := filepath.Join(project, ".cursor", "mcp.json")
	vscodeProject := filepath.Join(project, ".vscode", "mcp.json")
	env := fakeEnv(t, map[string]string{"HOME": home})
	cli := func(args ...string) cliResult {
		return runCLI(t, env, append(args, "--home", home, "--project", project)...)
	}
	loc := cue.Locations{Home: home, Project: project}
	user, projectFile := loc.Path(cue.LayerUser), loc.Path(cue.LayerProject)
	r := cli("import")
	noCanary(t, "import's output", r.stdout+r.stderr)
	if r.code != exitOK {
		t.Fatalf("import:\n%s", r)
	}
	for _, want := range []string{
		"Cursor (user): " + filepath.Join(home, ".cursor", "mcp.json"), "+ cursor-user",
		"Cursor (project): " + cursorProject + "\n  (Cursor starts these in this project alone: they go to " + projectFile + ", never to the user file)\n  + cursor-proj",
		"env.API_TOKEN holds a literal secret: written as ${env:API_TOKEN}",
		"VS Code (user): ", "+ vs-user",
		"VS Code (project): " + vscodeProject + "\n  (VS Code starts these in this project alone: they go to " + projectFile + ", never to the user file)\n  + vs-proj",
		"Would write 2 servers to " + user + " and 2 servers to " + projectFile + ". Run again with --yes",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("dry run lacks %q\n%s", want, r)
		}
	}
	if strings.Contains(r.stdout, "Cursor (user): "+filepath.Join(home, ".cursor", "mcp.json")+"\n  (") {
		t.Errorf("the user file's servers are said to be the project's:\n%s", r)
	}
	r = cli("import", "--yes")
	noCanary(t, "import --yes's output", r.stdout+r.stderr)
	if r.code != exitOK || !strings.Contains(r.stdout, "Wrote 2 servers to "+user+" and 2 servers to "+projectFile) ||
		!strings.Contains(r.stdout, "voltmcp loads the project's .volt/mcp.json once the project is trusted: run 'voltmcp trust'.") {
		t.Fatalf("import --yes:\n%s", r)
	}
	u, _ := os.ReadFile(user)
	if !strings.Contains(string(u), `"cursor-user"`) || !strings.Contains(string(u), `"vs-user"`) ||
		strings.Contains(string(u), "cursor-proj") || strings.Contains(string(u), "vs-proj") {
		t.Errorf("%s:\n%s", user, u)
	}
	pf, _ := os.ReadFile(projectFile)
	noCanary(t, projectFile, string(pf))
	if !strings.Contains(string(pf), `"cursor-proj"`) || !strings.Contains(string(pf), `"vs-proj"`) ||
		!strings.Contains(string(pf), `"API_TOKEN": "${env:API_TOKEN}"`) ||
		strings.Contains(string(pf), "cursor-user") || strings.Contains(string(pf), "vs-user") {
		t.Errorf("%s:\n%s", projectFile, pf)
	}
	noLitter(t, home, project)
	// Again, the project not trusted yet: its file has them.
	r = cli("import", "--yes")
	if r.code != exitOK || !strings.Contains(r.stdout, `skipped: voltmcp already has "cursor-proj" from `+projectFile+" (project); --force replaces it") ||
		!strings.Contains(r.stdout, `voltmcp already has "vs-proj" from `+projectFile) || !strings.Contains(r.stdout, "Nothing to import.") {
		t.Errorf("second import:\n%s", r)
	}
	// The project's servers load with the project, once it is trusted.
	r = cli("servers", "--approve")
	for _, id := range []string{"cursor-user", "vs-user", "cursor-proj", "vs-proj"} {
		if !strings.Contains(r.stdout, id) {
			t.Errorf("servers lacks %s\n%s", id, r)
		}
	}
	if r := cli("vet", "--approve"); r.code != exitOK {
		t.Errorf("vet rejects the imported files:\n%s", r)
	}
	// In another project, only the user file's servers are there.
	other := filepath.Join(root, "other")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, env, "servers", "--approve", "--home", home, "--project", other)
	if !strings.Contains(r.stdout, "cursor-user") || strings.Contains(r.stdout, "cursor-proj") || strings.Contains(r.stdout, "vs-proj") {
		t.Errorf("servers in another project:\n%s", r)
	}
}

// TestImportScopeProjectFiles: with --scope project the user files'
// servers go to the project's file too, and the project's files' are
// there as without it.
func TestImportScopeProjectFiles(t *testing.T) {
	home, project := clientFixtures(t)
	env := fakeEnv(t, map[string]string{"HOME": home})
	loc := cue.Locations{Home: home, Project: project}
	r := runCLI(t, env, "import", "--from", "vscode", "--from", "windsurf", "--scope", "project", "--yes", "--home", home, "--project", project)
	if r.code != exitOK || !strings.Contains(r.stdout, "Wrote 2 servers to "+loc.Path(cue.LayerProject)+".") ||
		!strings.Contains(r.stdout, "(VS Code starts these in this project alone: they go to "+loc.Path(cue.LayerProject)+", never to the user file)") {
		t.Fatalf("import --scope project:\n%s", r)
	}
	if data, _ := os.ReadFile(loc.Path(cue.LayerProject)); !strings.Contains(string(data), `"vs-notes"`) || !strings.Contains(string(data), `"wind"`) {
		t.Errorf(".volt/mcp.json:\n%s", data)
	}
	if _, err := os.Stat(loc.Path(cue.LayerUser)); err == nil {
		t.Error("the user file was written")
	}
}

func TestImportKeepSecrets(t *testing.T) {
	home, project := clientFixtures(t)
	env := fakeEnv(t, map[string]string{"HOME": home})
	r := runCLI(t, env, "import", "--from", "cursor", "--keep-secrets", "--yes", "--home", home, "--project", project)
	noCanary(t, "output", r.stdout+r.stderr)
	if r.code != exitOK || !strings.Contains(r.stdout, "copied as written (--keep-secrets)") {
		t.Fatalf("import:\n%s", r)
	}
	data, _ := os.ReadFile(filepath.Join(home, ".volt", "agent", "mcp.json"))
	if !strings.Contains(string(data), importCanary) {
		t.Errorf("--keep-secrets did not copy the literal:\n%s", data)
	}
}

func TestImportMalformedFile(t *testing.T) {
	home, project := clientFixtures(t)
	bad := filepath.Join(home, ".cursor", "mcp.json")
	if err := os.WriteFile(bad, []byte("{\n  \"mcpServers\": {\n    \"x\": {\"command\": \"x\"},\n  }\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	codex := filepath.Join(home, ".codex", "config.toml")
	if err := os.WriteFile(codex, []byte("[mcp_servers.docs]\ncommand = \"docs\"\nargs = [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := fakeEnv(t, map[string]string{"HOME": home})
	r := runCLI(t, env, "import", "--yes", "--home", home, "--project", project)
	if r.code != exitFindings || !strings.Contains(r.stderr, bad+":4:") || !strings.Contains(r.stderr, codex+":") {
		t.Fatalf("import:\n%s", r)
	}
	if !strings.Contains(r.stdout, "Wrote 3 servers to "+filepath.Join(home, ".volt", "agent", "mcp.json")+" and 2 servers to ") {
		t.Errorf("the other files did not import:\n%s", r)
	}
}

func TestAddRemove(t *testing.T) {
	home, project := t.TempDir(), t.TempDir()
	env := fakeEnv(t, map[string]string{"HOME": home})
	cli := func(args ...string) cliResult {
		return runCLI(t, env, append(args, "--home", home, "--project", project)...)
	}
	user := filepath.Join(home, ".volt", "agent", "mcp.json")
	if r := cli("add", "everything", "--env", "LOG=1", "--", "npx", "-y", "@modelcontextprotocol/server-everything@2025.9.25"); r.code != exitOK ||
		!strings.Contains(r.stdout, `Added "everything" to `+user) {
		t.Fatalf("add stdio:\n%s", r)
	}
	if r := cli("add", "notes", "--url", "https://notes.example/mcp", "--header", "Authorization=Bearer ${env:NOTES_TOKEN}", "--transport", "sse"); r.code != exitOK {
		t.Fatalf("add url:\n%s", r)
	}
	// An OAuth server: added with --oauth, it waits for voltmcp auth.
	if r := cli("add", "linear", "--url", "https://mcp.linear.example/mcp", "--oauth"); r.code != exitOK || !strings.Contains(r.stdout, "'voltmcp auth linear' logs in") || strings.Contains(r.stdout, "refresh") {
		t.Fatalf("add --oauth does not name the next step, voltmcp auth:\n%s", r)
	}
	if r := cli("auth", "--status", "linear"); r.code != exitOK || !strings.Contains(r.stdout, "needs_auth") {
		t.Errorf("auth --status after add --oauth:\n%s", r)
	}
	if r := cli("add", "x", "--oauth", "--", "cmd"); r.code != exitUsage || !strings.Contains(r.stderr, "--oauth are for an HTTP server") {
		t.Errorf("add --oauth on a stdio server:\n%s", r)
	}
	r := cli("servers")
	if !strings.Contains(r.stdout, "everything") || !strings.Contains(r.stdout, "notes") || !strings.Contains(r.stdout, "sse") {
		t.Errorf("servers:\n%s", r)
	}
	if r := cli("vet"); r.code != exitOK {
		t.Errorf("vet:\n%s", r)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"add", "bad", "--url", "ftp://x"}, "servers.bad.url"},
		{[]string{"add", "!!!", "--", "x"}, `server id "!!!" has no usable characters`},
		{[]string{"add", "everything", "--", "y"}, "already defined"},
		{[]string{"add", "leak", "--env", "API_TOKEN=" + importCanary, "--", "x"}, "literal secret"},
		{[]string{"add", "both", "--url", "https://x.example", "--", "x"}, "not both"},
		{[]string{"add", "none"}, "needs a command"},
		{[]string{"add", "t", "--url", "https://x.example", "--transport", "ws"}, "--transport is http or sse"},
	} {
		r := cli(tc.args...)
		noCanary(t, "add's error", r.stdout+r.stderr)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: want exit 2 and %q\n%s", tc.args, tc.want, r)
		}
	}
	if r := cli("add", "everything", "--force", "--", "npx", "-y", "@modelcontextprotocol/server-everything@2025.9.26"); r.code != exitOK {
		t.Errorf("add --force:\n%s", r)
	}
	if r := cli("remove", "everything"); r.code != exitOK || !strings.Contains(r.stdout, `Removed "everything" from `+user) {
		t.Errorf("remove:\n%s", r)
	}
	if r := cli("remove", "everything"); r.code != exitUsage || !strings.Contains(r.stderr, "unknown server") {
		t.Errorf("remove again:\n%s", r)
	}
	if r := cli("servers"); strings.Contains(r.stdout, "everything") || !strings.Contains(r.stdout, "notes") {
		t.Errorf("servers after remove:\n%s", r)
	}
	// A server of a file voltmcp shares with other tools is not deleted.
	if err := os.WriteFile(filepath.Join(project, ".mcp.json"), []byte(`{"mcpServers": {"shared": {"command": "shared-mcp"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r = cli("remove", "shared", "--approve")
	if r.code != exitUsage || !strings.Contains(r.stderr, filepath.Join(project, ".mcp.json")) || !strings.Contains(r.stderr, "voltmcp disable shared") {
		t.Errorf("remove of a foreign server:\n%s", r)
	}
	if data, _ := os.ReadFile(filepath.Join(project, ".mcp.json")); !strings.Contains(string(data), "shared") {
		t.Error(".mcp.json was edited")
	}
}

func TestSetup(t *testing.T) {
	home, project := clientFixtures(t)
	env := fakeEnv(t, map[string]string{"HOME": home})
	cli := func(args ...string) cliResult {
		return runCLI(t, env, append(args, "--home", home, "--project", project)...)
	}
	claude := filepath.Join(home, ".claude.json")
	loc := cue.Locations{Home: home, Project: project}
	backup := loc.BackupFile(claude)
	abs, _ := filepath.Abs(project)
	user, projectFile := loc.Path(cue.LayerUser), loc.Path(cue.LayerProject)
	before, _ := os.ReadFile(claude)
	r := cli("setup", "claude-code")
	if r.code != exitOK || !strings.Contains(r.stdout, `Would add "voltmcp" (voltmcp serve) to `+claude) ||
		!strings.Contains(r.stdout, "the file as it was is kept in "+backup) ||
		!strings.Contains(r.stdout, "Claude Code (user) would still start 1 server of its own, besides voltmcp: github") ||
		// The project's entry in ~/.claude.json: Claude Code starts it here too.
		!strings.Contains(r.stdout, "Claude Code (this project, local) would still start 1 server of its own, besides voltmcp: local-db. "+
			"'--move' imports them into "+projectFile+" (for this project alone) and removes them from "+claude+" (projects → "+abs+")") ||
		!strings.Contains(r.stdout, "Nothing changed. Run again with --yes") {
		t.Fatalf("setup dry run:\n%s", r)
	}
	if after, _ := os.ReadFile(claude); string(after) != string(before) {
		t.Fatal("the dry run changed the file")
	}
	if _, err := os.Stat(backup); err == nil {
		t.Fatal("the dry run made a backup")
	}
	r = cli("setup", "claude-code", "--yes")
	if r.code != exitOK || !strings.Contains(r.stdout, "Updated "+claude+"; the file as it was before voltmcp first changed it is in "+backup) {
		t.Fatalf("setup --yes:\n%s", r)
	}
	if b, _ := os.ReadFile(backup); string(b) != string(before) {
		t.Errorf("backup = %s", b)
	}
	noLitter(t, home, project)
	data, _ := os.ReadFile(claude)
	for _, want := range []string{`"numStartups": 12`, `"github"`, `"voltmcp": {`, `"serve"`, `"projects"`, `"local-db"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the edited file lacks %s:\n%s", want, data)
		}
	}
	// voltmcp does not import or load its own entry.
	if r := cli("import", "--from", "claude-code"); !strings.Contains(r.stdout, "skipped: the entry that points Claude Code (user) at voltmcp") {
		t.Errorf("import after setup:\n%s", r)
	}
	// --move: the servers go to voltmcp, the project's own to the
	// project's file, and the client keeps only voltmcp and the servers
	// of other projects.
	r = cli("setup", "claude-code", "--move", "--yes")
	noCanary(t, "setup --move's output", r.stdout+r.stderr)
	if r.code != exitOK || !strings.Contains(r.stdout, "Wrote 1 server to "+user+" and 1 server to "+projectFile) ||
		!strings.Contains(r.stdout, "Updated "+claude+" (projects → "+abs+")") ||
		!strings.Contains(r.stdout, "- other-db") || !strings.Contains(r.stdout, "voltmcp trust") ||
		!strings.Contains(r.stdout, "Copying 1 server to ") || !regexp.MustCompile(`Removing from [^:]+: [a-z, -]*github`).MatchString(r.stdout) {
		t.Fatalf("setup --move:\n%s", r)
	}
	data, _ = os.ReadFile(claude)
	if strings.Contains(string(data), `"github"`) || !strings.Contains(string(data), `"voltmcp"`) || strings.Contains(string(data), `"local-db"`) ||
		!strings.Contains(string(data), `"other-db"`) {
		t.Errorf("after --move:\n%s", data)
	}
	if u, _ := os.ReadFile(user); strings.Contains(string(u), "local-db") || !strings.Contains(string(u), "github") {
		t.Errorf("the user file after --move:\n%s", u)
	}
	if b, _ := os.ReadFile(backup); string(b) != string(before) {
		t.Errorf("the backup changed: %s", b)
	}
	if r := cli("servers"); !strings.Contains(r.stdout, "github") || strings.Contains(r.stdout, "\nvoltmcp ") {
		t.Errorf("servers after --move:\n%s", r)
	}
	// The project's .mcp.json: its servers move to .volt/mcp.json, and
	// the voltmcp entry it gets is not loaded by voltmcp.
	mcpBefore, _ := os.ReadFile(filepath.Join(project, ".mcp.json"))
	r = cli("setup", "claude-code", "--scope", "project", "--move", "--yes")
	if r.code != exitOK || !strings.Contains(r.stdout, "voltmcp trust") {
		t.Fatalf("setup project --move:\n%s", r)
	}
	if data, _ := os.ReadFile(projectFile); !strings.Contains(string(data), `"shared"`) || !strings.Contains(string(data), `"local-db"`) {
		t.Errorf(".volt/mcp.json:\n%s", data)
	}
	if b, _ := os.ReadFile(loc.BackupFile(filepath.Join(project, ".mcp.json"))); string(b) != string(mcpBefore) {
		t.Errorf("the backup of .mcp.json = %s", b)
	}
	noLitter(t, home, project)
	r = cli("servers", "--approve")
	// The gateway's own entry is no server of voltmcp's: no row of it.
	if !strings.Contains(r.stdout, "shared") || !strings.Contains(r.stdout, "local-db") || regexp.MustCompile(`(?m)^voltmcp\s`).MatchString(r.stdout) {
		t.Errorf("servers after project --move:\n%s", r)
	}
	if r := cli("vet", "--approve"); r.code != exitOK {
		t.Errorf("vet:\n%s", r)
	}
	// VS Code: servers with type stdio.
	if r := cli("setup", "vscode", "--scope", "project", "--yes"); r.code != exitOK {
		t.Fatalf("setup vscode:\n%s", r)
	}
	data, _ = os.ReadFile(filepath.Join(project, ".vscode", "mcp.json"))
	if !strings.Contains(string(data), `"servers"`) || !strings.Contains(string(data), `"type": "stdio"`) || !strings.Contains(string(data), `"vs-notes"`) {
		t.Errorf(".vscode/mcp.json:\n%s", data)
	}
	noLitter(t, home, project)
	if r := cli("setup", "windsurf"); r.code != exitUsage {
		t.Errorf("setup windsurf:\n%s", r)
	}
}

// TestSetupProjectMovesLocal: setup --scope project --move also moves
// Claude Code's entry of this project in ~/.claude.json into the
// project's .volt/mcp.json, and leaves the user's servers and other
// projects' alone.
func TestSetupProjectMovesLocal(t *testing.T) {
	home, project := clientFixtures(t)
	env := fakeEnv(t, map[string]string{"HOME": home})
	claude := filepath.Join(home, ".claude.json")
	loc := cue.Locations{Home: home, Project: project}
	before, _ := os.ReadFile(claude)
	r := runCLI(t, env, "setup", "claude-code", "--scope", "project", "--move", "--yes", "--home", home, "--project", project)
	if r.code != exitOK || !strings.Contains(r.stdout, "Wrote 2 servers to "+loc.Path(cue.LayerProject)) ||
		!strings.Contains(r.stdout, "the file as it was before voltmcp first changed it is in "+loc.BackupFile(claude)) {
		t.Fatalf("setup:\n%s", r)
	}
	data, _ := os.ReadFile(claude)
	if strings.Contains(string(data), `"local-db"`) || !strings.Contains(string(data), `"github"`) || !strings.Contains(string(data), `"other-db"`) ||
		strings.Contains(string(data), `"voltmcp"`) {
		t.Errorf("~/.claude.json:\n%s", data)
	}
	if b, _ := os.ReadFile(loc.BackupFile(claude)); string(b) != string(before) {
		t.Errorf("backup = %s", b)
	}
	if data, _ := os.ReadFile(loc.Path(cue.LayerProject)); !strings.Contains(string(data), `"local-db"`) || !strings.Contains(string(data), `"shared"`) {
		t.Errorf(".volt/mcp.json:\n%s", data)
	}
	if _, err := os.Stat(loc.Path(cue.LayerUser)); err == nil {
		t.Error("the user file was written")
	}
	noLitter(t, home, project)
}

// TestSetupProjectFileMove: setup cursor|vscode --scope project --move
// moves the servers of the client's file of the project to the project's
// .volt/mcp.json, as import writes them, and says so in its plan.
func TestSetupProjectFileMove(t *testing.T) {
	_, home, project := projectClientFixtures(t)
	env := fakeEnv(t, map[string]string{"HOME": home})
	cli := func(args ...string) cliResult {
		return runCLI(t, env, append(args, "--home", home, "--project", project)...)
	}
	loc := cue.Locations{Home: home, Project: project}
	projectFile := loc.Path(cue.LayerProject)
	for _, tc := range []struct{ client, label, file, server string }{
		{"cursor", "Cursor (project)", filepath.Join(project, ".cursor", "mcp.json"), "cursor-proj"},
		{"vscode", "VS Code (project)", filepath.Join(project, ".vscode", "mcp.json"), "vs-proj"},
	} {
		r := cli("setup", tc.client, "--scope", "project")
		if r.code != exitOK || !strings.Contains(r.stdout, tc.label+" would still start 1 server of its own, besides voltmcp: "+tc.server+". "+
			"'--move' imports them into "+projectFile+" (for this project alone) and removes them from "+tc.file+".") {
			t.Errorf("setup %s --scope project:\n%s", tc.client, r)
		}
		r = cli("setup", tc.client, "--scope", "project", "--move", "--yes")
		noCanary(t, "setup --move's output", r.stdout+r.stderr)
		if r.code != exitOK || !strings.Contains(r.stdout, "they go to "+projectFile+", never to the user file") ||
			!strings.Contains(r.stdout, "Wrote 1 server to "+projectFile+".") || !strings.Contains(r.stdout, "voltmcp trust") {
			t.Fatalf("setup %s --scope project --move:\n%s", tc.client, r)
		}
		if data, _ := os.ReadFile(tc.file); strings.Contains(string(data), tc.server) || !strings.Contains(string(data), `"voltmcp"`) {
			t.Errorf("%s after --move:\n%s", tc.file, data)
		}
		if data, _ := os.ReadFile(projectFile); !strings.Contains(string(data), `"`+tc.server+`"`) {
			t.Errorf("%s after setup %s --move:\n%s", projectFile, tc.client, data)
		}
	}
	if _, err := os.Stat(loc.Path(cue.LayerUser)); err == nil {
		t.Error("the user file was written")
	}
	noLitter(t, home, project)
}

// noLitter fails the test for a lock file or a backup that voltmcp left
// in the project or in home outside its agent directory.
func noLitter(t *testing.T, home, project string) {
	t.Helper()
	agent := filepath.Join(home, ".volt", "agent")
	for _, root := range []string{home, project} {
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if p == agent {
				return filepath.SkipDir
			}
			if name := d.Name(); strings.HasSuffix(name, ".lock") || strings.Contains(name, "voltmcp-backup") || strings.HasSuffix(name, ".tmp") {
				t.Errorf("voltmcp left %s", p)
			}
			return nil
		})
	}
}

// TestEmptyStatesSayWhatToDo: import with nothing to read names the
// files it looked in and voltmcp add; servers with none configured
// names import and add.
func TestEmptyStatesSayWhatToDo(t *testing.T) {
	t.Parallel()
	home, project := t.TempDir(), t.TempDir()
	env := fakeEnv(t, map[string]string{"HOME": home})
	r := runCLI(t, env, "import", "--home", home, "--project", project)
	if r.code != exitOK || !strings.Contains(r.stdout, "Nothing to import.") || !strings.Contains(r.stdout, filepath.Join(home, ".cursor", "mcp.json")) || !strings.Contains(r.stdout, "voltmcp add NAME") {
		t.Errorf("import with no client config:\n%s", r)
	}
	r = runCLI(t, env, "servers", "--home", home, "--project", project)
	if r.code != exitOK || !strings.Contains(r.stdout, "voltmcp import") || !strings.Contains(r.stdout, "voltmcp add") {
		t.Errorf("servers with none configured:\n%s", r)
	}
}

// TestSetupWarnsWhenVoltmcpIsNotOnPath: setup names --command when the
// program the client would start is not on PATH, and not when it is an
// absolute path.
func TestSetupWarnsWhenVoltmcpIsNotOnPath(t *testing.T) {
	t.Parallel()
	home, project := t.TempDir(), t.TempDir()
	env := fakeEnv(t, map[string]string{"HOME": home, "PATH": t.TempDir()})
	r := runCLI(t, env, "setup", "cursor", "--home", home, "--project", project)
	if r.code != exitOK || !strings.Contains(r.stderr, `"voltmcp" is not on PATH`) || !strings.Contains(r.stderr, "--command ") {
		t.Errorf("setup without voltmcp on PATH:\n%s", r)
	}
	bin := filepath.Join(t.TempDir(), "voltmcp")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, env, "setup", "cursor", "--command", bin, "--home", home, "--project", project)
	if r.code != exitOK || strings.Contains(r.stderr, "not on PATH") {
		t.Errorf("setup --command ABS:\n%s", r)
	}
}
