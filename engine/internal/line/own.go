package line

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/voltmcp/voltmcp/engine/internal/jsonwire"
	"github.com/voltmcp/voltmcp/engine/internal/turn"
)

// A Reply receives the answer to one of the engine's own calls: the
// response's result, or why there is none (a *jsonrpc.Error for an
// error response). It is called once. When the response arrives, the
// reply runs on the connection's reader, as a tap's work does (see
// [Tap]): yield lets the reader go, and the reply must call it before
// it waits on anything that may take long. Called otherwise (the call's
// context ended, the connection closed, the write failed), yield does
// nothing ([turn.NoYield]).
type Reply func(yield func(), result json.RawMessage, err error)

// ownCall is one of the engine's own calls in flight.
type ownCall struct {
	ctx   context.Context
	reply Reply
	// unwatch stops the watch on ctx (context.AfterFunc).
	unwatch func() bool
}

// ownIDPrefix starts the id of each call the engine makes itself on a
// client connection. The go-sdk's client numbers its calls, so a string
// id with this prefix is never one of the go-sdk's.
const ownIDPrefix = "voltmcp-"

// consume routes a decoded message that is not the go-sdk's: the
// response to one of the engine's own calls, or a message the tap
// answers. It reports whether msg was consumed, and the work the tap
// wants run for it, if any.
func (c *Conn) consume(msg jsonrpc.Message) (bool, func(yield func())) {
	if c.pending != nil {
		if r, ok := msg.(*jsonrpc.Response); ok {
			if id, ok := r.ID.Raw().(string); ok && strings.HasPrefix(id, ownIDPrefix) {
				call := c.take(id)
				if call == nil {
					// A response nobody waits for answers a call given
					// up on: it is dropped.
					return true, nil
				}
				return true, func(yield func()) {
					result, err := r.Result, error(nil)
					if r.Error != nil {
						result, err = nil, r.Error
					}
					call.answer(yield, result, err)
				}
			}
		}
	}
	if c.tap == nil {
		return false, nil
	}
	return c.tap.Inbound(c, msg)
}

// Send makes a call of the engine's own on a client connection: it
// writes the request, with params already encoded (compact JSON), and
// hands the answer to then, on the connection's reader when the
// response comes (see [Reply]). No goroutine waits for the response.
// When ctx ends first, the peer is told the call is cancelled, as the
// go-sdk's client does, and then gets ctx's error. A panic in then goes
// to ctx's panic handler (turn.WithPanicHandler), if it has one.
func (c *Conn) Send(ctx context.Context, method string, params json.RawMessage, then Reply) {
	if c.pending == nil {
		then(turn.NoYield, nil, errors.New("a call on a connection that is not a client's"))
		return
	}
	id := ownIDPrefix + strconv.FormatUint(c.nextID.Add(1), 10)
	req := jsonwire.AppendRequest(make([]byte, 0, len(params)+len(method)+64), id, method, params)
	call := &ownCall{ctx: ctx, reply: then}
	c.pendMu.Lock()
	if err := c.ended; err != nil {
		c.pendMu.Unlock()
		call.answer(turn.NoYield, nil, err)
		return
	}
	c.pending[id] = call
	// Registered before the request is written: the response may come
	// before the write returns.
	call.unwatch = context.AfterFunc(ctx, func() {
		if c.take(id) != nil {
			c.cancelCall(id, ctx.Err())
			call.answer(turn.NoYield, nil, ctx.Err())
		}
	})
	c.pendMu.Unlock()
	if err := c.WriteLine(req); err != nil {
		if c.take(id) != nil {
			call.answer(turn.NoYield, nil, fmt.Errorf("writing %s: %w", method, err))
		}
	}
}

// Sent is the number of calls of the engine's own made on c.
func (c *Conn) Sent() uint64 { return c.nextID.Load() }

// Pending is the number of calls of the engine's own in flight on c.
func (c *Conn) Pending() int {
	c.pendMu.Lock()
	defer c.pendMu.Unlock()
	return len(c.pending)
}

// take removes the call with id from those in flight, stops the watch
// on its context, and returns it; it returns nil when the call is not
// (or no longer) in flight. Whoever takes a call answers it.
func (c *Conn) take(id string) *ownCall {
	c.pendMu.Lock()
	call := c.pending[id]
	delete(c.pending, id)
	c.pendMu.Unlock()
	if call != nil {
		call.unwatch()
	}
	return call
}

// endCalls answers every call in flight with err, each on its own
// goroutine (a reply may wait), and refuses calls from now on.
func (c *Conn) endCalls(err error) {
	if c.pending == nil {
		return
	}
	c.pendMu.Lock()
	if c.ended == nil {
		c.ended = err
	}
	calls := make([]*ownCall, 0, len(c.pending))
	for _, call := range c.pending {
		calls = append(calls, call)
	}
	clear(c.pending)
	c.pendMu.Unlock()
	for _, call := range calls {
		call.unwatch() // taken here, not by take
		go call.answer(turn.NoYield, nil, err)
	}
}

// answer runs the call's reply. A panic in it goes to the handler that
// the call's context carries (turn.WithPanicHandler), which answers for
// the call; without one, it is a panic.
func (call *ownCall) answer(yield func(), result json.RawMessage, err error) {
	if h := turn.PanicHandler(call.ctx); h != nil {
		defer func() {
			if v := recover(); v != nil {
				h(v)
			}
		}()
	}
	call.reply(yield, result, err)
}

// cancelCall tells the peer that the engine gave up on call id.
func (c *Conn) cancelCall(id string, why error) {
	note, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled",
		"params": map[string]any{"requestId": id, "reason": why.Error()}})
	_ = c.WriteLine(note)
}
