package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/engine"
)

// openEngine builds a passive Engine for one CLI command: it loads the
// config and the metadata cache but starts no server by itself. Each
// tweak adjusts the options first (voltmcp auth gives Authorize).
func openEngine(ctx context.Context, e *env, tweak ...func(*engine.Options)) (*engine.Engine, error) {
	opts := &engine.Options{
		Home: e.g.home, Project: e.g.project, AgentDir: e.g.agentDir, PolicyDirs: e.g.policies, PluginCacheDir: e.g.pluginCache,
		Surface: cue.SurfaceInteractive, Approve: e.g.approve, NoApprove: e.g.noApprove,
		LookupEnv: func(k string) (string, bool) {
			v := e.getenv(k)
			return v, v != ""
		},
		Passive:       true,
		GatewayTokens: gatewayTokens(e.g.agentDir, ""),
	}
	for _, t := range tweak {
		t(opts)
	}
	eng, err := engine.New(ctx, opts)
	if err != nil {
		return nil, failuref("%w", err)
	}
	return eng, nil
}

// listCommand is servers under the name the gateway's list_servers action
// suggests.
func listCommand() *command {
	c := serversCommand()
	c.name, c.summary = "list", "list the configured MCP servers (same as servers)"
	c.usage = strings.Replace(c.usage, "voltmcp servers", "voltmcp list", -1)
	return c
}

func serversCommand() *command {
	var asJSON bool
	c := &command{
		name:    "servers",
		summary: "list the configured MCP servers, their status and cached tools",
		usage: `Usage: voltmcp servers [--json]

Lists every server of the effective config with its status, transport,
lifecycle, the number of tools in the metadata cache, and the layer that
defines it. It starts nothing: a server never connected shows as cold, with
the tools its last discovery cached (see 'voltmcp refresh').

Servers that do not run are listed with the reason and the fix: those of
an untrusted project have status untrusted (run 'voltmcp trust'); a
disabled server says where "enabled": false comes from, an invalid one its
first error (file:line:col), and one whose config reads an environment
variable that is not set names the variable (never its value) and the
field, with the fix (export NAME=…). A config file that does not read or parse is
named with its file:line:col under the table (on stderr with --json), since
the servers it defines cannot be listed.

Examples:
  voltmcp servers
  voltmcp servers --json --approve | jq '.[] | select(.status == "error")'`,
		flags: func(fs *pflag.FlagSet) {
			fs.BoolVar(&asJSON, "json", false, "print JSON")
		},
	}
	c.run = func(ctx context.Context, e *env, args []string) error {
		if len(args) > 0 {
			return usageErrorf("servers takes no arguments")
		}
		eng, err := openEngine(ctx, e)
		if err != nil {
			return err
		}
		defer eng.Close()
		list := eng.Servers()
		if off := eng.TurnedOff(); off != "" {
			if asJSON {
				// On stderr, so the output stays the list.
				fmt.Fprintf(e.stderr, "voltmcp servers: %s\n", clean(off))
			} else {
				fmt.Fprintf(e.stdout, "%s\n\n", clean(off))
			}
		}
		notes := eng.LoadNotes()
		if asJSON {
			// On stderr, so the output stays the list.
			for _, n := range notes {
				fmt.Fprintf(e.stderr, "voltmcp servers: %s\n", clean(n))
			}
			return writeJSONValue(e.stdout, list)
		}
		if err := writeServerTable(e.stdout, list); err != nil {
			return err
		}
		return writeServerNotes(e.stdout, list, notes)
	}
	return c
}

// writeServerNotes writes, under the table, what of the config did not
// load (engine.LoadNotes), then why each server that does not run does
// not, with the fix.
func writeServerNotes(w io.Writer, list []engine.ServerSummary, notes []string) error {
	first := true
	line := func(format string, args ...any) {
		if first {
			fmt.Fprintln(w)
			first = false
		}
		fmt.Fprintf(w, format, args...)
	}
	for _, n := range notes {
		line("%s\n", clean(n))
	}
	for _, s := range list {
		if s.Reason != "" && s.Status != engine.StatusUntrusted { // the untrusted ones are in the project's note
			line("%s: %s; %s\n", clean(s.ID), clean(s.Reason), clean(s.Fix))
		}
	}
	return nil
}

func writeJSONValue(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func writeServerTable(w io.Writer, list []engine.ServerSummary) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tSTATUS\tTRANSPORT\tLIFECYCLE\tTOOLS\tSOURCE")
	for _, s := range list {
		tools := fmt.Sprint(s.ToolCounts.Cached)
		if s.MetadataFetchedAt == nil {
			tools = "-"
		} else if s.MetadataStale {
			tools += " (stale)"
		}
		transport, lifecycle := clean(s.Transport), s.Lifecycle
		if s.Status == engine.StatusUntrusted {
			transport, lifecycle = "-", "-" // not loaded: what it runs is not shown
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", clean(s.ID), s.Status, transport, lifecycle, tools, clean(s.SourceLabel))
	}
	if len(list) == 0 {
		fmt.Fprintln(tw, "(no servers configured: 'voltmcp import' brings in those of Claude Code, Cursor, VS Code and others; 'voltmcp add' adds one)")
	}
	return tw.Flush()
}

// serverAction builds the commands that act on one server.
func serverAction(name, summary, usage string, act func(ctx context.Context, eng *engine.Engine, id string) error) *command {
	c := &command{name: name, summary: summary, usage: usage}
	c.run = func(ctx context.Context, e *env, args []string) error {
		if len(args) != 1 {
			return usageErrorf("%s takes one server id", name)
		}
		eng, err := openEngine(ctx, e)
		if err != nil {
			return err
		}
		defer eng.Close()
		if err := act(ctx, eng, args[0]); err != nil {
			if strings.Contains(err.Error(), "unknown server") {
				return usageErrorf("%w", err)
			}
			return failuref("%w", err)
		}
		s, err := eng.Server(args[0])
		if err != nil {
			return failuref("%w", err)
		}
		return writeServerTable(e.stdout, []engine.ServerSummary{s})
	}
	return c
}

func refreshCommand() *command {
	c := &command{
		name:    "refresh",
		summary: "connect servers, list their tools and update the cache",
		usage: `Usage: voltmcp refresh [SERVER...]

Connects each server (starting its process for a stdio server), lists its
tools, resources and prompts, writes them to the metadata cache, and
disconnects. Later commands and 'voltmcp serve' then know their tools
without starting them. Prints one line of progress per server: its tools,
resources and prompts and how long it took. With no SERVER, refreshes every
enabled server; one failing server does not stop the others.

Examples:
  voltmcp refresh github --approve
  voltmcp refresh`,
	}
	c.run = func(ctx context.Context, e *env, args []string) error {
		eng, err := openEngine(ctx, e)
		if err != nil {
			return err
		}
		defer eng.Close()
		ids := args
		if len(ids) == 0 {
			for _, s := range eng.Servers() {
				if s.Enabled {
					ids = append(ids, s.ID)
				}
			}
		}
		failed := 0
		for i, id := range ids {
			start := time.Now()
			err := eng.Refresh(ctx, id)
			// Each server is done with once listed: stop it before the next.
			_ = eng.Disconnect(ctx, id)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err != nil && len(args) == 1 {
				// One server named: its error is the command's.
				if errors.Is(err, engine.ErrUnknownServer) {
					return usageErrorf("%w", err)
				}
				return failuref("%w", err)
			}
			s, _ := eng.Server(id)
			line := fmt.Sprintf("[%d/%d] %s: %d tools, %d resources, %d prompts (%s)", i+1, len(ids), id,
				s.ToolCounts.Cached, s.Resources, s.Prompts, time.Since(start).Round(time.Millisecond))
			if err != nil {
				failed++
				line = fmt.Sprintf("[%d/%d] %s: failed: %s", i+1, len(ids), id, clean(err.Error()))
			}
			fmt.Fprintln(e.stdout, line)
		}
		if failed > 0 {
			return &exitError{exitFailure, fmt.Errorf("%d of %d servers failed to refresh", failed, len(ids))}
		}
		return nil
	}
	return c
}

func enableCommand() *command {
	return serverAction("enable", "enable a server (persisted in voltmcp's own config file)",
		`Usage: voltmcp enable SERVER

Records "enabled": true for the server in the voltmcp-owned file of the
scope that defines it (<home>/.volt/agent/mcp.json for user servers,
<project>/.volt/mcp.json for project servers), atomically, keeping the rest
of the file. A trusted project stays trusted: when the file was as its
trust record says, the record follows the content written (an edit by
anything else still needs 'voltmcp trust').

Example:
  voltmcp enable github`,
		func(ctx context.Context, eng *engine.Engine, id string) error { return eng.SetEnabled(ctx, id, true) })
}

func disableCommand() *command {
	return serverAction("disable", "disable a server (persisted in voltmcp's own config file)",
		`Usage: voltmcp disable SERVER

Records "enabled": false for the server in the voltmcp-owned file of the
scope that defines it, atomically. The shared file (.mcp.json, or
~/.config/mcp/mcp.json) is left as it is, so other tools still see the
server. A trusted project stays trusted, as with 'voltmcp enable'.

Example:
  voltmcp disable github`,
		func(ctx context.Context, eng *engine.Engine, id string) error { return eng.SetEnabled(ctx, id, false) })
}
