package engine

import (
	"context"
	"encoding/json"
	"errors"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/engine/internal/jsonwire"
	"github.com/voltmcp/voltmcp/engine/internal/line"
)

// leanServe answers a stdio agent's tools/call of the mcp tool without
// the SDK's server: the connection's reader decodes the request once,
// runs the gateway and writes the response, while another goroutine
// reads on (see engine/internal/line and engine/internal/turn).
// Everything else (initialization, listing, pings, direct tools,
// notifications, anything malformed) goes to the SDK's server as
// before, and so does a call the lean path is not sure it would answer
// exactly as the SDK would. On a small machine the SDK's dispatch of a
// call costs about as much as the gateway's own work
// (RATIONALE.md).
type leanServe struct {
	e   *Engine
	ctx context.Context // the serve's; cancelled when it ends
	// forward, when not nil, runs each call instead of e, which is then
	// nil: it is an attached serve's (see [ServeForward] and
	// forwardCall).
	forward Forward

	// initialized is set once the SDK answered the agent's initialize
	// without error; initID and initVersion are that request's id and
	// protocol version.
	initialized atomic.Bool
	mu          sync.Mutex
	initID      any
	initVersion string
	inflight    map[any]context.CancelCauseFunc // by request id, of lean calls
	closing     bool                            // drain began: no lean call starts

	wg sync.WaitGroup
	// answered counts the calls the lean path answered (or tried to:
	// it counts before the write).
	answered atomic.Int64
	// versions are the protocol versions the SDK's server accepts.
	versions []string
}

func newLeanServe(ctx context.Context, e *Engine) *leanServe {
	return &leanServe{e: e, ctx: ctx, inflight: map[any]context.CancelCauseFunc{}, versions: mcp.SupportedProtocolVersions()}
}

// newForwardServe is the leanServe of an attached serve: each call of
// the mcp tool it answers is run by forward.
func newForwardServe(ctx context.Context, forward Forward) *leanServe {
	return &leanServe{forward: forward, ctx: ctx, inflight: map[any]context.CancelCauseFunc{}, versions: mcp.SupportedProtocolVersions()}
}

// Drain implements line.Tap: it waits for the lean calls in flight to
// write their answers. The SDK's server does the same for its own calls
// before it closes the connection, as when the agent closes its end of
// stdin after its last request.
func (l *leanServe) Drain() {
	l.mu.Lock()
	l.closing = true
	l.mu.Unlock()
	l.wg.Wait()
}

// wait cancels the lean calls in flight and waits for them to end.
func (l *leanServe) wait() {
	l.mu.Lock()
	for _, cancel := range l.inflight {
		cancel(context.Canceled)
	}
	l.mu.Unlock()
	l.wg.Wait()
}

// cancelledID reads the id of the request a notifications/cancelled
// names, as the key the lean path keeps its calls under.
func cancelledID(params json.RawMessage) (any, bool) {
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return nil, false
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	if err != nil {
		return nil, false
	}
	return id.Raw(), true
}

// cancel cancels the lean call in flight under key, as its agent asked,
// and reports whether there was one.
func (l *leanServe) cancel(key any) bool {
	l.mu.Lock()
	cancel := l.inflight[key]
	l.mu.Unlock()
	if cancel == nil {
		return false
	}
	cancel(errAgentCancelled)
	return true
}

// errAgentCancelled is the cause of a lean call's end when the agent
// cancelled it.
var errAgentCancelled = errors.New("cancelled by the client")

// Inbound implements line.Tap.
func (l *leanServe) Inbound(c *line.Conn, msg jsonrpc.Message) (bool, func(yield func())) {
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return false, nil
	}
	switch req.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(req.Params, &p)
		l.mu.Lock()
		l.initID, l.initVersion = req.ID.Raw(), p.ProtocolVersion
		l.mu.Unlock()
	case "notifications/cancelled":
		id, ok := cancelledID(req.Params)
		// A call it does not know is the SDK's, or already answered.
		return ok && l.cancel(id), nil
	case "tools/call":
		if !req.IsCall() {
			return false, nil
		}
		p, err := jsonwire.DecodeCallParams(req.Params)
		if err != nil || p.Name != GatewayToolName {
			return false, nil
		}
		complete, ok := l.accepts(p.Meta)
		if !ok {
			return false, nil
		}
		work := l.start(c, req.ID, p.Arguments, complete)
		return work != nil, work
	}
	return false, nil
}

// accepts reports whether the lean path may answer a call carrying
// meta, and whether its result says "resultType": "complete", as the
// SDK's server says to clients of protocol 2026-07-28 and later. A call
// of protocol 2026-07-28 carries the client's protocol version, info
// and capabilities in meta; the lean path checks them as the SDK does,
// and leaves any it would refuse to the SDK, which refuses it in its
// own words. A call of an earlier protocol is accepted once the session
// is initialized.
func (l *leanServe) accepts(meta map[string]json.RawMessage) (complete, ok bool) {
	var version string
	if raw, present := meta[mcp.MetaKeyProtocolVersion]; present {
		if json.Unmarshal(raw, &version) != nil {
			return false, false
		}
	}
	if version >= protocol20260728 {
		if !slices.Contains(l.versions, version) {
			return false, false
		}
		if info, present := meta[mcp.MetaKeyClientInfo]; present {
			var impl mcp.Implementation
			if json.Unmarshal(info, &impl) != nil {
				return false, false
			}
		}
		var caps map[string]json.RawMessage
		if json.Unmarshal(meta[mcp.MetaKeyClientCapabilities], &caps) != nil || caps == nil {
			return false, false
		}
		return true, true
	}
	if !l.initialized.Load() {
		return false, false
	}
	l.mu.Lock()
	v := l.initVersion
	l.mu.Unlock()
	return v >= protocol20260728, true
}

// Outbound implements line.Tap: it notes the SDK's successful answer to
// initialize.
func (l *leanServe) Outbound(msg jsonrpc.Message) {
	if l.initialized.Load() {
		return
	}
	r, ok := msg.(*jsonrpc.Response)
	if !ok || r.Error != nil {
		return
	}
	l.mu.Lock()
	match := l.initID != nil && r.ID.Raw() == l.initID
	l.mu.Unlock()
	if match {
		l.initialized.Store(true)
	}
}

// start prepares one call of the mcp tool and returns the work that
// runs it, which the connection runs on its reader's goroutine (see
// line.Tap). The work returns once the call waits for its server: the
// answer is written by whoever hands the gateway its result (see
// gatewayRunThen), on the server's connection's reader in the common
// case, so that no goroutine waits for the server and none is woken to
// read on in the meantime. start returns nil, leaving the call to the
// SDK, when the connection is closing or a call with the same id is in
// flight.
func (l *leanServe) start(c *line.Conn, id jsonrpc.ID, args json.RawMessage, complete bool) func(yield func()) {
	return l.startThen(id.Raw(), id, args, complete, c.WriteLine, nil, nil)
}

// startThen is start for a call whose key among the calls in flight is
// key (its id, on stdio), whose response write writes where the agent
// reads it, and which runs ended, when not nil, once it has ended
// (answered, or given up on when the agent cancelled it). scope, when not
// nil, adds to l.ctx what the call's request carries: the agent's client
// it came from (else l.ctx carries it), whom a login the call needs may
// be offered to, and the gateways it came through.
func (l *leanServe) startThen(key any, id jsonrpc.ID, args json.RawMessage, complete bool, write func([]byte) error, ended func(), scope func(context.Context) context.Context) func(yield func()) {
	l.mu.Lock()
	if l.closing || l.inflight[key] != nil {
		l.mu.Unlock()
		return nil
	}
	l.wg.Add(1)
	parent := l.ctx
	if scope != nil {
		parent = scope(parent)
	}
	done := func() {
		l.mu.Lock()
		delete(l.inflight, key)
		l.mu.Unlock()
		l.wg.Done()
		if ended != nil {
			ended()
		}
	}
	if l.forward != nil {
		ctx, cancel := context.WithCancelCause(parent)
		l.inflight[key] = cancel
		l.mu.Unlock()
		return func(yield func()) {
			l.forwardCall(ctx, yield, id, args, complete, write, func() {
				cancel(nil)
				done()
			})
		}
	}
	var j *gatewayJob
	j = l.e.newGatewayJob(parent, func(yield func(), r GatewayResult, fault bool) {
		l.answer(j, id, r, fault, complete, write)
	}, done)
	l.inflight[key] = j.cancel
	l.mu.Unlock()
	return func(yield func()) {
		j.run(yield, func(ctx context.Context, then func(func(), GatewayResult)) { l.e.gatewayRunThen(ctx, args, then) })
	}
}

// answer encodes the answer of the call id and writes it, unless the
// agent cancelled the call. A panic while encoding is an internal
// error.
func (l *leanServe) answer(j *gatewayJob, id jsonrpc.ID, r GatewayResult, fault, complete bool, write func([]byte) error) {
	if errors.Is(context.Cause(j.ctx), errAgentCancelled) {
		// The spec asks a receiver not to answer a cancelled request:
		// the agent has stopped waiting for it.
		return
	}
	var res []byte
	var jerr *jsonrpc.Error
	if fault {
		jerr = errInternal
	} else {
		res, jerr = l.encode(r, complete)
	}
	l.answered.Add(1)
	_ = write(jsonwire.AppendResponse(make([]byte, 0, len(res)+48), id, res, jerr))
}

// encode encodes a result; a panic while encoding is an internal error.
func (l *leanServe) encode(r GatewayResult, complete bool) (res []byte, jerr *jsonrpc.Error) {
	defer func() {
		if v := recover(); v != nil {
			l.e.log.Error("encoding the mcp tool's result panicked", "stack", string(debug.Stack()))
			res, jerr = nil, errInternal
		}
	}()
	b, err := encodeLeanResult(r, complete)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "encoding the result: " + err.Error()}
	}
	return b, nil
}

// leanResultWire is the wire form of toolResult's CallToolResult, in the
// SDK's field order, with resultType as the SDK's server sets it for a
// client of protocol 2026-07-28 or later. Encoding it is one pass of
// encoding/json over concrete types, where the SDK's MarshalJSON
// encodes the result and then each content block again.
type leanResultWire struct {
	Content           [1]leanTextWire `json:"content"`
	StructuredContent any             `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
	ResultType        string          `json:"resultType,omitempty"`
}

type leanTextWire struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// encodeLeanResult encodes r as toolResult(r) encodes. The result of a
// call, the common case, is written by hand (jsonwire.AppendCallAnswer),
// sparing the call encoding/json's reflection on the answer's path; any
// other, and a call whose structured content the hand writing leaves
// alone, goes through encoding/json.
func encodeLeanResult(r GatewayResult, complete bool) ([]byte, error) {
	if a, ok := callAnswer(r, complete); ok {
		if b, ok := jsonwire.AppendCallAnswer(make([]byte, 0, 2*len(r.Text)+len(a.Data.Content)+256), a); ok {
			return b, nil
		}
	}
	return encodeLeanResultJSON(r, complete)
}

// encodeLeanResultJSON is encodeLeanResult with encoding/json.
func encodeLeanResultJSON(r GatewayResult, complete bool) ([]byte, error) {
	if len(r.Attachments) > 0 {
		// The content blocks as toolResult builds them, each encoded by
		// the SDK's own MarshalJSON.
		w := leanMediaResultWire{Content: r.content(), StructuredContent: r.Data, IsError: r.IsError}
		if complete {
			w.ResultType = "complete"
		}
		return json.Marshal(w)
	}
	w := leanResultWire{Content: [1]leanTextWire{{Type: "text", Text: r.Text}}, StructuredContent: r.Data, IsError: r.IsError}
	if complete {
		w.ResultType = "complete"
	}
	return json.Marshal(w)
}

// leanMediaResultWire is leanResultWire for a result with attachments.
type leanMediaResultWire struct {
	Content           []mcp.Content `json:"content"`
	StructuredContent any           `json:"structuredContent,omitempty"`
	IsError           bool          `json:"isError,omitempty"`
	ResultType        string        `json:"resultType,omitempty"`
}

// callAnswer is r as the jsonwire.CallAnswer whose encoding is r's,
// when r is the result of a call whose structured content, if any, is
// JSON the server sent (a json.RawMessage); it reports false for any
// other r.
func callAnswer(r GatewayResult, complete bool) (jsonwire.CallAnswer, bool) {
	d, ok := r.Data.(CallResult)
	if !ok || len(r.Attachments) > 0 || len(d.Media) > 0 {
		// Images and audio are encoding/json's (encodeLeanResultJSON).
		return jsonwire.CallAnswer{}, false
	}
	a := jsonwire.CallAnswer{Text: r.Text, IsError: r.IsError, Complete: complete, Data: jsonwire.CallData{
		Server: d.Server, Tool: d.Tool, Status: d.Status, Risk: string(d.Risk), Content: d.Content, Notes: d.Notes}}
	switch v := d.Structured.(type) {
	case nil:
	case json.RawMessage:
		if v == nil {
			return jsonwire.CallAnswer{}, false // encoding/json writes it as null
		}
		a.Data.Structured = v
	default:
		return jsonwire.CallAnswer{}, false
	}
	if t := d.Truncation; t != nil {
		a.Data.Truncation = &jsonwire.Truncation{Truncated: t.Truncated, ReturnedBytes: t.ReturnedBytes, TotalBytes: t.TotalBytes,
			ReturnedLines: t.ReturnedLines, TotalLines: t.TotalLines}
	}
	if c := d.Cache; c != nil {
		a.Data.Cache = &jsonwire.CacheRef{ID: c.ID, Read: c.Read, Offset: c.Offset}
	}
	return a, true
}
