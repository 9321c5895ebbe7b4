package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/daemon"
	"github.com/voltmcp/voltmcp/engine"
	"github.com/voltmcp/voltmcp/rpc"
	"github.com/voltmcp/voltmcp/ui"
)

func uiCommand() *command {
	c := &command{
		name:    "ui",
		summary: "the full-screen MCP server manager: list, enable, connect, refresh and inspect servers live",
		usage: `Usage: voltmcp ui [--project DIR]

A full-screen manager of the MCP servers of one workspace (--project's,
the working directory by default): every server with its scope, enabled,
transport, lifecycle, status, auth state, tool counts (cached/live/
enabled), resources, prompts, last error, last connected time and recent
calls. The list follows the event stream: a server that connects, fails or
is called shows at once, with nothing polled.

Keys (? shows them all): ↑/↓ or k/j move, s sorts by the next column (S
reverses), / filters by typing (enter keeps, esc clears), e enables or
disables the selected server (written to voltmcp's own overlay, as
'voltmcp enable' and 'disable' do), c connects or disconnects it, r
refreshes its tools, enter shows its tools with a search box and each
tool's describe (bounded schema, risk and why, pin state), esc goes back,
q quits. The footer is the line 'voltmcp status --line' prints.

It talks to the user's daemon when one runs ('voltmcp daemon'), so it sees
the servers and calls of every agent attached to it; else it runs an
engine of its own for as long as it runs, over the same RPC. Every string
a server gave is cleaned before it is drawn: no escape sequence, bidi
override or invisible character of a server reaches the terminal.
NO_COLOR or TERM=dumb draws without colour; it fits 80x24 and follows a
resize. docs/ui.md describes each column and key.

Examples:
  voltmcp ui
  voltmcp ui --project ~/src/app`,
	}
	c.run = func(ctx context.Context, e *env, args []string) error {
		if len(args) > 0 {
			return usageErrorf("ui takes no arguments")
		}
		if !isTerminal(e.stdout) {
			return usageErrorf("ui draws a full screen and needs a terminal; 'voltmcp servers' or 'voltmcp status --line' print to a pipe")
		}
		events := ui.NewEvents()
		conn, err := openRPC(ctx, e, false, events.Notify)
		if err != nil {
			return err
		}
		defer conn.Close()
		workspace, _ := workspaceOf(e)
		opts := ui.Options{Client: conn.client, Events: events, Via: conn.via, Workspace: workspace,
			Plain: e.getenv("NO_COLOR") != "" || e.getenv("TERM") == "dumb"}
		if err := ui.Run(ctx, opts, e.stdin, e.stdout, os.Environ()); err != nil {
			return failuref("ui: %w", err)
		}
		return nil
	}
	return c
}

// isTerminal reports whether w is a character device, as a terminal is.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// rpcConn is a management RPC connection for a face of the CLI (ui,
// status --line): to the user's daemon, or to an engine of this process
// served by rpc over a pipe. Both are the same wire and the same
// client, so a face has one code path.
type rpcConn struct {
	client *daemon.Client
	// via is "daemon" or "own engine".
	via   string
	close func()
}

// Close ends the connection, and the own engine with it.
func (c *rpcConn) Close() { c.close() }

// openRPC connects to the daemon of the invocation's agent directory,
// attached to its workspace, when one runs; else it starts an engine in
// this process (passive: one that starts no server by itself) and
// serves the RPC to a client over a pipe. notify gets each notification.
func openRPC(ctx context.Context, e *env, passive bool, notify func(string, json.RawMessage)) (*rpcConn, error) {
	if daemon.Running(e.g.agentDir) {
		project, err := workspaceOf(e)
		if err != nil {
			return nil, usageErrorf("%v", err)
		}
		client, _, err := daemon.Attach(ctx, e.g.agentDir, project, notify)
		if err == nil {
			return &rpcConn{client: client, via: "daemon", close: func() { client.Close() }}, nil
		}
		if !errors.Is(err, daemon.ErrNotRunning) {
			return nil, failuref("%w", err)
		}
		// It stopped between the look and the dial: run our own.
	}
	auth := rpc.NewAuth()
	opts := e.engineOptions(cue.SurfaceRPC, slog.New(slog.NewTextHandler(io.Discard, nil)), "")
	opts.Authorize, opts.DeviceAuthorize = auth.Authorize, auth.DeviceAuthorize
	opts.Passive = passive
	eng, err := engine.New(ctx, &opts)
	if err != nil {
		return nil, failuref("%w", err)
	}
	srvSide, cliSide := net.Pipe()
	sctx, stop := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = rpc.NewServer(eng, &rpc.Options{Auth: auth}).Serve(sctx, srvSide)
	}()
	client := daemon.NewClient(cliSide, notify)
	return &rpcConn{client: client, via: "own engine", close: func() {
		client.Close()
		stop()
		<-served
		eng.Close()
	}}, nil
}
