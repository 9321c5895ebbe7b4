package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/engine"
	"github.com/voltmcp/voltmcp/rpc"
)

func rpcCommand() *command {
	c := &command{
		name:    "rpc",
		summary: "serve the management RPC (JSON-RPC 2.0, one object per line) on stdin and stdout, for a host program",
		usage: `Usage: voltmcp rpc

Serves voltmcp's management API to the program that started it: JSON-RPC
2.0 over stdin and stdout, one request object per line, one answer per
line. It is the spec's management plane: list, inspect, enable, connect,
disconnect and refresh servers; list and read their tools, resources and
prompts; call a tool through the gateway (policy, audit, pins and output
bounds apply, as for the mcp tool); list and approve pins; log in to an
OAuth server (start_mcp_server_auth, then poll or complete) and out; and
subscribe to the event stream (mcp_event notifications, schema
mcp_events.v1). get_mcp_capabilities lists the methods; docs/rpc.md
documents each with an example, and docs/rpc.schema.json the answers.

The engine is built as 'voltmcp serve' builds it: the same config layers,
--home, --project, --agent-dir, --approve, --no-approve and --policy.
Requests are answered concurrently (a slow call does not hold back the
others), up to 16 at a time; a line over 4 MiB is refused and discarded
without being held, and the connection goes on. A client that stops
reading for 10 s is dropped. Diagnostics go to stderr; stdout carries
only JSON-RPC. The command ends when stdin ends, and cancels the requests
still in flight then: a host keeps stdin open until it has its answers.

Examples:
  voltmcp rpc
  voltmcp rpc --project ~/src/app

  > {"jsonrpc":"2.0","id":1,"method":"get_mcp_server","params":{"id":"github"}}
  < {"jsonrpc":"2.0","id":1,"result":{"id":"github","status":"ready",...}}`,
	}
	c.run = func(ctx context.Context, e *env, args []string) error {
		if len(args) > 0 {
			return usageErrorf("rpc takes no arguments")
		}
		if mark := engine.UnderGateway(e.getenv); mark != "" {
			return failuref("not serving: this process was started by a voltmcp gateway (%s is set), and a gateway behind itself would start its servers again", engine.RunEnv)
		}
		stderr := &lockedWriter{w: e.stderr}
		log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		auth := rpc.NewAuth()
		opts := e.engineOptions(cue.SurfaceRPC, log, "")
		opts.Authorize, opts.DeviceAuthorize = auth.Authorize, auth.DeviceAuthorize
		eng, err := engine.New(ctx, &opts)
		if err != nil {
			return failuref("%w", err)
		}
		defer eng.Close()
		for _, d := range eng.Diagnostics() {
			if d.Severity != cue.SeverityInfo {
				fmt.Fprintln(stderr, d)
			}
		}
		if off := eng.TurnedOff(); off != "" {
			fmt.Fprintf(stderr, "voltmcp rpc: %s\n", clean(off))
		}
		srv := rpc.NewServer(eng, &rpc.Options{Auth: auth, Logger: log})
		err = srv.Serve(ctx, stdio{r: e.stdin, w: e.stdout})
		if err != nil && ctx.Err() == nil {
			return failuref("rpc: %w", err)
		}
		return nil
	}
	return c
}

// stdio is the rpc command's connection: its stdin and stdout. Close
// closes stdin when it is a file, so that a read blocked on it ends.
type stdio struct {
	r io.Reader
	w io.Writer
}

func (s stdio) Read(p []byte) (int, error)  { return s.r.Read(p) }
func (s stdio) Write(p []byte) (int, error) { return s.w.Write(p) }
func (s stdio) Close() error {
	if f, ok := s.r.(*os.File); ok {
		return f.Close()
	}
	return nil
}
