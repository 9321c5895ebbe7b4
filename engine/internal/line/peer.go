package line

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/voltmcp/voltmcp/engine/internal/jsonwire"
)

// MaxPeerRequests is how many requests an upstream server may have in
// flight to the engine's client at once (sampling, elicitation,
// roots/list, ping): a server asks one thing at a time in practice, and
// a few leave room for a ping next to it.
const MaxPeerRequests = 4

// maxRefusing is how many refusals a connection may be writing at once;
// past it a refused request gets no answer. A server that floods
// requests and reads none of the answers fills its input pipe, and each
// refusal waiting on it holds a goroutine.
const maxRefusing = 16

// maxEchoedID is the longest request id a refusal echoes: a longer one
// gets no answer, so that a refusal never holds much of what it refuses.
const maxEchoedID = 256

// CodePeerRequestRefused is the JSON-RPC error code of a request refused
// because the server has too many in flight.
const CodePeerRequestRefused = -32000

// PeerRequests bounds the requests a server has in flight to the
// engine's client on one connection: at most [MaxPeerRequests] of them,
// holding at most max bytes together. A request holds twice its params:
// the bytes read, and the go-sdk's decoding of them, which lives while
// its handler runs. A request past either bound is refused at once
// ([PeerRequests.Refusal]), before anything holds it: a connection of
// package line decides from the bytes it read, before it decodes the
// params, and the engine's HTTP transports (package transport) before
// the go-sdk's client queues the request. With the message being read, a connection so holds at most
// twice the message cap of server requests. It is safe for concurrent
// use.
type PeerRequests struct {
	max     int
	answers map[string]bool // the methods the client answers; nil: any

	mu    sync.Mutex
	held  map[jsonrpc.ID]int // the bytes each request in flight holds
	bytes int

	refusing atomic.Int32
}

// NewPeerRequests returns the bound of a connection whose messages are at
// most maxBytes long: the requests in flight hold at most that much
// together, so that with the message being read the connection holds at
// most twice the message cap of server requests. answers lists the
// methods the connection's client answers (nil: any); a request of any
// other method is refused as not found, from the bytes read, since the
// client would refuse it only after decoding it.
func NewPeerRequests(maxBytes int, answers []string) *PeerRequests {
	if maxBytes <= 0 {
		maxBytes = defaultMaxMessage
	}
	p := &PeerRequests{max: maxBytes, held: map[jsonrpc.ID]int{}}
	if answers != nil {
		p.answers = make(map[string]bool, len(answers))
		for _, m := range answers {
			p.answers[m] = true
		}
	}
	return p
}

// maxBareParams bounds the params of a request whose params carry
// nothing the client reads but _meta (ping, roots/list).
const maxBareParams = 64 << 10

// Refused is a request of the server's that [PeerRequests.Admit]
// refused: its id, and why.
type Refused struct {
	ID  jsonrpc.ID
	Why *jsonrpc.Error
}

// Refusals of [PeerRequests.Admit].
var (
	refusedBusy      = &jsonrpc.Error{Code: CodePeerRequestRefused}
	refusedLarge     = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams}
	refusedNotServed = &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound}
)

// Admit decides on the request id, a request from the server for
// method with params of the given length in bytes: it returns nil when
// the request may go on to the client, and counts it until
// [PeerRequests.Done] is called with its id; otherwise the kind of
// refusal, for [PeerRequests.Refusal]. A request is refused when the
// client does not answer its method, when its params are larger than the
// method can need (ping and roots/list carry none but _meta), when its
// id is already in flight or too long to echo, and when it would take
// the requests in flight past [MaxPeerRequests] or the byte bound.
func (p *PeerRequests) Admit(id jsonrpc.ID, method string, params int) *jsonrpc.Error {
	if s, isString := id.Raw().(string); isString && len(s) > maxEchoedID {
		return refusedBusy // its answer could not be matched (Answered), nor a refusal echo it
	}
	if p.answers != nil && !p.answers[method] {
		return refusedNotServed
	}
	if (method == "ping" || method == "roots/list") && params > maxBareParams {
		return refusedLarge
	}
	n := 2 * params // the bytes read, and the go-sdk's decoding of them
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, dup := p.held[id]; dup || len(p.held) >= MaxPeerRequests || p.bytes+n > p.max {
		return refusedBusy
	}
	p.held[id] = n
	p.bytes += n
	return nil
}

// Done ends the count of the request id, when the client has answered
// it; an id not in flight is ignored.
func (p *PeerRequests) Done(id jsonrpc.ID) {
	p.mu.Lock()
	if n, ok := p.held[id]; ok {
		delete(p.held, id)
		p.bytes -= n
	}
	p.mu.Unlock()
}

// Holding reports whether a request is in flight.
func (p *PeerRequests) Holding() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.held) > 0
}

// Answered ends the count of the request in flight that a response
// answers, given the start of the response as the go-sdk encodes it:
// {"jsonrpc":"2.0","id":…, then "result" or "error". It is how a
// transport that sees the client's answers only as bytes (an HTTP
// request's body) calls [PeerRequests.Done].
func (p *PeerRequests) Answered(head []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, n := range p.held {
		// The go-sdk's encoding of the id, as in its answer.
		probe, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Result: json.RawMessage("0")})
		if err != nil {
			continue
		}
		start := probe[:len(probe)-len(`,"result":0}`)]
		if after, ok := bytes.CutPrefix(head, start); ok && (bytes.HasPrefix(after, []byte(`,"result"`)) || bytes.HasPrefix(after, []byte(`,"error"`))) {
			delete(p.held, id)
			p.bytes -= n
			return
		}
	}
}

// PeerCall reads data, one JSON-RPC message that is valid JSON, as far
// as it must to tell whether it is a request that expects an answer: it
// returns the request's id and the length of its params, and ok. The
// usual envelope is read in place, without a copy of the params
// ([jsonwire.Envelope.FastDecode]); another is decoded. A message that
// is no such request, or that the go-sdk would fail, is not ok.
func PeerCall(data []byte) (id jsonrpc.ID, method string, params int, ok bool) {
	var w jsonwire.Envelope
	if w.FastDecode(data) {
		return envelopeCall(&w)
	}
	msg, err := jsonwire.DecodeMessage(data)
	if err != nil {
		return jsonrpc.ID{}, "", 0, false
	}
	if req := peerRequest(msg); req != nil {
		return req.ID, req.Method, len(req.Params), true
	}
	return jsonrpc.ID{}, "", 0, false
}

// envelopeCall is [PeerCall] of an envelope read.
func envelopeCall(w *jsonwire.Envelope) (id jsonrpc.ID, method string, params int, ok bool) {
	if w.Method == nil || w.ID == nil || w.Version != "2.0" {
		return jsonrpc.ID{}, "", 0, false
	}
	id, err := jsonrpc.MakeID(w.ID)
	return id, *w.Method, len(w.Params), err == nil
}

// Refusal returns the error response refusing the request id for why,
// what [PeerRequests.Admit] returned, and a func to call once it is
// written; ok is false when the request gets no answer: its id is too
// long to echo, or too many refusals are being written already.
func (p *PeerRequests) Refusal(id jsonrpc.ID, why *jsonrpc.Error) (resp *jsonrpc.Response, written func(), ok bool) {
	if s, isString := id.Raw().(string); isString && len(s) > maxEchoedID {
		return nil, nil, false
	}
	if p.refusing.Add(1) > maxRefusing {
		p.refusing.Add(-1)
		return nil, nil, false
	}
	var msg string
	switch why {
	case refusedNotServed:
		msg = "refused by voltmcp: its client does not answer this method"
	case refusedLarge:
		msg = fmt.Sprintf("refused by voltmcp: the params of this method are larger than %d bytes", maxBareParams)
	default:
		msg = fmt.Sprintf("refused by voltmcp: the server has too many requests waiting for the client (at most %d at once, of %d bytes together)",
			MaxPeerRequests, p.max)
	}
	return &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: why.Code, Message: msg}}, func() { p.refusing.Add(-1) }, true
}

// peerRequest returns msg as a request from the peer that expects an
// answer, or nil.
func peerRequest(msg jsonrpc.Message) *jsonrpc.Request {
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		return req
	}
	return nil
}
