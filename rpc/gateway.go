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
	return &method{name: GatewayMethod, run: func(c *connection, ctx context.Context, params json.RawMessage) (any, *Error) {
		return encoded(c.s.eng.GatewayCall(ctx, params)), nil
	}}
}

// encoded is a result the engine has encoded as compact JSON on one
// line ([engine.Engine.GatewayCall]): the answer carries it as it is,
// not encoded again (see connection.answer).
type encoded []byte
