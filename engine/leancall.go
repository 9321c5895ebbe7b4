package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/engine/internal/jsonwire"
	"github.com/voltmcp/voltmcp/engine/internal/turn"
)

// leanCall makes a tools/call on the session's stdio connection
// directly, without the SDK client's dispatch: one encoding of the
// request (jsonwire.EncodeCallParams), and the answer decoded on the
// connection's reader (jsonwire.DecodeValidToolResult), where then runs
// (see line.Reply). progress is the call's progress token; empty asks
// for no progress. It reports false, without calling then, when the
// call must go through the SDK instead: the session is not stdio, or it
// speaks protocol 2026-07-28 or later (see upstreamProtocol). When the
// server answers that it needs input, then gets errNeedsSDK: the SDK's
// client runs that exchange, and the call is made again through it.
func (s *supervisor) leanCall(ctx context.Context, cs *mcp.ClientSession, tool string, args any, progress string, then func(yield func(), res *mcp.CallToolResult, err error)) bool {
	s.mu.Lock()
	conn := s.conn
	if s.session != cs {
		conn = nil
	}
	s.mu.Unlock()
	if conn == nil {
		return false
	}
	if ir := cs.InitializeResult(); ir == nil || ir.ProtocolVersion >= protocol20260728 {
		// Each request of 2026-07-28 carries the client's info and
		// capabilities in _meta, which the SDK's client writes.
		return false
	}
	if args == nil {
		args = map[string]any{}
	}
	var meta map[string]any
	if progress != "" {
		meta = map[string]any{"progressToken": progress}
	}
	params, err := jsonwire.EncodeCallParams(tool, args, meta)
	if err != nil {
		then(turn.YieldFunc(ctx), nil, fmt.Errorf("encoding the arguments of %s: %w", tool, err))
		return true
	}
	conn.Send(ctx, "tools/call", params, func(yield func(), raw json.RawMessage, err error) {
		if err != nil {
			then(yield, nil, err)
			return
		}
		// The connection's reader checked the line the result is part
		// of: it is valid JSON, and is not scanned again.
		res, err := jsonwire.DecodeValidToolResult(raw)
		switch {
		case err != nil:
			then(yield, nil, fmt.Errorf("decoding the result of %s: %w", tool, err))
		case res.NeedsInput():
			then(yield, nil, errNeedsSDK)
		default:
			then(yield, res, nil)
		}
	})
	return true
}

// errNeedsSDK tells a lean call's caller to make the call again through
// the SDK's client.
var errNeedsSDK = errors.New("the call needs the SDK's client")

// protocol20260728 is the first protocol version whose requests carry
// the client's protocol version, info and capabilities in _meta.
const protocol20260728 = "2026-07-28"

// upstreamProtocol is the protocol version the engine asks servers for.
// Every server in use today speaks it, and it spares each request the
// client's info and capabilities, which under 2026-07-28 the server
// decodes again on every call (docs/benchmarks.md). A server that only
// speaks a later version answers with it, and the session uses that.
const upstreamProtocol = "2025-11-25"
