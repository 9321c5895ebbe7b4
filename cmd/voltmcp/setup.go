package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/voltmcp/voltmcp/cue"
)

// backupSuffix names the copy setup keeps of a client's file before it
// first changes it.
const backupSuffix = ".voltmcp-backup"

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
a copy beside it (FILE` + backupSuffix + `); the edit is atomic and locked.

The client still starts the servers its file lists itself, besides voltmcp.
setup says which; with --move it imports them into voltmcp (as 'voltmcp
import' does: the user file, or with --scope project the project's
.volt/mcp.json; literal secrets become ${env:NAME} references unless
--keep-secrets) and removes them from the client's file. Nothing is changed
without --yes: without it, setup prints the plan.

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
		cmdJSON, _ := json.Marshal(program)
		def := []byte(`{"type": "stdio", "command": ` + string(cmdJSON) + `, "args": ["serve"]}`)
		p, err := planImport(ctx, e, []clientFile{target}, layer, &importOptions{keepSecrets: keepSecrets, moving: target.path})
		if err != nil {
			return err
		}
		if p.errors {
			p.print(e.stdout, e.stderr)
			return failuref("%s has errors; fix them first, nothing was changed", target.path)
		}
		cf, err := cue.ReadClientFile(target.path, &target.opts)
		if err != nil {
			return failuref("%w", err)
		}
		var others []string
		hasGateway := false
		for _, s := range cf.Servers {
			if s.Gateway {
				hasGateway = true
			} else {
				others = append(others, s.Key)
			}
		}
		verb := "Would add"
		if yes {
			verb = "Adding"
		}
		if hasGateway {
			fmt.Fprintf(e.stdout, "%s already runs voltmcp serve from %s.\n", target.label, target.path)
		} else {
			fmt.Fprintf(e.stdout, "%s %q (%s serve) to %s (%s), keeping the rest of the file; the file as it was is kept in %s.\n",
				verb, gatewayKey, program, target.path, target.serversMap(), target.path+backupSuffix)
		}
		if len(others) > 0 && !move {
			fmt.Fprintf(e.stdout, "%s would still start %d %s of its own, besides voltmcp: %s. "+
				"'--move' imports them into voltmcp and removes them from %s.\n",
				target.label, len(others), plural(len(others), "server"), strings.Join(cleanAll(others), ", "), target.path)
		}
		edit := &cue.ClientEdit{Map: target.serversMap(), Backup: target.path + backupSuffix}
		if !hasGateway {
			edit.Set = []cue.NewServer{{Key: gatewayKey, Def: def}}
		}
		if move && len(others) > 0 {
			p.print(e.stdout, e.stderr)
			fmt.Fprintf(e.stdout, "Moving %d %s into %s and every server voltmcp has out of %s.\n", len(p.write), plural(len(p.write), "server"), p.target, target.path)
			for _, s := range cf.Servers {
				if !s.Gateway && !s.Invalid {
					edit.Remove = append(edit.Remove, s.Key)
				}
			}
		}
		if len(edit.Set) == 0 && len(edit.Remove) == 0 {
			return nil
		}
		if !yes {
			fmt.Fprintln(e.stdout, "Nothing changed. Run again with --yes to do it.")
			return nil
		}
		if move && len(p.write) > 0 {
			if err := p.apply(ctx, e); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "Wrote %d %s to %s.\n", len(p.write), plural(len(p.write), "server"), p.target)
		}
		if err := cue.EditClientFile(ctx, target.path, edit); err != nil {
			return failuref("%w", err)
		}
		fmt.Fprintf(e.stdout, "Updated %s. Restart %s to use voltmcp.\n", target.path, clientName(args[0]))
		if target.project || layer.IsProject() {
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

func clientName(client string) string {
	switch client {
	case clientClaudeCode:
		return "Claude Code"
	case clientCursor:
		return "Cursor"
	}
	return "VS Code"
}
