package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/voltmcp/voltmcp/cue"
)

// gatewayKey is the name of the entry setup writes.
const gatewayKey = "voltmcp"

var setupClients = []string{clientClaudeCode, clientCursor, clientVSCode}

// setupTarget returns the client file setup edits.
func setupTarget(g globals, client, scope string) clientFile {
	for _, f := range clientFiles(g) {
		if f.client != client || len(f.under) > 0 || f.project != (scope == "project") {
			continue
		}
		return f
	}
	panic("setup: no file for " + client + " " + scope) // setupClients all have both
}

// setupLocal returns the client's entry of this project in a user file
// (Claude Code's projects entry of ~/.claude.json), whose servers the
// client starts in this project whatever setup's scope, or false.
func setupLocal(g globals, client string) (clientFile, bool) {
	for _, f := range clientFiles(g) {
		if f.client == client && f.local {
			return f, true
		}
	}
	return clientFile{}, false
}

func setupCommand() *command {
	var scope, program string
	var yes, move, keepSecrets bool
	c := &command{
		name:    "setup",
		summary: "point Claude Code, Cursor or VS Code at voltmcp serve",
		usage: `Usage: voltmcp setup claude-code|cursor|vscode [--scope user|project] [--yes] [--move]

Adds an entry "voltmcp" that runs 'voltmcp serve' to the client's MCP file:

  claude-code  ~/.claude.json (mcpServers); --scope project: .mcp.json
  cursor       ~/.cursor/mcp.json; --scope project: .cursor/mcp.json
  vscode       VS Code's user mcp.json (servers, type stdio); --scope project: .vscode/mcp.json

Everything else in the file is kept, in its order. The first change saves
a copy of the file in <home>/.volt/agent/backups/ (setup prints where); the
edit is atomic, and its lock is kept there too, so nothing is left beside
the file.

The client still starts the servers its file lists itself, besides voltmcp,
and Claude Code those of this project's entry in ~/.claude.json
(projects["<project>"].mcpServers). setup says which; with --move it
imports them into voltmcp (as 'voltmcp import' does: the user file, or with
--scope project the project's .volt/mcp.json, and the project entry's
always the project's .volt/mcp.json; literal secrets become ${env:NAME}
references unless --keep-secrets) and removes them from the client's file.
Nothing is changed without --yes: without it, setup prints the plan.

Examples:
  voltmcp setup claude-code
  voltmcp setup claude-code --scope project --move --yes
  voltmcp setup vscode --scope project --yes`,
		flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&scope, "scope", "user", "edit the client's user file (user) or the project's (project)")
			fs.BoolVar(&yes, "yes", false, "make the change (without it, print the plan)")
			fs.BoolVar(&move, "move", false, "also move the client's other servers into voltmcp")
			fs.BoolVar(&keepSecrets, "keep-secrets", false, "with --move, copy literal secrets as written instead of ${env:NAME} references")
			fs.StringVar(&program, "command", "voltmcp", "the voltmcp program the client runs")
		},
	}
	c.run = func(ctx context.Context, e *env, args []string) error {
		if len(args) != 1 {
			return usageErrorf("setup takes one client: %s", strings.Join(setupClients, ", "))
		}
		if err := checkClients(args, setupClients); err != nil {
			return err
		}
		layer, err := scopeLayer(scope)
		if err != nil {
			return err
		}
		target := setupTarget(e.g, args[0], scope)
		files := []clientFile{target}
		if local, ok := setupLocal(e.g, args[0]); ok {
			files = append(files, local)
		}
		loc := cue.Locations{Home: e.g.home, Project: e.g.project}
		// The client starts program by name through its own PATH: a name
		// that is not on this PATH would most likely fail there too.
		if !strings.ContainsRune(program, filepath.Separator) {
			if _, err := exec.LookPath(program); err != nil {
				hint := "--command /path/to/voltmcp names it"
				if self, err := os.Executable(); err == nil {
					hint = "--command " + shellQuote(self) + " names this one"
				}
				fmt.Fprintf(e.stderr, "warning: %q is not on PATH, so %s would likely fail to start it; install voltmcp on PATH, or %s\n", program, clientName(args[0]), hint)
			}
		}
		cmdJSON, _ := json.Marshal(program)
		def := []byte(`{"type": "stdio", "command": ` + string(cmdJSON) + `, "args": ["serve"]}`)
		p, err := planImport(ctx, e, files, layer, &importOptions{keepSecrets: keepSecrets, moving: target.path})
		if err != nil {
			return err
		}
		if p.errors {
			p.print(e.stdout, e.stderr)
			return failuref("%s has errors; fix them first, nothing was changed", target.path)
		}
		verb := "Would add"
		if yes {
			verb = "Adding"
		}
		// One edit per file read: the client's file, and the project's
		// entry in its user file, whose servers it starts here too.
		type fileEdit struct {
			f      clientFile
			edit   *cue.ClientEdit
			others []string
		}
		var edits []fileEdit
		moving := 0
		for _, f := range files {
			opts := f.opts
			opts.Under = f.under
			cf, err := cue.ReadClientFile(f.path, &opts)
			if err != nil {
				return failuref("%w", err)
			}
			fe := fileEdit{f: f, edit: &cue.ClientEdit{Under: f.under, Map: f.serversMap(), Backup: loc.BackupFile(f.path)}}
			hasGateway := false
			for _, s := range cf.Servers {
				if s.Gateway {
					hasGateway = true
				} else {
					fe.others = append(fe.others, s.Key)
				}
			}
			if !f.local {
				if hasGateway {
					fmt.Fprintf(e.stdout, "%s already runs voltmcp serve from %s.\n", f.label, f.path)
				} else {
					fmt.Fprintf(e.stdout, "%s %q (%s serve) to %s (%s), keeping the rest of the file; the file as it was is kept in %s.\n",
						verb, gatewayKey, program, f.path, f.serversMap(), fe.edit.Backup)
					fe.edit.Set = []cue.NewServer{{Key: gatewayKey, Def: def}}
				}
			}
			if len(fe.others) > 0 && !move {
				into := "voltmcp"
				if f.project {
					into = loc.Path(f.destLayer(layer)) + " (for this project alone)"
				}
				fmt.Fprintf(e.stdout, "%s would still start %d %s of its own, besides voltmcp: %s. "+
					"'--move' imports them into %s and removes them from %s.\n",
					f.label, len(fe.others), plural(len(fe.others), "server"), strings.Join(cleanAll(fe.others), ", "), clean(into), clean(f.where()))
			}
			if move && len(fe.others) > 0 {
				for _, s := range cf.Servers {
					if !s.Gateway && !s.Invalid {
						fe.edit.Remove = append(fe.edit.Remove, s.Key)
					}
				}
				moving++
			}
			edits = append(edits, fe)
		}
		if moving > 0 {
			p.print(e.stdout, e.stderr)
			if p.count() > 0 {
				fmt.Fprintf(e.stdout, "Copying %s.\n", p.describe())
			} else {
				fmt.Fprintln(e.stdout, "Nothing to copy: voltmcp has a server of each name already (listed above).")
			}
			for _, fe := range edits {
				if len(fe.edit.Remove) > 0 {
					fmt.Fprintf(e.stdout, "Removing from %s: %s (voltmcp runs them from now on; the file as it was is kept in %s).\n",
						clean(fe.f.where()), strings.Join(cleanAll(fe.edit.Remove), ", "), fe.edit.Backup)
				}
			}
		}
		changes := false
		for _, fe := range edits {
			changes = changes || len(fe.edit.Set) > 0 || len(fe.edit.Remove) > 0
		}
		if !changes {
			return nil
		}
		if !yes {
			fmt.Fprintln(e.stdout, "Nothing changed. Run again with --yes to do it.")
			return nil
		}
		if move && p.count() > 0 {
			if err := p.apply(ctx, e); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "Wrote %s.\n", p.describe())
		}
		for _, fe := range edits {
			if len(fe.edit.Set) == 0 && len(fe.edit.Remove) == 0 {
				continue
			}
			if err := cue.EditClientFile(ctx, loc, fe.f.path, fe.edit); err != nil {
				return failuref("%w", err)
			}
			fmt.Fprintf(e.stdout, "Updated %s; the file as it was before voltmcp first changed it is in %s.\n", fe.f.where(), fe.edit.Backup)
		}
		fmt.Fprintf(e.stdout, "Restart %s to use voltmcp.\n", clientName(args[0]))
		if target.project || layer.IsProject() || p.writesProject() {
			fmt.Fprintln(e.stdout, "The project's MCP files changed: run 'voltmcp trust' to trust them as they are now.")
		}
		return nil
	}
	return c
}

func cleanAll(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = clean(s)
	}
	return out
}
