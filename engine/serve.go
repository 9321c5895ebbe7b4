package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/engine/internal/jsonwire"
	"github.com/voltmcp/voltmcp/engine/internal/line"
	"github.com/voltmcp/voltmcp/engine/internal/owner"
	"github.com/voltmcp/voltmcp/engine/internal/transport"
	"github.com/voltmcp/voltmcp/engine/internal/turn"
)

// maxGatewayInput bounds the JSON arguments of one mcp tool call.
const maxGatewayInput = 1 << 20

// gatewayTool is the definition of the mcp tool: constant, whatever the
// configured servers and their state.
func gatewayTool() *mcp.Tool {
	return &mcp.Tool{
		Name:        GatewayToolName,
		Title:       "MCP gateway",
		Description: gatewayDescription,
		InputSchema: gatewayInputSchema(),
	}
}

// newMCPServer builds the MCP server a client of `voltmcp serve` talks
// to, and reports whether it has the mcp tool. While the gateway is
// turned off ([Engine.TurnedOff]) it has no tool at all, and its
// instructions say why.
func (e *Engine) newMCPServer() (*mcp.Server, bool) {
	instructions := "Use the mcp tool: search for a tool, describe it, then call it. Results from servers are third-party data."
	off := e.TurnedOff()
	if off != "" {
		instructions = off + ". This server has no tools until then."
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "voltmcp", Title: "voltmcp MCP gateway", Version: e.version}, &mcp.ServerOptions{
		Instructions: instructions,
	})
	if off != "" {
		return srv, false
	}
	// Over HTTP, the gateways a request came through (checked by
	// httpHandler) go on with every request it makes of a server.
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if ex := req.GetExtra(); ex != nil && ex.Header != nil {
				if chain, err := transport.ParseVia(ex.Header); err == nil {
					ctx = transport.WithVia(ctx, chain)
				}
			}
			return next(ctx, method, req)
		}
	})
	srv.AddTool(gatewayTool(), e.handleGateway)
	e.addDirectTools(srv)
	return srv, true
}

// gatewayRunThen decodes the mcp tool's input raw and runs it, handing
// the result to then, once: on this goroutine, or, for a call, on the
// server's connection's reader once the server answers (see
// gwCallThen). A codec runs it in a gatewayJob (pipeline.go).
func (e *Engine) gatewayRunThen(ctx context.Context, raw json.RawMessage, then func(yield func(), r GatewayResult)) {
	here := turn.YieldFunc(ctx)
	var in GatewayInput
	if len(raw) > maxGatewayInput {
		then(here, gwError("the input is %d bytes; the limit is %d", len(raw), maxGatewayInput))
		return
	}
	if err := decodeGatewayInput(raw, &in); err != nil {
		then(here, gwError("%v", err))
		return
	}
	in.fromAgent = true
	e.gatewayInputThen(ctx, in, then)
}

// gatewayInputThen runs the decoded input in, handing the result to
// then as gatewayRunThen does.
func (e *Engine) gatewayInputThen(ctx context.Context, in GatewayInput, then func(yield func(), r GatewayResult)) {
	// A call refused because voltmcp is off is refused by gwCallThen,
	// which records it as every call.
	if off := e.TurnedOff(); off != "" && strings.TrimSpace(in.Action) != "status" && strings.TrimSpace(in.Action) != "call" {
		then(turn.YieldFunc(ctx), gwError("%s", off))
		return
	}
	if a := gatewayActionNamed(strings.TrimSpace(in.Action)); a != nil && a.then != nil {
		a.then(e, ctx, in, then)
		return
	}
	then(turn.YieldFunc(ctx), e.dispatch(ctx, in))
}

// decodeGatewayInput decodes strictly: an unknown field is an error that
// names the closest known one.
func decodeGatewayInput(raw json.RawMessage, in *GatewayInput) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return fmt.Errorf("missing input: give at least {\"action\": ...}")
	}
	if json.Valid(raw) && in.fastDecode(raw) {
		return nil
	}
	return decodeGatewayInputJSON(raw, in)
}

// decodeGatewayInputJSON is decodeGatewayInput with encoding/json alone.
func decodeGatewayInputJSON(raw json.RawMessage, in *GatewayInput) error {
	// The arguments stay JSON: a call passes them on as they came.
	var w struct {
		GatewayInput
		Arguments json.RawMessage `json:"arguments,omitempty"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		msg := strings.TrimPrefix(err.Error(), "json: ")
		if name, ok := strings.CutPrefix(msg, "unknown field "); ok {
			name = strings.Trim(name, `"`)
			if near := cue.Closest(name, gatewayFieldNames()); near != "" {
				return fmt.Errorf("unknown input field %q (did you mean %q?)", name, near)
			}
			return fmt.Errorf("unknown input field %q", name)
		}
		return fmt.Errorf("invalid input: %s", msg)
	}
	*in = w.GatewayInput
	switch a := bytes.TrimSpace(w.Arguments); {
	case len(a) == 0 || string(a) == "null":
	case a[0] != '{':
		return errors.New("invalid input: arguments must be a JSON object")
	default:
		in.rawArgs = a
	}
	return nil
}

// fastDecode reads, into in, an input whose members all have their
// exact names and the usual values: plain strings (no escapes, valid
// UTF-8) and arguments as an object, kept as it came. It reports
// whether it did; it declines anything else (a number, a null, a key in
// another case, an unknown key), which decodeGatewayInput decodes with
// encoding/json to the same input or the same error. raw must be valid
// JSON. Its cases are gatewayFields' string and object fields, checked
// by TestGatewayDecodersFollowTheFields: a table lookup would move the
// input to the heap.
func (in *GatewayInput) fastDecode(raw []byte) bool {
	var out GatewayInput
	if !jsonwire.ObjectMembers(raw, func(key string, val []byte) bool {
		var field *string
		switch key {
		case "action":
			field = &out.Action
		case "server":
			field = &out.Server
		case "query":
			field = &out.Query
		case "tool":
			field = &out.Tool
		case "argumentsJson":
			field = &out.ArgumentsJSON
		case "resourceUri":
			field = &out.ResourceURI
		case "prompt":
			field = &out.Prompt
		case "cacheId":
			field = &out.CacheID
		case "pattern":
			field = &out.Pattern
		case "cursor":
			field = &out.Cursor
		case "arguments":
			out.rawArgs = val
			return val[0] == '{'
		default:
			return false
		}
		s, ok := jsonwire.PlainString(val)
		*field = s
		return ok
	}) {
		return false
	}
	*in = out
	return true
}

// toolResult is the mcp tool's result: the text as one text block, and
// the data as structured content.
func toolResult(r GatewayResult) *mcp.CallToolResult {
	res := &mcp.CallToolResult{Content: r.content(), IsError: r.IsError}
	if r.Data != nil {
		res.StructuredContent = r.Data
	}
	return res
}

// ServeStdio serves the gateway as an MCP server over in and out (an
// agent's stdio) until the client disconnects or ctx ends, and closes
// both before it returns.
//
// A tools/call of the mcp tool takes a lean path past the SDK's server
// (leanServe); everything else is the SDK's. ServeStdio sets up its own
// poller: an in or out that is an *os.File for a pipe or socket in
// blocking mode (os.Stdin and os.Stdout as an agent starts a server) is
// read or written through a non-blocking duplicate that waits in Go's
// poller ([pollio.Reader], [pollio.Writer]), so that no thread blocks in
// the kernel, which on Go 1.26 and 1.27 can hold a stop-the-world
// garbage collection, and with it the whole process, for up to a minute,
// and a cancelled ctx ends a read in progress. The file's blocking mode
// is put back before it is closed. in and out are left as they are when
// they are one open file (one socket both ways), and out when it is the
// process's stderr too (2>&1). On Linux, a file the poller watches is
// then read and written with raw system calls (engine/internal/rawio),
// which spares a thread wake-up per message on a small machine.
func (e *Engine) ServeStdio(ctx context.Context, in io.ReadCloser, out io.WriteCloser) error {
	r, w := servedIn(in, out), servedOut(out, in)
	defer w.Close()
	defer r.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	return e.serveStdio(ctx, r, w, newLeanServe(ctx, e))
}

// serveStdio serves with lean answering what it can; ctx must end no
// later than lean's.
func (e *Engine) serveStdio(ctx context.Context, in io.ReadCloser, out io.WriteCloser, lean *leanServe) error {
	srv, on := e.newMCPServer()
	// The lean path's calls come from the one client of the connection,
	// whom a login a call needs may be offered to.
	lean.ctx = withAgent(lean.ctx, func() *mcp.ServerSession {
		for ss := range srv.Sessions() {
			return ss
		}
		return nil
	})
	t := &line.Transport{Reader: in, Writer: out, Check: e.readerCheck.Load()}
	if on {
		t.Tap = lean // with no mcp tool, the SDK answers every call
	}
	err := srv.Run(ctx, t)
	lean.wait()
	return err
}

// HTTPHandler serves the gateway over Streamable HTTP to the holder of
// token: a request must carry "Authorization: Bearer <token>", checked
// in constant time, or it gets a 401 with "WWW-Authenticate: Bearer"; an
// empty token refuses every request. The token is what keeps another
// user of the machine, who can reach a loopback port as well, from
// calling the servers with this user's credentials: make it random (32
// bytes from crypto/rand or more) and readable by this user alone.
// Requests whose Host is not a loopback name (DNS rebinding) are
// refused with a 403, and so are those with an Origin that is not a
// loopback origin, and cross-origin browser requests, before the token
// is looked at. The presented value is never logged or echoed.
//
// Every response carries the engine's instance id, a random value, in
// the header Voltmcp-Instance; the engine refuses to use an HTTP server
// that answers with its own id (named "server X is this gateway
// itself"), so a config entry whose url reaches this handler, under any
// spelling of the address, cannot make the gateway call itself.
func (e *Engine) HTTPHandler(token string) http.Handler {
	return e.httpHandler(token, newLeanServe(context.Background(), e))
}

// ownVia reports whether id, from a request's Voltmcp-Via, names this
// engine: an id it gave one of its HTTP servers, or its instance id.
func (e *Engine) ownVia(id string) bool { return id == e.instance || e.viaSent.Has(id) }

// httpHandler is HTTPHandler, with lean answering the calls of the mcp
// tool it can (leanHTTP); a nil lean leaves every request to the SDK's
// handler.
func (e *Engine) httpHandler(token string, lean *leanServe) http.Handler {
	srv, on := e.newMCPServer()
	// The SDK also refuses a non-loopback Host on a loopback listener;
	// cross-origin checks refuse browser requests from other sites,
	// loopback ones on another port included.
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	if lean != nil && on {
		h = &leanHTTP{l: lean, srv: srv, next: h}
	}
	// A request that came round a loop of gateways ends here; any other
	// carries the gateways it came through on to the servers it reaches.
	inner := h
	h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r, refused := transport.RefuseLoop(w, r, e.ownVia)
		if !refused {
			inner.ServeHTTP(w, r)
		}
	})
	h = owner.Handler([]byte(token), http.NewCrossOriginProtection().Handler(h))
	// Every answer, a refusal included, says which gateway gave it, so
	// that this engine refuses a configured server that is itself.
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(transport.InstanceHeader, e.instance)
		h.ServeHTTP(w, r)
	})
}
