package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/voltmcp/voltmcp/ui"
)

// statusLineUsage is the paragraph status's usage gives --line.
const statusLineUsage = `With --line, one line for a shell prompt or a tmux status bar, the
footer of 'voltmcp ui':

  MCP 4 configured / 1 connected / 1 auth

(every configured server, disabled and untrusted ones too; those with a
live session; those waiting for a login). When the user's daemon runs it
asks the daemon's engine of this workspace and starts nothing of its own,
so it is cheap enough to run every few seconds. Without a daemon it loads
the config in an engine of its own that starts no server, and counts from
the config and the metadata cache: connected is then 0. With --json, the
counts as one object: {"configured","connected","auth","errors","untrusted"}.`

// withStatusLine gives the status command its --line flag.
func withStatusLine(c *command) *command {
	var line bool
	var fset *pflag.FlagSet
	flags, run := c.flags, c.run
	c.flags = func(fs *pflag.FlagSet) {
		flags(fs)
		fset = fs
		fs.BoolVar(&line, "line", false, "print one line: MCP N configured / N connected / N auth (with --json, its counts as an object)")
	}
	c.usage = strings.Replace(c.usage, "\n\nExamples:\n", "\n\n"+statusLineUsage+"\n\nExamples:\n", 1) + "\n  voltmcp status --line"
	c.run = func(ctx context.Context, e *env, args []string) error {
		if !line {
			return run(ctx, e, args)
		}
		if len(args) > 0 {
			return usageErrorf("status --line takes no SERVER")
		}
		asJSON := false
		if f := fset.Lookup("json"); f != nil && f.Changed {
			asJSON = f.Value.String() == "true"
		}
		return printStatusLine(ctx, e, asJSON)
	}
	return c
}

// printStatusLine prints ui.StatusLine of the workspace's servers, or
// with asJSON its counts as one object.
func printStatusLine(ctx context.Context, e *env, asJSON bool) error {
	conn, err := openRPC(ctx, e, true, nil)
	if err != nil {
		return err
	}
	defer conn.Close()
	servers, err := ui.ListServers(ctx, conn.client)
	if err != nil {
		return failuref("%w", err)
	}
	if asJSON {
		c := ui.Count(servers)
		return json.NewEncoder(e.stdout).Encode(map[string]int{"configured": c.Configured, "connected": c.Connected,
			"auth": c.Auth, "errors": c.Errors, "untrusted": c.Untrusted})
	}
	fmt.Fprintln(e.stdout, ui.StatusLine(servers))
	return nil
}
