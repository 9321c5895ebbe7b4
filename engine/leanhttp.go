package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/engine/internal/jsonwire"
	"github.com/voltmcp/voltmcp/engine/internal/transport"
	"github.com/voltmcp/voltmcp/engine/internal/turn"
)

// leanHTTP answers, on the Streamable HTTP surface, the POSTs that the
// lean path answers on stdio: one tools/call of the mcp tool on a
// session the SDK's handler initialized, with plain params (no _meta)
// of a protocol before 2026-07-28, and the cancellation of such a call.
// It answers them through the same leanServe as stdio, with the same
// response the SDK's handler writes (one "message" event of an event
// stream), and hands every other request, and any it is not sure it
// would answer exactly as the SDK would, to the SDK's handler, body
// and all.
type leanHTTP struct {
	l    *leanServe
	srv  *mcp.Server  // the SDK's server, whose sessions say which are initialized
	next http.Handler // the SDK's handler
}

// leanHTTPKey is a lean HTTP call's key among the calls in flight: its
// id is the agent's within its session.
type leanHTTPKey struct {
	session string
	id      any
}

// maxLeanBody bounds the body the lean path reads before it decides:
// a larger one goes to the SDK's handler.
const maxLeanBody = maxGatewayInput + 64<<10

func (h *leanHTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sid := r.Header.Get("Mcp-Session-Id")
	if r.Method != http.MethodPost || sid == "" || !h.plainRequest(r) {
		h.next.ServeHTTP(w, r)
		return
	}
	body, whole, err := readPrefix(r.Body, maxLeanBody)
	if err != nil || !whole || !json.Valid(body) {
		r.Body = rejoin(body, r.Body)
		h.next.ServeHTTP(w, r)
		return
	}
	r.Body = rejoin(body, r.Body)
	msg, err := jsonwire.DecodeMessage(body)
	req, ok := msg.(*jsonrpc.Request)
	if err != nil || !ok || !h.initialized(sid) {
		h.next.ServeHTTP(w, r)
		return
	}
	switch req.Method {
	case "notifications/cancelled":
		if id, ok := cancelledID(req.Params); ok && !req.IsCall() && h.l.cancel(leanHTTPKey{sid, id}) {
			w.WriteHeader(http.StatusAccepted)
			return
		}
	case "tools/call":
		if req.IsCall() && h.call(w, r, sid, req) {
			return
		}
	}
	h.next.ServeHTTP(w, r)
}

// plainRequest reports whether r has the headers the SDK's handler
// accepts for a POST, of a protocol before 2026-07-28 (whose requests
// carry headers of their own to check).
func (h *leanHTTP) plainRequest(r *http.Request) bool {
	if ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || ct != "application/json" {
		return false
	}
	jsonOK, streamOK := false, false
	for _, v := range r.Header.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			mt, _, _ := strings.Cut(strings.TrimSpace(part), ";")
			switch strings.ToLower(strings.TrimSpace(mt)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	if !jsonOK || !streamOK {
		return false
	}
	pv := r.Header.Get("Mcp-Protocol-Version")
	if pv != "" && (pv >= protocol20260728 || !slices.Contains(h.l.versions, pv)) {
		return false
	}
	return r.Header.Get("Mcp-Method") == "" && r.Header.Get("Mcp-Name") == ""
}

// initialized reports whether the SDK's server has a session sid that
// has been initialized, as its handler requires of a tools/call.
func (h *leanHTTP) initialized(sid string) bool {
	for ss := range h.srv.Sessions() {
		if ss.ID() == sid {
			return ss.InitializeParams() != nil
		}
	}
	return false
}

// call answers a tools/call of the mcp tool, and reports false, having
// written nothing, when the SDK's handler should answer it instead.
func (h *leanHTTP) call(w http.ResponseWriter, r *http.Request, sid string, req *jsonrpc.Request) bool {
	p, err := jsonwire.DecodeCallParams(req.Params)
	if err != nil || p.Name != GatewayToolName || len(p.Meta) > 0 {
		return false
	}
	key := leanHTTPKey{sid, req.ID.Raw()}
	done := make(chan struct{})
	write := func(b []byte) error {
		hd := w.Header()
		hd.Set("Cache-Control", "no-cache, no-transform")
		hd.Set("Content-Type", "text/event-stream")
		hd.Set("Connection", "keep-alive")
		out := make([]byte, 0, len(b)+24)
		out = append(out, "event: message\ndata: "...)
		out = append(out, b...)
		out = append(out, "\n\n"...)
		// The whole stream is this one event: with its length known, the
		// answer leaves in one write when the handler returns, without a
		// flush and a chunked encoding's end.
		hd.Set("Content-Length", strconv.Itoa(len(out)))
		w.WriteHeader(http.StatusOK)
		_, err := w.Write(out)
		return err
	}
	agent := func() *mcp.ServerSession {
		for ss := range h.srv.Sessions() {
			if ss.ID() == sid {
				return ss
			}
		}
		return nil
	}
	// The agent's client, whom a login the call needs may be offered
	// to, and the gateways the request came through (RefuseLoop).
	via := transport.ViaOf(r.Context())
	scope := func(ctx context.Context) context.Context { return transport.WithVia(withAgent(ctx, agent), via) }
	work := h.l.startThen(key, req.ID, p.Arguments, false, write, func() { close(done) }, scope)
	if work == nil {
		return false
	}
	// The agent going away cancels the call, as it does the SDK's.
	stop := context.AfterFunc(r.Context(), func() { h.l.cancel(key) })
	defer stop()
	work(turn.NoYield)
	<-done
	return true
}

// readPrefix reads r to its end, or max bytes of it, and reports
// whether it read it all.
func readPrefix(r io.Reader, max int64) ([]byte, bool, error) {
	var buf bytes.Buffer
	n, err := io.Copy(&buf, io.LimitReader(r, max+1))
	if err != nil {
		return buf.Bytes(), false, err
	}
	return buf.Bytes(), n <= max, nil
}

// rejoin is a request body that reads read again, then the rest.
func rejoin(read []byte, rest io.ReadCloser) io.ReadCloser {
	return struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(read), rest), rest}
}
