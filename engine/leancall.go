package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/engine/internal/jsonwire"
	"github.com/voltmcp/voltmcp/engine/internal/transport"
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
		return s.leanHTTPCall(ctx, cs, tool, args, progress, then)
	}
	if ir := cs.InitializeResult(); ir == nil || ir.ProtocolVersion >= protocol20260728 {
		// Each request of 2026-07-28 carries the client's info and
		// capabilities in _meta, which the SDK's client writes.
		return false
	}
	params, err := leanCallParams(tool, args, progress)
	if err != nil {
		then(turn.YieldFunc(ctx), nil, err)
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
// decodes again on every call (RATIONALE.md). A server that only
// speaks a later version answers with it, and the session uses that.
const upstreamProtocol = "2025-11-25"

// leanHTTPCall is leanCall on a Streamable HTTP session
// (transport.Caller).
// It reports false when the session has no httpCaller: it is SSE, it
// uses OAuth (whose token refresh and authorization the SDK's transport
// runs), or the engine answers elicitation (which the SDK's client
// runs).
func (s *supervisor) leanHTTPCall(ctx context.Context, cs *mcp.ClientSession, tool string, args any, progress string, then func(yield func(), res *mcp.CallToolResult, err error)) bool {
	s.mu.Lock()
	h := s.hcall
	if s.session != cs || s.hcallOf != cs {
		h = nil
	}
	s.mu.Unlock()
	if h == nil {
		return false
	}
	params, err := leanCallParams(tool, args, progress)
	if err != nil {
		then(turn.YieldFunc(ctx), nil, err)
		return true
	}
	// The call waits for the server here: a reader that runs it (the
	// agent's connection's) goes on reading meanwhile.
	turn.Yield(ctx)
	onProgress := func(p *mcp.ProgressNotificationParams) {
		s.progress(ctx, &mcp.ProgressNotificationClientRequest{Params: p})
	}
	raw, err := h.Call(ctx, params, onProgress, func(method string) {
		s.refreshAsync(strings.TrimPrefix(method, "notifications/"))
	})
	if err != nil {
		if errors.Is(err, transport.ErrRetrySDK) {
			err = errNeedsSDK
		}
		if b := (*transport.BrokenAnswer)(nil); errors.As(err, &b) {
			// As the SDK's client would: its session ends, and the
			// supervisor connects again when next needed.
			go cs.Close()
		}
		then(turn.NoYield, nil, err)
		return true
	}
	res, err := jsonwire.DecodeValidToolResult(raw)
	switch {
	case err != nil:
		then(turn.NoYield, nil, fmt.Errorf("decoding the result of %s: %w", tool, err))
	case res.NeedsInput():
		then(turn.NoYield, nil, errNeedsSDK)
	default:
		then(turn.NoYield, res, nil)
	}
	return true
}

// leanCallParams encodes the params of a lean tools/call of tool;
// progress, when not empty, is its progress token.
func leanCallParams(tool string, args any, progress string) ([]byte, error) {
	if args == nil {
		args = map[string]any{}
	}
	var meta map[string]any
	if progress != "" {
		meta = map[string]any{"progressToken": progress}
	}
	params, err := jsonwire.EncodeCallParams(tool, args, meta)
	if err != nil {
		return nil, fmt.Errorf("encoding the arguments of %s: %w", tool, err)
	}
	return params, nil
}
