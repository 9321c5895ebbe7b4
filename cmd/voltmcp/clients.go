package main

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/voltmcp/voltmcp/cue"
)

// The MCP clients whose config voltmcp reads (import) and edits (setup).
const (
	clientClaudeCode    = "claude-code"
	clientClaudeDesktop = "claude-desktop"
	clientCursor        = "cursor"
	clientVSCode        = "vscode"
	clientWindsurf      = "windsurf"
	clientCodex         = "codex"
)

var clientNames = []string{clientClaudeCode, clientClaudeDesktop, clientCursor, clientVSCode, clientWindsurf, clientCodex}

// clientFile is one MCP config file of a client: where it is and how its
// servers are written.
type clientFile struct {
	client string // one of clientNames
	label  string // for people: "Claude Code (user)"
	path   string
	under  []string // object keys from the top to the object that holds the map
	opts   cue.ClientFileOptions
	// project is true for a file of the project (or a per-project entry):
	// the client starts its servers in this project alone, so import
	// writes them to the project's voltmcp file whatever --scope says
	// (see destLayer).
	project bool
	// local is true for Claude Code's entry of this project in
	// ~/.claude.json, a project entry inside a user file, which setup of
	// that user file edits too.
	local bool
	// projects is true for ~/.claude.json read at its top: its entries of
	// other projects are servers of those projects alone, which import
	// lists and skips.
	projects bool
	// layer is set when voltmcp reads the file itself as one of its
	// layers (.mcp.json is the project-shared layer).
	layer cue.Layer
}

// serversMap is the key of the file's servers map.
func (f clientFile) serversMap() string {
	if f.opts.Dialect == cue.DialectVSCode {
		return "servers"
	}
	return "mcpServers"
}

// destLayer is the voltmcp-owned layer import writes the file's servers
// to: the project's for a file of the project, whose servers are the
// project's alone and would otherwise start in every project; scope (what
// --scope names) for any other file.
func (f clientFile) destLayer(scope cue.Layer) cue.Layer {
	if f.project {
		return cue.LayerProject
	}
	return scope
}

// where names the file, and the entry inside it when there is one.
func (f clientFile) where() string {
	if len(f.under) > 0 {
		return fmt.Sprintf("%s (%s)", f.path, strings.Join(f.under, " → "))
	}
	return f.path
}

// vscodeUserDir is VS Code's user settings directory.
func vscodeUserDir(home string) string {
	if runtime.GOOS == "darwin" {
		return filepath.Join(home, "Library", "Application Support", "Code", "User")
	}
	return filepath.Join(home, ".config", "Code", "User")
}

// clientFiles lists the MCP config files of every client, under home and
// the project, in the order import reads them.
func clientFiles(g globals) []clientFile {
	// Paths are those the loader uses (cue.Locations.Path), so a file
	// voltmcp reads itself compares equal; the per-project entry of
	// ~/.claude.json is keyed by the absolute path.
	home, project := g.home, g.project
	abs, err := filepath.Abs(g.project)
	if err != nil {
		abs = g.project
	}
	claude := cue.ClientFileOptions{Dialect: cue.DialectClaude}
	vscode := cue.ClientFileOptions{Dialect: cue.DialectVSCode}
	desktop := filepath.Join(home, ".config", "Claude", "claude_desktop_config.json")
	if runtime.GOOS == "darwin" {
		desktop = filepath.Join(home, "Library", "Application Support", "Claude", "claude_desktop_config.json")
	}
	return []clientFile{
		{client: clientClaudeCode, label: "Claude Code (user)", path: filepath.Join(home, ".claude.json"), opts: claude, projects: true},
		{client: clientClaudeCode, label: "Claude Code (this project, local)", path: filepath.Join(home, ".claude.json"),
			under: []string{"projects", abs}, opts: claude, project: true, local: true},
		{client: clientClaudeCode, label: "Claude Code (project)", path: filepath.Join(project, ".mcp.json"), opts: claude, project: true,
			layer: cue.LayerProjectShared},
		{client: clientClaudeDesktop, label: "Claude Desktop", path: desktop, opts: claude},
		{client: clientCursor, label: "Cursor (user)", path: filepath.Join(home, ".cursor", "mcp.json"), opts: claude},
		{client: clientCursor, label: "Cursor (project)", path: filepath.Join(project, ".cursor", "mcp.json"), opts: claude, project: true},
		{client: clientVSCode, label: "VS Code (user)", path: filepath.Join(vscodeUserDir(home), "mcp.json"), opts: vscode},
		{client: clientVSCode, label: "VS Code (project)", path: filepath.Join(project, ".vscode", "mcp.json"), opts: vscode, project: true},
		{client: clientWindsurf, label: "Windsurf", path: filepath.Join(home, ".codeium", "windsurf", "mcp_config.json"), opts: claude},
		{client: clientCodex, label: "Codex", path: filepath.Join(home, ".codex", "config.toml"), opts: cue.ClientFileOptions{Codex: true}},
	}
}

// clientName is the client's name for people.
func clientName(client string) string {
	switch client {
	case clientClaudeCode:
		return "Claude Code"
	case clientClaudeDesktop:
		return "Claude Desktop"
	case clientCursor:
		return "Cursor"
	case clientWindsurf:
		return "Windsurf"
	case clientCodex:
		return "Codex"
	}
	return "VS Code"
}

// checkClients checks client names given on the command line.
func checkClients(names []string, allowed []string) error {
	for _, n := range names {
		ok := false
		for _, a := range allowed {
			ok = ok || n == a
		}
		if !ok {
			return usageErrorf("unknown client %q%s; want one of %s", n, suggest(n, allowed), strings.Join(allowed, ", "))
		}
	}
	return nil
}

// scopeLayer maps --scope to the voltmcp-owned layer written.
func scopeLayer(scope string) (cue.Layer, error) {
	switch scope {
	case "", "user":
		return cue.LayerUser, nil
	case "project":
		return cue.LayerProject, nil
	}
	return "", usageErrorf("--scope is user or project, not %q", scope)
}
