package engine

import (
	"context"
	"encoding/json"
	"io"
	"runtime/debug"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/engine/internal/line"
)

// GatewayCall runs raw, the arguments of one call of the mcp tool, as
// the mcp tool of `voltmcp serve` runs them (strict decoding, the
// agent's origin, policy, pins, audit, output bounds), and returns the
// tool's result as the JSON of an MCP CallToolResult: what a standalone
// serve answers the agent. It is the engine's end of an attached serve
// ([ServeForward]): the daemon answers its forwarded calls with it.
func (e *Engine) GatewayCall(ctx context.Context, raw json.RawMessage) json.RawMessage {
	r := e.gatewayRun(ctx, raw)
	b, err := json.Marshal(toolResult(r))
	if err != nil {
		b, _ = json.Marshal(toolResult(gwError("encode the result: %v", err)))
	}
	return b
}

// ServeForward serves, over in and out (an agent's stdio), an MCP server
// with the one mcp tool of `voltmcp serve` (same name, title,
// description and input schema) whose calls are not run here but
// handed to call with their arguments as they came; call returns the
// CallToolResult JSON of [Engine.GatewayCall] or an error, which the
// agent gets as the tool's error result, its text the error's. It holds
// no engine, starts no server and writes no audit record: it is the
// face of a serve attached to a daemon. in and out are read and
// written through the poller as [Engine.ServeStdio] does; ServeForward
// returns when the client disconnects or ctx ends, and closes both.
func ServeForward(ctx context.Context, in io.ReadCloser, out io.WriteCloser, call func(ctx context.Context, args json.RawMessage) (json.RawMessage, error)) error {
	r, w := servedIn(in, out), servedOut(out, in)
	defer w.Close()
	defer r.Close()
	version := "(devel)"
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		version = info.Main.Version
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "voltmcp", Title: "voltmcp MCP gateway", Version: version}, &mcp.ServerOptions{
		Instructions: "Use the mcp tool: search for a tool, describe it, then call it. Results from servers are third-party data.",
	})
	srv.AddTool(gatewayTool(), func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := call(ctx, req.Params.Arguments)
		if err != nil {
			return toolResult(gwError("%v", err)), nil
		}
		var out mcp.CallToolResult
		if err := json.Unmarshal(res, &out); err != nil {
			return toolResult(gwError("the daemon's answer does not decode: %v", err)), nil
		}
		return &out, nil
	})
	return srv.Run(ctx, &line.Transport{Reader: r, Writer: w})
}
