package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// defaultMaxMessage bounds one inbound JSON-RPC message on a stdio
// connection when the caller sets no limit: the SDK's default line length.
const defaultMaxMessage = mcp.DefaultMaxLineLength

// lineTransport speaks newline-delimited JSON-RPC over a reader and a
// writer, as the MCP stdio transport does. It replaces the SDK's
// IOTransport on both of the engine's stdio hops (the agent's side of
// `voltmcp serve` and each stdio upstream) because it reads a message
// once, a line at a time from a read buffer reused across messages
// (lineReader), where the SDK's decoder allocates a fresh 32 KiB buffer
// for each of its three decoding passes. On a proxied call that is most
// of the garbage, and on a small machine garbage is latency
// (docs/benchmarks.md). The wire behaviour is the SDK's, except that
// JSON-RPC batches are refused: MCP removed them in 2025-06-18.
type lineTransport struct {
	r io.ReadCloser
	w io.WriteCloser
	// max bounds the bytes buffered for one inbound message; zero means
	// defaultMaxMessage, negative means no bound.
	max int
	// tap, when set, sees each inbound message before the SDK does and
	// may answer it itself (see leanServe).
	tap lineTap
	// client marks the engine's end of an upstream connection: besides
	// the SDK's client, the engine makes calls of its own on it
	// (roundTrip).
	client bool
}

// A lineTap sees a connection's inbound messages on its reader's
// goroutine, before they reach the SDK.
type lineTap interface {
	// inbound reports whether it consumed msg; a consumed message never
	// reaches the SDK. It must not block; work it returns runs on the
	// reader's goroutine, which stays the reader until the work calls
	// yield: then another goroutine reads on (lineConn.lane). Work must
	// yield before it waits on anything that may take long, above all
	// on a peer: while it holds the reader, no message is read.
	inbound(c *lineConn, msg jsonrpc.Message) (consumed bool, work func(yield func()))
	// outbound sees each message the SDK writes.
	outbound(msg jsonrpc.Message)
	// drain waits, before the connection closes, for the answers the
	// tap is still writing.
	drain()
}

// Connect starts the connection's reader.
func (t *lineTransport) Connect(context.Context) (mcp.Connection, error) {
	max := t.max
	if max == 0 {
		max = defaultMaxMessage
	}
	c := &lineConn{r: t.r, w: t.w, tap: t.tap, incoming: make(chan lineMsg), closed: make(chan struct{}),
		lanes: make(chan *lineReader)}
	if t.client {
		c.pending = map[string]*ownCall{}
	}
	go c.readLoop(max)
	return c, nil
}

// lineMsg is one decoded inbound message, or the error that ended the
// stream.
type lineMsg struct {
	msg jsonrpc.Message
	err error
}

// lineConn is a connection of lineTransport.
type lineConn struct {
	r io.ReadCloser
	w io.WriteCloser

	incoming chan lineMsg
	closed   chan struct{}

	writeMu   sync.Mutex
	buf       []byte // the write buffer, reused under writeMu
	closeOnce sync.Once
	closeErr  error

	tap lineTap

	// readEnd makes endRead run once.
	readEnd sync.Once
	// lanes hands the reader's state to an idle lane.
	lanes chan *lineReader

	// The engine's own calls (client connections only): pending maps
	// the id of each call in flight to where its answer goes; it is nil
	// on a connection that makes none. Once the connection ended, ended
	// is why, and no call is added.
	pendMu  sync.Mutex
	pending map[string]*ownCall
	ended   error
	nextID  atomic.Uint64
}

// A reply receives the answer to one of the engine's own calls: the
// response's result, or why there is none (a *jsonrpc.Error for an
// error response). It is called once. When the response arrives, the
// reply runs on the connection's reader, as a tap's work does (see
// lineTap): yield lets the reader go, and the reply must call it before
// it waits on anything that may take long. Called otherwise (the call's
// context ended, the connection closed, the write failed), yield does
// nothing.
type reply func(yield func(), result json.RawMessage, err error)

// ownCall is one of the engine's own calls in flight.
type ownCall struct {
	ctx   context.Context
	reply reply
	// unwatch stops the watch on ctx (context.AfterFunc).
	unwatch func() bool
}

// errMessageTooLarge means one inbound message exceeded the connection's
// bound before it was complete.
var errMessageTooLarge = errors.New("inbound JSON-RPC message exceeds the size limit (limits.maxMessageBytes, or VOLTMCP_MAX_MESSAGE_BYTES)")

// errBatch refuses a JSON-RPC batch.
var errBatch = errors.New("JSON-RPC batches are not supported (MCP removed them in protocol 2025-06-18)")

// readLoop decodes messages until the stream ends or fails, and hands
// them to Read. It runs on its own goroutine so that Close can unblock a
// Read waiting for input even when the underlying reader does not
// unblock on close.
func (c *lineConn) readLoop(max int) {
	c.lane(newLineReader(c.r, max))
}

// laneIdle is how long a goroutine that ran a tap's work waits to read
// again before it ends.
const laneIdle = 10 * time.Second

// lane reads with r and, when the tap hands it work, does the work
// itself. When the work yields (it is about to wait), the lane gives r
// to another goroutine (an idle lane, or a new one), which reads on;
// after the work it waits to become the reader again, on a stack
// already grown to what such work needs. Work that never yields (an
// answer made without waiting) costs no handoff: the lane reads on. Only
// one lane holds r at a time, so messages reach the SDK in order.
func (c *lineConn) lane(r *lineReader) {
	for {
		work, ended := c.read(r)
		if ended {
			c.endRead(nil)
			return
		}
		var handed atomic.Bool
		work(func() {
			if handed.CompareAndSwap(false, true) {
				select {
				case c.lanes <- r:
				default:
					go c.lane(r)
				}
			}
		})
		if handed.CompareAndSwap(false, true) {
			continue // the work did not yield: still the reader
		}
		idle := time.NewTimer(laneIdle)
		select {
		case r = <-c.lanes:
			idle.Stop()
		case <-idle.C:
			return
		case <-c.closed:
			idle.Stop()
			return
		}
	}
}

// read decodes messages until the stream ends or fails (ended) or the
// tap hands it work to run.
func (c *lineConn) read(r *lineReader) (work func(yield func()), ended bool) {
	for {
		msg, err := r.message()
		if err != nil {
			// Before the SDK hears of it and closes the connection: a
			// call waiting on the connection then sees why it ended.
			c.endRead(err)
		} else if ok, work := c.consume(msg); ok {
			if work != nil {
				return work, false
			}
			continue
		}
		select {
		case c.incoming <- lineMsg{msg, err}:
		case <-c.closed:
			return nil, true
		}
		if err != nil {
			return nil, true
		}
	}
}

// endRead ends the calls in flight, once, with why the reading ended
// (nil for the end of the stream), such as a message over the size
// limit.
func (c *lineConn) endRead(err error) {
	c.readEnd.Do(func() {
		if err == nil {
			err = io.EOF
		}
		c.endCalls(fmt.Errorf("%w: %w", errConnClosed, err))
	})
}

// Read returns the next inbound message.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	default:
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case m := <-c.incoming:
		return m.msg, m.err
	case <-c.closed:
		return nil, io.EOF
	}
}

// Write sends one message as one line, in one write.
func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	default:
	}
	if c.tap != nil {
		c.tap.outbound(msg)
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("marshaling message: %w", err)
	}
	return c.writeLine(data)
}

// writeLine writes one encoded message and its newline in one write.
func (c *lineConn) writeLine(data []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.buf = append(append(c.buf[:0], data...), '\n')
	_, err := c.w.Write(c.buf)
	if cap(c.buf) > 64<<10 {
		c.buf = nil // do not keep a large result's buffer
	}
	return err
}

// Close closes both directions; it is safe to call more than once.
func (c *lineConn) Close() error {
	c.closeOnce.Do(func() {
		if c.tap != nil {
			c.tap.drain()
		}
		close(c.closed)
		c.endCalls(errConnClosed)
		c.closeErr = errors.Join(c.r.Close(), c.w.Close())
	})
	return c.closeErr
}

// SessionID is empty: a stdio connection has no session id.
func (c *lineConn) SessionID() string { return "" }

// frameLimit bounds the bytes read for one message once lineReader has
// handed the stream to encoding/json's decoder. The decoder reads
// ahead, so the count is of bytes read from the stream since the end of
// the previous message, including any of the next message already
// buffered: the bound is exact to within the decoder's read size.
type frameLimit struct {
	r   io.Reader
	n   int // the bound
	got int // bytes read for the current message
	hit bool
}

func (f *frameLimit) Read(p []byte) (int, error) {
	if f.got >= f.n {
		f.hit = true
		return 0, io.ErrUnexpectedEOF
	}
	if len(p) > f.n-f.got {
		p = p[:f.n-f.got]
	}
	n, err := f.r.Read(p)
	f.got += n
	return n, err
}

// reset starts the count of a new message, crediting the bytes the
// decoder has already buffered past the previous one.
func (f *frameLimit) reset(buffered io.Reader) {
	rest := 0
	if b, ok := buffered.(*bytes.Reader); ok {
		rest = b.Len()
	}
	f.got = rest
}

// ownIDPrefix starts the id of each call the engine makes itself on a
// client connection. The SDK's client numbers its calls, so a string id
// with this prefix is never one of the SDK's.
const ownIDPrefix = "voltmcp-"

// consume routes a decoded message that is not the SDK's: the response
// to one of the engine's own calls, or a message the tap answers. It
// reports whether msg was consumed, and the work the tap wants run for
// it, if any.
func (c *lineConn) consume(msg jsonrpc.Message) (bool, func(yield func())) {
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
	return c.tap.inbound(c, msg)
}

// errConnClosed means the connection ended while a call waited.
var errConnClosed = errors.New("connection closed")

// send makes a call of the engine's own on a client connection: it
// writes the request, with params already encoded, and hands the answer
// to then, on the connection's reader when the response comes (see
// reply). No goroutine waits for the response. When ctx ends first,
// the peer is told the call is cancelled, as the SDK's client does, and
// then gets ctx's error.
func (c *lineConn) send(ctx context.Context, method string, params json.RawMessage, then reply) {
	if c.pending == nil {
		then(noYield, nil, errors.New("a call on a connection that is not a client's"))
		return
	}
	id := ownIDPrefix + strconv.FormatUint(c.nextID.Add(1), 10)
	req := make([]byte, 0, len(params)+len(method)+64)
	req = append(req, `{"jsonrpc":"2.0","id":"`...)
	req = append(req, id...)
	req = append(req, `","method":"`...)
	req = append(req, method...) // a method name of the spec's: no character to escape
	req = append(req, `","params":`...)
	req = append(req, params...)
	req = append(req, '}')
	call := &ownCall{ctx: ctx, reply: then}
	c.pendMu.Lock()
	if err := c.ended; err != nil {
		c.pendMu.Unlock()
		call.answer(noYield, nil, err)
		return
	}
	c.pending[id] = call
	// Registered before the request is written: the response may come
	// before the write returns.
	call.unwatch = context.AfterFunc(ctx, func() {
		if c.take(id) != nil {
			c.cancelCall(id, ctx.Err())
			call.answer(noYield, nil, ctx.Err())
		}
	})
	c.pendMu.Unlock()
	if err := c.writeLine(req); err != nil {
		if c.take(id) != nil {
			call.answer(noYield, nil, fmt.Errorf("writing %s: %w", method, err))
		}
	}
}

// take removes the call with id from those in flight, stops the watch
// on its context, and returns it; it returns nil when the call is not
// (or no longer) in flight. Whoever takes a call answers it.
func (c *lineConn) take(id string) *ownCall {
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
func (c *lineConn) endCalls(err error) {
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
		go call.answer(noYield, nil, err)
	}
}

// answer runs the call's reply. A panic in it goes to the handler that
// the call's context carries (withPanicHandler), which answers for the
// call; without one, it is a panic.
func (call *ownCall) answer(yield func(), result json.RawMessage, err error) {
	if h, _ := call.ctx.Value(panicHandlerKey{}).(func(any)); h != nil {
		defer func() {
			if v := recover(); v != nil {
				h(v)
			}
		}()
	}
	call.reply(yield, result, err)
}

// noYield is the yield of a reply that does not run on a reader.
func noYield() {}

type panicHandlerKey struct{}

// withPanicHandler returns a context whose calls on a connection (send)
// hand a panic in their reply to h: a reply runs on the connection's
// reader, where a panic would end the process.
func withPanicHandler(ctx context.Context, h func(v any)) context.Context {
	return context.WithValue(ctx, panicHandlerKey{}, h)
}

// cancelCall tells the peer that the engine gave up on call id.
func (c *lineConn) cancelCall(id string, why error) {
	note, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled",
		"params": map[string]any{"requestId": id, "reason": why.Error()}})
	_ = c.writeLine(note)
}

type readerYieldKey struct{}

// withReaderYield returns a context carrying the yield of work that runs
// on a connection's reader: a lean call (lineTap) or a reply.
func withReaderYield(ctx context.Context, yield func()) context.Context {
	return context.WithValue(ctx, readerYieldKey{}, yield)
}

// yieldReader lets the reader go when ctx is that of work that still
// holds it: whatever may wait long calls it first (lineTap, reply).
func yieldReader(ctx context.Context) {
	if yield, _ := ctx.Value(readerYieldKey{}).(func()); yield != nil {
		yield()
	}
}

// readerYield is yieldReader(ctx) as the yield a continuation gets when
// it is called on the goroutine whose context is ctx (see reply).
func readerYield(ctx context.Context) func() {
	return func() { yieldReader(ctx) }
}

// await runs start, which hands its result to then once, perhaps on
// another goroutine (a connection's reader, see reply), and waits for
// it. While it waits, ctx's reader is let go. A panic in a reply of
// start's calls is raised again here, on the goroutine that waits, as
// if start had run here.
func await[T any](ctx context.Context, start func(ctx context.Context, then func(yield func(), v T))) T {
	var (
		v     T
		fault any
		once  sync.Once
		done  = make(chan struct{})
	)
	ctx = withPanicHandler(ctx, func(p any) {
		once.Do(func() {
			fault = p
			close(done)
		})
	})
	start(ctx, func(_ func(), r T) {
		once.Do(func() {
			v = r
			close(done)
		})
	})
	select {
	case <-done:
	default:
		yieldReader(ctx)
		<-done
	}
	if fault != nil {
		panic(fault)
	}
	return v
}
