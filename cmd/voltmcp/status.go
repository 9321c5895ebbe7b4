package main

import (
	"context"
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
the config and the metadata cache: connected is then 0.`

// withStatusLine gives the status command its --line flag.
func withStatusLine(c *command) *command {
	var line bool
	flags, run := c.flags, c.run
	c.flags = func(fs *pflag.FlagSet) {
		flags(fs)
		fs.BoolVar(&line, "line", false, "print one line: MCP N configured / N connected / N auth")
	}
	c.usage = strings.Replace(c.usage, "\n\nExamples:\n", "\n\n"+statusLineUsage+"\n\nExamples:\n", 1) + "\n  voltmcp status --line"
	c.run = func(ctx context.Context, e *env, args []string) error {
		if !line {
			return run(ctx, e, args)
		}
		if len(args) > 0 {
			return usageErrorf("status --line takes no SERVER")
		}
		return printStatusLine(ctx, e)
	}
	return c
}

// printStatusLine prints ui.StatusLine of the workspace's servers.
func printStatusLine(ctx context.Context, e *env) error {
	conn, err := openRPC(ctx, e, true, nil)
	if err != nil {
		return err
	}
	defer conn.Close()
	servers, err := ui.ListServers(ctx, conn.client)
	if err != nil {
		return failuref("%w", err)
	}
	fmt.Fprintln(e.stdout, ui.StatusLine(servers))
	return nil
}
