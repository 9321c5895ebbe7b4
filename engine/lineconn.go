package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// defaultMaxMessage bounds one inbound JSON-RPC message on a stdio
// connection when the caller sets no limit: the SDK's default line length.
const defaultMaxMessage = mcp.DefaultMaxLineLength

// lineTransport speaks newline-delimited JSON-RPC over a reader and a
// writer, as the MCP stdio transport does. It replaces the SDK's
// IOTransport on both of the engine's stdio hops (the agent's side of
// `voltmcp serve` and each stdio upstream) because it decodes a message
// with one pass of encoding/json and a read buffer reused across
// messages, where the SDK's decoder allocates a fresh 32 KiB buffer for
// each of its three decoding passes. On a proxied call that is most of
// the garbage, and on a small machine garbage is latency
// (docs/benchmarks.md). The wire behaviour is the SDK's, except that
// JSON-RPC batches are refused: MCP removed them in 2025-06-18.
type lineTransport struct {
	r io.ReadCloser
	w io.WriteCloser
	// max bounds the bytes buffered for one inbound message; zero means
	// defaultMaxMessage, negative means no bound.
	max int
}

// Connect starts the connection's reader.
func (t *lineTransport) Connect(context.Context) (mcp.Connection, error) {
	max := t.max
	if max == 0 {
		max = defaultMaxMessage
	}
	c := &lineConn{r: t.r, w: t.w, incoming: make(chan lineMsg), closed: make(chan struct{})}
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
	var lim *frameLimit
	var src io.Reader = c.r
	if max > 0 {
		lim = &frameLimit{r: c.r, n: max}
		src = lim
	}
	dec := json.NewDecoder(src)
	for {
		msg, err := decodeMessage(dec)
		if errors.Is(err, io.ErrUnexpectedEOF) && lim != nil && lim.hit {
			err = errMessageTooLarge
		}
		select {
		case c.incoming <- lineMsg{msg, err}:
		case <-c.closed:
			return
		}
		if err != nil {
			return
		}
		if lim != nil {
			lim.reset(dec.Buffered())
		}
	}
}

// wireMessage is a JSON-RPC message as sent: a request, a notification
// or a response.
type wireMessage struct {
	Version string          `json:"jsonrpc"`
	ID      any             `json:"id"`
	Method  *string         `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *jsonrpc.Error  `json:"error"`
}

// decodeMessage reads the next message from dec.
func decodeMessage(dec *json.Decoder) (jsonrpc.Message, error) {
	var w wireMessage
	if err := dec.Decode(&w); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		if te := (*json.UnmarshalTypeError)(nil); errors.As(err, &te) && te.Value == "array" && te.Field == "" {
			return nil, errBatch
		}
		return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
	}
	if w.Version != "2.0" {
		return nil, fmt.Errorf("invalid message version tag %q; expected %q", w.Version, "2.0")
	}
	id, err := jsonrpc.MakeID(w.ID)
	if err != nil {
		return nil, err
	}
	if w.Method != nil {
		return &jsonrpc.Request{ID: id, Method: *w.Method, Params: w.Params}, nil
	}
	if !id.IsValid() {
		return nil, errors.New("JSON RPC invalid request: a response without an id")
	}
	resp := &jsonrpc.Response{ID: id, Result: w.Result}
	if w.Error != nil {
		resp.Error = w.Error
	}
	return resp, nil
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
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("marshaling message: %w", err)
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.buf = append(append(c.buf[:0], data...), '\n')
	_, err = c.w.Write(c.buf)
	if cap(c.buf) > 64<<10 {
		c.buf = nil // do not keep a large result's buffer
	}
	return err
}

// Close closes both directions; it is safe to call more than once.
func (c *lineConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.closeErr = errors.Join(c.r.Close(), c.w.Close())
	})
	return c.closeErr
}

// SessionID is empty: a stdio connection has no session id.
func (c *lineConn) SessionID() string { return "" }

// frameLimit bounds the bytes read for one message. The decoder reads
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
