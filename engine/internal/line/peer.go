package line

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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
// engine's client on one connection: at most [MaxPeerRequests] of them
// and at most max bytes of their params together. A request past either
// bound is refused at once ([PeerRequests.Refusal]), before anything
// holds it. It is safe for concurrent use.
type PeerRequests struct {
	max int

	mu    sync.Mutex
	held  map[jsonrpc.ID]int // the params bytes of each request in flight
	bytes int

	refusing atomic.Int32
}

// NewPeerRequests returns the bound of a connection whose messages are at
// most maxBytes long: the requests in flight hold at most that much
// together, so that with the message being read the connection holds at
// most twice the message cap of server requests.
func NewPeerRequests(maxBytes int) *PeerRequests {
	if maxBytes <= 0 {
		maxBytes = defaultMaxMessage
	}
	return &PeerRequests{max: maxBytes, held: map[jsonrpc.ID]int{}}
}

// Admit reports whether req, a request from the server, may go on to the
// client; an admitted request counts until [PeerRequests.Done] is called
// with its id. A request whose id is already in flight is not admitted.
func (p *PeerRequests) Admit(req *jsonrpc.Request) bool {
	n := len(req.Params)
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, dup := p.held[req.ID]; dup || len(p.held) >= MaxPeerRequests || p.bytes+n > p.max {
		return false
	}
	p.held[req.ID] = n
	p.bytes += n
	return true
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

// Refusal returns the encoded error response refusing req, and a func
// to call once it is written; ok is false when the request gets no
// answer: its id is too long to echo, or too many refusals are being
// written already.
func (p *PeerRequests) Refusal(req *jsonrpc.Request) (data []byte, written func(), ok bool) {
	if id, isString := req.ID.Raw().(string); isString && len(id) > maxEchoedID {
		return nil, nil, false
	}
	if p.refusing.Add(1) > maxRefusing {
		p.refusing.Add(-1)
		return nil, nil, false
	}
	msg := fmt.Sprintf("refused by voltmcp: the server has too many requests waiting for the client (at most %d at once, of %d bytes together)",
		MaxPeerRequests, p.max)
	data, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: CodePeerRequestRefused, Message: msg}})
	if err != nil {
		p.refusing.Add(-1)
		return nil, nil, false
	}
	return data, func() { p.refusing.Add(-1) }, true
}

// peerRequest returns msg as a request from the peer that expects an
// answer, or nil.
func peerRequest(msg jsonrpc.Message) *jsonrpc.Request {
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		return req
	}
	return nil
}
