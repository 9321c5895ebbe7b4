package line

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/engine/internal/turn"
)

// defaultMaxMessage bounds one inbound JSON-RPC message when the caller
// sets no limit: the go-sdk's default line length.
const defaultMaxMessage = mcp.DefaultMaxLineLength

// Transport speaks newline-delimited JSON-RPC over a reader and a
// writer, as the MCP stdio transport does (see the package doc). The
// zero values of its options are the go-sdk's behaviour: the go-sdk's
// bound on a message, no tap, no calls of the engine's own, no check.
type Transport struct {
	Reader io.ReadCloser
	Writer io.WriteCloser
	// MaxMessage bounds the bytes buffered for one inbound message;
	// zero means the go-sdk's default line length, negative no bound.
	MaxMessage int
	// Tap, when set, sees each inbound message before the go-sdk does
	// and may answer it itself.
	Tap Tap
	// Client marks the engine's end of an upstream connection: besides
	// the go-sdk's client, the engine makes calls of its own on it
	// ([Conn.Send]).
	Client bool
	// PeerMethods, on a client connection, lists the methods of the
	// server's requests that the client answers; the others are refused
	// before they are decoded ([PeerRequests]). Nil admits any.
	PeerMethods []string
	// Check, when set, checks that work on the connection's reader (a
	// tap's work, a reply) yields before it blocks; see [turn.Check].
	// Tests set it.
	Check *turn.Check
}

// A Tap sees a connection's inbound messages on its reader's goroutine,
// before they reach the go-sdk.
type Tap interface {
	// Inbound reports whether it consumed msg; a consumed message never
	// reaches the go-sdk. It must not block; work it returns runs on the
	// reader's goroutine, which stays the reader until the work calls
	// yield: then another goroutine reads on. Work must yield before it
	// waits on anything that may take long, above all on a peer: while
	// it holds the reader, no message is read (see engine/internal/turn).
	Inbound(c *Conn, msg jsonrpc.Message) (consumed bool, work func(yield func()))
	// Outbound sees each message the go-sdk writes.
	Outbound(msg jsonrpc.Message)
	// Drain waits, before the connection closes, for the answers the
	// tap is still writing.
	Drain()
}

// Connect starts the connection's reader. The connection it returns is
// a *[Conn].
func (t *Transport) Connect(context.Context) (mcp.Connection, error) {
	max := t.MaxMessage
	if max == 0 {
		max = defaultMaxMessage
	}
	c := &Conn{r: t.Reader, w: t.Writer, tap: t.Tap, check: t.Check, incoming: make(chan inMsg), closed: make(chan struct{}),
		lanes: make(chan *reader)}
	if t.Client {
		c.pending = map[string]*ownCall{}
		c.peer = NewPeerRequests(max, t.PeerMethods)
	}
	go c.readLoop(max)
	return c, nil
}

// inMsg is one decoded inbound message, or the error that ended the
// stream.
type inMsg struct {
	msg jsonrpc.Message
	err error
}

// Conn is a connection of [Transport]: an mcp.Connection, with the
// engine's own calls ([Conn.Send]) and answers ([Conn.WriteLine]).
type Conn struct {
	r io.ReadCloser
	w io.WriteCloser

	incoming chan inMsg
	closed   chan struct{}

	writeMu   sync.Mutex
	buf       []byte // the write buffer, reused under writeMu
	closeOnce sync.Once
	closeErr  error

	tap   Tap
	check *turn.Check

	// readEnd makes endRead run once.
	readEnd sync.Once
	// lanes hands the reader's state to an idle lane.
	lanes chan *reader

	// The engine's own calls (client connections only): pending maps
	// the id of each call in flight to where its answer goes; it is nil
	// on a connection that makes none. Once the connection ended, ended
	// is why, and no call is added.
	pendMu  sync.Mutex
	pending map[string]*ownCall
	ended   error
	nextID  atomic.Uint64

	// peer bounds the requests the server has in flight to the go-sdk's
	// client (client connections only; nil otherwise).
	peer *PeerRequests
}

// ErrMessageTooLarge means one inbound message exceeded the connection's
// bound before it was complete.
var ErrMessageTooLarge = errors.New("inbound JSON-RPC message exceeds the size limit (limits.maxMessageBytes, or VOLTMCP_MAX_MESSAGE_BYTES)")

// ErrConnClosed means the connection ended while a call waited.
var ErrConnClosed = errors.New("connection closed")

// readLoop decodes messages until the stream ends or fails, and hands
// them to Read. It runs on its own goroutine so that Close can unblock a
// Read waiting for input even when the underlying reader does not
// unblock on close.
func (c *Conn) readLoop(max int) {
	c.lane(newReader(c.r, max, c.peer))
}

// laneIdle is how long a goroutine that ran a tap's work waits to read
// again before it ends.
const laneIdle = 10 * time.Second

// lane reads with r and, when the tap hands it work, does the work
// itself (turn.Hold). When the work yields (it is about to wait), the
// lane gives r to another goroutine (an idle lane, or a new one), which
// reads on; after the work it waits to become the reader again, on a
// stack already grown to what such work needs. Work that never yields
// (an answer made without waiting) costs no handoff: the lane reads on.
// Only one lane holds r at a time, so messages reach the go-sdk in
// order.
func (c *Conn) lane(r *reader) {
	for {
		work, ended := c.read(r)
		if ended {
			c.endRead(nil)
			return
		}
		held := r
		if !turn.Hold(work, func() {
			select {
			case c.lanes <- held:
			default:
				go c.lane(held)
			}
		}, c.check) {
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
func (c *Conn) read(r *reader) (work func(yield func()), ended bool) {
	for {
		msg, refused, err := r.message()
		if err != nil {
			// Before the go-sdk hears of it and closes the connection:
			// a call waiting on the connection then sees why it ended.
			c.endRead(err)
		} else if refused != nil {
			if work := c.refuse(*refused); work != nil {
				return work, false
			}
			continue
		} else if ok, work := c.consume(msg); ok {
			if work != nil {
				return work, false
			}
			continue
		}
		select {
		case c.incoming <- inMsg{msg, err}:
		case <-c.closed:
			return nil, true
		}
		if err != nil {
			return nil, true
		}
	}
}

// refuse answers the request id, a request from the server past its
// bound (PeerRequests) that the reader dropped, with an error: it
// returns the work that writes the answer, or nil when it gets none.
// The work yields before it writes: a server that floods requests may
// not read the answers.
func (c *Conn) refuse(r Refused) func(yield func()) {
	resp, written, ok := c.peer.Refusal(r.ID, r.Why)
	if !ok {
		return nil
	}
	data, err := jsonrpc.EncodeMessage(resp)
	if err != nil {
		written()
		return nil
	}
	return func(yield func()) {
		defer written()
		yield()
		_ = c.WriteLine(data)
	}
}

// endRead ends the calls in flight, once, with why the reading ended
// (nil for the end of the stream), such as a message over the size
// limit.
func (c *Conn) endRead(err error) {
	c.readEnd.Do(func() {
		if err == nil {
			err = io.EOF
		}
		c.endCalls(fmt.Errorf("%w: %w", ErrConnClosed, err))
	})
}

// Read returns the next inbound message.
func (c *Conn) Read(ctx context.Context) (jsonrpc.Message, error) {
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
func (c *Conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	default:
	}
	if c.tap != nil {
		c.tap.Outbound(msg)
	}
	if r, ok := msg.(*jsonrpc.Response); ok && c.peer != nil {
		c.peer.Done(r.ID)
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("marshaling message: %w", err)
	}
	return c.WriteLine(data)
}

// WriteLine writes one encoded message and its newline in one write, as
// [Conn.Write] does; it is how a tap's work answers.
func (c *Conn) WriteLine(data []byte) error {
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
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		if c.tap != nil {
			c.tap.Drain()
		}
		close(c.closed)
		c.endCalls(ErrConnClosed)
		c.closeErr = errors.Join(c.r.Close(), c.w.Close())
	})
	return c.closeErr
}

// SessionID is empty: a stdio connection has no session id.
func (c *Conn) SessionID() string { return "" }
