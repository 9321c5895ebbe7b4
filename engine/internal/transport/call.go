package transport

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/engine/internal/jsonwire"
)

// Caller makes the engine's own tools/calls on a Streamable HTTP
// session that the go-sdk's client opened, past that client's dispatch:
// one POST with the call encoded once, its answer (a JSON body or an
// event stream) read and decoded on the goroutine that made the call.
// Give it the session's HTTP client, so that every request carries the
// server's headers, stays on the server's origin and is bounded as the
// SDK's requests are (HeaderTransport). Set every field but nextID.
type Caller struct {
	Client   *http.Client
	Endpoint string
	Session  string // the Mcp-Session-Id the server gave the SDK's client
	Protocol string // the protocol version the session speaks
	Max      int    // the bound of one message, in bytes
	TooLarge error  // the error of a message past Max
	nextID   atomic.Uint64
	// replying counts the answers to server requests being posted; past
	// maxReplying a request gets no answer (see reply).
	replying atomic.Int32
}

// maxReplying is how many answers to a server's requests a Caller posts
// at once: a server that floods requests on a call's stream gets no
// answer past it, rather than a goroutine each.
const maxReplying = 16

// Made reports how many calls h has made.
func (h *Caller) Made() uint64 { return h.nextID.Load() }

// ErrRetrySDK means the server refused a call before reading it (the
// session is unknown to it, or its authorization lapsed): the SDK's
// client, which handles both, should make the call instead.
var ErrRetrySDK = errors.New("the server refused the request before reading it")

// Call makes one tools/call and returns its result, raw and valid
// JSON. params is the call's encoded params (encodeCallParams);
// progress gets the call's progress notifications and listChanged the
// method of each list_changed notification the server sends on the
// call's stream. When ctx ends first, the server is told the call is
// cancelled.
func (h *Caller) Call(ctx context.Context, params []byte, progress func(*mcp.ProgressNotificationParams), listChanged func(method string)) (json.RawMessage, error) {
	id := "voltmcp-h" + strconv.FormatUint(h.nextID.Add(1), 10)
	body := jsonwire.AppendRequest(make([]byte, 0, len(params)+len(id)+64), id, "tools/call", params)
	res, err := h.exchange(ctx, id, body, progress, listChanged)
	if err != nil && ctx.Err() != nil {
		h.cancelled(ctx, id, context.Cause(ctx))
	}
	return res, err
}

// exchange posts the call id and reads its answer.
func (h *Caller) exchange(ctx context.Context, id string, body []byte, progress func(*mcp.ProgressNotificationParams), listChanged func(method string)) (json.RawMessage, error) {
	resp, err := h.post(ctx, body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound:
		return nil, ErrRetrySDK
	default:
		return nil, fmt.Errorf("the server answered the call with HTTP %d", resp.StatusCode)
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		data, err := io.ReadAll(io.LimitReader(resp.Body, int64(h.Max)+1))
		if err != nil {
			return nil, err
		}
		if len(data) > h.Max {
			return nil, h.TooLarge
		}
		return h.answer(ctx, id, data, progress, listChanged)
	case "text/event-stream":
		res, err := h.events(ctx, id, resp.Body, progress, listChanged)
		if err == nil {
			drain(resp.Body)
		}
		return res, err
	}
	return nil, fmt.Errorf("the server answered the call with content type %q", ct)
}

// drainWait is how long drain waits for the end of a call's event
// stream after its answer.
const drainWait = 100 * time.Millisecond

// drain reads what is left of a call's event stream after its answer,
// so that its connection goes back to the pool: a server ends the
// stream after the answer (the spec says it should), and a body closed
// before its end costs the next call a new connection. A stream still
// open after drainWait, or past 64 KiB, is closed instead.
func drain(body io.ReadCloser) {
	t := time.AfterFunc(drainWait, func() { body.Close() })
	_, _ = io.Copy(io.Discard, io.LimitReader(body, 64<<10))
	t.Stop()
}

// post sends one JSON-RPC message on the session.
func (h *Caller) post(ctx context.Context, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.Endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", h.Protocol)
	if h.Session != "" {
		req.Header.Set("Mcp-Session-Id", h.Session)
	}
	return h.Client.Do(req)
}

// events reads an event stream until the response to id.
func (h *Caller) events(ctx context.Context, id string, body io.Reader, progress func(*mcp.ProgressNotificationParams), listChanged func(string)) (json.RawMessage, error) {
	er := eventReader{r: bufio.NewReaderSize(body, 4096), max: h.Max, tooLarge: h.TooLarge}
	for {
		data, err := er.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, errors.New("the server ended the call's event stream without an answer")
			}
			return nil, err
		}
		res, err := h.answer(ctx, id, data, progress, listChanged)
		if res != nil || err != nil {
			return res, err
		}
	}
}

// eventReader reads the messages of an event stream: lines end at LF (a
// CR before it is dropped), each of at most max bytes (else tooLarge);
// the values of an event's data fields, joined by LFs, are its message;
// an empty line ends the event. An event the stream's end cuts short
// is dropped.
type eventReader struct {
	r        *bufio.Reader
	max      int
	tooLarge error
	data     []byte // the message of the event being read
}

// next returns the message of the next event that has one, valid until
// the next call; at the end of the stream, io.EOF.
func (e *eventReader) next() ([]byte, error) {
	e.data = e.data[:0]
	for {
		line, err := readLine(e.r, e.max, e.tooLarge)
		if err != nil {
			return nil, err
		}
		if len(line) == 0 {
			// An empty line ends an event: its data is one message.
			if len(e.data) > 0 {
				return e.data, nil
			}
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		if string(field) == "data" {
			if len(e.data) > 0 {
				e.data = append(e.data, '\n')
			}
			e.data = append(e.data, value...)
		}
	}
}

// BrokenAnswer is an answer the server sent that is not a JSON-RPC
// message: the SDK's client ends the session for it, and so should the
// caller of a Caller.
type BrokenAnswer struct{ Err error }

func (b *BrokenAnswer) Error() string { return b.Err.Error() }
func (b *BrokenAnswer) Unwrap() error { return b.Err }

// readLine reads one line of at most max bytes, without its end.
func readLine(r *bufio.Reader, max int, tooLarge error) ([]byte, error) {
	var line []byte
	for {
		frag, err := r.ReadSlice('\n')
		if len(line)+len(frag) > max+2 {
			return nil, tooLarge
		}
		line = append(line, frag...)
		if err == nil {
			break
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			if len(line) > 0 && errors.Is(err, io.EOF) {
				break
			}
			return nil, err
		}
	}
	// Without its LF and the CRs before it, as the go-sdk reads a line
	// of an event stream.
	return bytes.TrimRight(bytes.TrimSuffix(line, []byte("\n")), "\r"), nil
}

// answer reads one message of the call's answer: the result (or error)
// for id ends the call; a notification is handled; a request of the
// server's is answered as the SDK's client answers it. It returns nil,
// nil for a message that does not end the call.
func (h *Caller) answer(ctx context.Context, id string, data []byte, progress func(*mcp.ProgressNotificationParams), listChanged func(string)) (json.RawMessage, error) {
	// The SDK's decoder, as the SDK's client decodes an HTTP answer:
	// the same nesting limit (sdkJSONDepth), the same errors.
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		return nil, &BrokenAnswer{fmt.Errorf("failed to decode event: %w", err)}
	}
	switch m := msg.(type) {
	case *jsonrpc.Response:
		if rid, _ := m.ID.Raw().(string); rid != id {
			return nil, nil // not this call's
		}
		if m.Error != nil {
			return nil, m.Error
		}
		if m.Result == nil {
			return nil, errors.New("the server's answer carries neither a result nor an error")
		}
		return m.Result, nil
	case *jsonrpc.Request:
		if !m.IsCall() {
			switch m.Method {
			case "notifications/progress":
				var p mcp.ProgressNotificationParams
				if progress != nil && json.Unmarshal(m.Params, &p) == nil {
					progress(&p)
				}
			case "notifications/tools/list_changed", "notifications/resources/list_changed", "notifications/prompts/list_changed":
				if listChanged != nil {
					listChanged(m.Method)
				}
			}
			return nil, nil
		}
		h.reply(ctx, m)
		return nil, nil
	}
	return nil, nil
}

// reply answers a request the server made on the call's stream: a ping
// and roots/list as the SDK's client answers them (voltmcp gives no
// roots), anything else as a method it does not have: the engine's
// client declares no sampling or elicitation when it makes lean calls.
func (h *Caller) reply(ctx context.Context, req *jsonrpc.Request) {
	resp := &jsonrpc.Response{ID: req.ID}
	switch req.Method {
	case "ping":
		resp.Result = json.RawMessage(`{}`)
	case "roots/list":
		resp.Result = json.RawMessage(`{"roots":[]}`)
	default:
		resp.Error = &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found"}
	}
	if id, ok := req.ID.Raw().(string); ok && len(id) > 256 {
		return // an id too long to echo: the request was read and dropped
	}
	data, err := jsonrpc.EncodeMessage(resp)
	if err != nil {
		return
	}
	if h.replying.Add(1) > maxReplying {
		h.replying.Add(-1)
		return
	}
	// On its own goroutine: the server may hold this POST until the
	// call's stream, which this goroutine reads, moves on.
	go func() {
		defer h.replying.Add(-1)
		h.send(ctx, data)
	}()
}

// cancelled tells the server the engine gave up on the call id, as the
// SDK's client does, without waiting for the server.
func (h *Caller) cancelled(ctx context.Context, id string, why error) {
	note, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled",
		"params": map[string]any{"requestId": id, "reason": why.Error()}})
	go h.send(ctx, note)
}

// send posts a message that needs no answer (a reply, a notification),
// within 10 s of now whatever ctx does, and drops the server's answer.
func (h *Caller) send(ctx context.Context, msg []byte) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if resp, err := h.post(ctx, msg); err == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
	}
}
