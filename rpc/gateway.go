package rpc

import (
	"context"
	"encoding/json"
)

// GatewayMethod is the method an attached `voltmcp serve` forwards each
// call of its mcp tool through: its params are the mcp tool's
// arguments verbatim, run by [engine.Engine.GatewayCall] as a
// standalone serve runs them (one audit record, written by this
// engine), and its result is the mcp tool's CallToolResult as MCP
// encodes it.
const GatewayMethod = "gateway"

// gatewayMethod is [GatewayMethod]. Its params are not decoded here:
// the engine decodes them strictly, as it does the mcp tool's, and
// answers bad input with a tool error result, as the mcp tool does.
func gatewayMethod() *method {
	return &method{name: GatewayMethod, runThen: func(c *connection, ctx context.Context, params json.RawMessage, answer func(any, *Error)) {
		if c.s.opts.Remote {
			// The policy decides without the params, which are not
			// decoded here: the gateway is not on the remote-safe list.
			if err := c.decideRemote(ctx, GatewayMethod, ""); err != nil {
				answer(nil, err)
				return
			}
		}
		// Answered where the engine hands the result over (the server's
		// connection's reader): no goroutine waits for the server.
		c.s.eng.GatewayCallThen(ctx, params, func(res json.RawMessage) { answer(encoded(res), nil) })
	}}
}

// encoded is a result the engine has encoded as compact JSON on one
// line ([engine.Engine.GatewayCall]): the answer carries it as it is,
// not encoded again (see connection.answer).
type encoded []byte
