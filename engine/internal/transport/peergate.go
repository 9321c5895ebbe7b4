package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/voltmcp/voltmcp/engine/internal/line"
)

// peerGate bounds the requests an HTTP server sends the engine's client
// (sampling, elicitation, roots/list, ping) with the bound of a stdio
// connection, [line.PeerRequests], on every event stream of the session:
// the streams of Streamable HTTP's POSTs and its standalone GET stream,
// and a legacy SSE session's stream, whoever reads them (the go-sdk's
// client or a [Caller]). An event that carries a request past the bound
// is dropped from the stream as it is read, before anything decodes its
// params, and the request is answered from here with the refusal,
// posted as the client posts an answer; the go-sdk's client, which
// queues the requests it reads without a bound, never sees it. The
// answers the client posts end the count of their request
// (noteAnswer).
type peerGate struct {
	base   http.RoundTripper
	origin Origin
	peer   *line.PeerRequests
}

// answerHead is how much of a POST's body noteAnswer reads: the start
// of an answer, up to its id (an id longer than line's bound on an echoed
// one is never admitted).
const answerHead = 2 << 10

// noteAnswer ends the count of the server's request that req, a POST
// the client makes, answers. It reads a copy of the body (GetBody), and
// only while a request is in flight.
func (g *peerGate) noteAnswer(req *http.Request) {
	if req.GetBody == nil || req.ContentLength <= 0 || !g.peer.Holding() {
		return
	}
	body, err := req.GetBody()
	if err != nil {
		return
	}
	defer body.Close()
	head := make([]byte, min(req.ContentLength, answerHead))
	n, _ := io.ReadFull(body, head)
	g.peer.Answered(head[:n])
}

// keep returns the keep func of an eventFilter on the event stream that
// answers req. Refusals are posted to req's URL with req's headers (the
// session's id, protocol version and authorization); on a GET's stream
// (endpoint set), which may be a legacy SSE session's, to the endpoint
// its first endpoint event names once it has named one, the later ones
// being dropped.
func (g *peerGate) keep(req *http.Request, endpoint bool) func(event []byte) bool {
	var to atomic.Pointer[url.URL]
	to.Store(req.URL)
	seen := false
	header := req.Header
	return func(event []byte) bool {
		name, data := eventFields(event)
		if endpoint && name == "endpoint" {
			if seen {
				return false
			}
			seen = true
			if u, err := req.URL.Parse(string(data)); err == nil {
				to.Store(u)
			}
			return true
		}
		if len(data) == 0 || !mayBeRequest(data) || !json.Valid(data) {
			return true // no request; or the reader fails it, or skips it
		}
		id, method, params, ok := line.PeerCall(data)
		if !ok {
			return true
		}
		why := g.peer.Admit(id, method, params)
		if why == nil {
			return true
		}
		g.refuse(line.Refused{ID: id, Why: why}, to.Load(), header)
		return false
	}
}

// mayBeRequest reports whether data, an event's data, can hold a request:
// a request names its method with the key "method", written so or with
// \u escapes (the go-sdk matches keys exactly, and JSON spells a key no
// other way). An event with neither, as most answers to calls are, is
// passed on without being read twice more (json.Valid, PeerCall).
func mayBeRequest(data []byte) bool {
	return bytes.Contains(data, []byte(`"method"`)) || bytes.Contains(data, []byte(`\u`))
}

// refusePost bounds the POST of one refusal.
const refusePost = 10 * time.Second

// refuse posts the refusal of the request id to the URL to, on its own
// goroutine: the server may hold the POST until the stream being read
// moves on. A request gets no answer when to is not known or not on
// the server's origin, or when line.PeerRequests gives none.
func (g *peerGate) refuse(r line.Refused, to *url.URL, header http.Header) {
	if to == nil {
		return
	}
	if o, ok := OriginOf(to); !ok || o != g.origin {
		return
	}
	resp, written, ok := g.peer.Refusal(r.ID, r.Why)
	if !ok {
		return
	}
	data, err := jsonrpc.EncodeMessage(resp)
	if err != nil {
		written()
		return
	}
	go func() {
		defer written()
		ctx, cancel := context.WithTimeout(context.Background(), refusePost)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, to.String(), bytes.NewReader(data))
		if err != nil {
			return
		}
		req.Header = header.Clone()
		req.Header.Del("Last-Event-ID")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if resp, err := g.base.RoundTrip(req); err == nil {
			Discard(resp)
		}
	}()
}
