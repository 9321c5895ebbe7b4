package rpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/engine"
	"github.com/voltmcp/voltmcp/redact"
)

// The defaults of [Options].
const (
	DefaultMaxLineBytes = 4 << 20
	DefaultMaxInFlight  = 16
	DefaultWriteTimeout = 10 * time.Second
	DefaultEventBuffer  = 256
)

// Options configure a [Server]. The zero value of each field is usable
// and documented.
type Options struct {
	// MaxLineBytes is the longest request line read, newline excluded. A
	// longer line is read to its newline and discarded, never held
	// whole, and answered with an invalid-request error naming the
	// limit; the connection goes on. Zero: [DefaultMaxLineBytes] (4 MiB).
	MaxLineBytes int
	// MaxInFlight bounds the requests of one connection answered at
	// once; the connection reads the next request when one ends. Zero:
	// [DefaultMaxInFlight].
	MaxInFlight int
	// WriteTimeout is how long one write of an answer or an event to the
	// connection may block: a client that does not read for that long is
	// dropped (its connection closed), so that nothing waits on it
	// forever. Zero: [DefaultWriteTimeout].
	WriteTimeout time.Duration
	// EventBuffer is how many events a subscription's channel holds for
	// a connection that has not written them yet. Past it the engine
	// keeps them in its ring of the last events until the connection
	// takes them, and those that leave the ring meanwhile reach it as
	// one gap event ([engine.Engine.SubscribeSince]): the engine never
	// waits for a subscriber. Zero: [DefaultEventBuffer].
	EventBuffer int
	// Auth runs start_mcp_server_auth and the other auth methods: the
	// process that builds the engine passes its [Auth.Authorize] and
	// [Auth.DeviceAuthorize] as the engine's. Zero: those methods answer
	// [CodeNotAvailable].
	Auth *Auth
	// Logger receives the server's diagnostics (a dropped connection, a
	// bug). Zero: discard.
	Logger *slog.Logger
	// Remote says every connection is a paired remote client's (a
	// device over the daemon's HTTP listener), not the local owner's:
	// each request is decided by the voltmcp.remote policy
	// ([engine.Engine.DecideRemote]) before its method runs, and one the
	// policy refuses is answered [CodeRefused] with its reasons. Zero:
	// the owner, who may run every method.
	Remote bool
}

// Server answers the RPC of the spec's management API over any
// connection that carries newline-delimited JSON-RPC 2.0: stdio, a unix
// socket, a stream. It holds no state of its own beyond each connection's
// event subscription: every method decodes its params, calls one method
// of the [engine.Engine] and encodes its answer.
type Server struct {
	eng  *engine.Engine
	opts Options
	log  *slog.Logger

	// The scrubber of a remote client's answers, made from the config
	// it was made of (see remoteScrubber), made again when it changes.
	remoteMu  sync.Mutex
	remoteCfg *cue.Config
	remoteSc  *redact.Scrubber
}

// NewServer returns a Server of eng. opts may be nil.
func NewServer(eng *engine.Engine, opts *Options) *Server {
	s := &Server{eng: eng}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.MaxLineBytes <= 0 {
		s.opts.MaxLineBytes = DefaultMaxLineBytes
	}
	if s.opts.MaxInFlight <= 0 {
		s.opts.MaxInFlight = DefaultMaxInFlight
	}
	if s.opts.WriteTimeout <= 0 {
		s.opts.WriteTimeout = DefaultWriteTimeout
	}
	if s.opts.EventBuffer <= 0 {
		s.opts.EventBuffer = DefaultEventBuffer
	}
	s.log = s.opts.Logger
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s
}

// ErrWriteTimeout is Serve's error when the client did not read an
// answer or event within [Options.WriteTimeout].
var ErrWriteTimeout = errors.New("rpc: the client did not read within the write timeout; connection dropped")

// Serve answers the requests read from conn until it ends (io.EOF is a
// clean end, returned as nil), ctx ends, or the client stops reading
// (ErrWriteTimeout). When conn's reading side ends, the requests still
// in flight are cancelled: a client keeps its side open until it has
// its answers. Requests are answered concurrently, up to
// [Options.MaxInFlight] at once; each answer and event is written as one
// whole line. Serve closes conn, and returns once every request it
// started has ended.
func (s *Server) Serve(ctx context.Context, conn io.ReadWriteCloser) error {
	ctx, cancel := context.WithCancel(ctx)
	c := &connection{s: s, rw: conn, ctx: ctx, cancel: cancel,
		out: make(chan []byte, s.opts.MaxInFlight), sem: make(chan struct{}, s.opts.MaxInFlight),
		kick: make(chan struct{}, 1), try: tryWriter(conn), idle: make(chan func())}
	defer cancel()
	go c.writeLoop()
	readDone := make(chan error, 1)
	go func() { readDone <- c.readLoop() }()
	var err error
	select {
	case err = <-readDone:
		// The client is gone, or sent its last request: the requests in
		// flight are cancelled (the engine ends their upstream calls),
		// as nobody may read their answers.
	case <-ctx.Done():
	}
	// The reader and the writer may be blocked in the connection, which
	// closing ends for a socket; Serve does not wait for them (a pipe
	// that closing does not wake holds only its own goroutine).
	c.mu.Lock()
	c.ending = true
	c.mu.Unlock()
	cancel()
	c.closeConn()
	c.handlers.Wait()
	c.unsubscribe()
	c.subs.Wait()
	if werr := c.writeErr(); werr != nil {
		return werr
	}
	if err == io.EOF || err == nil || ctx.Err() != nil {
		return nil
	}
	return err
}

// connection is one client's connection.
type connection struct {
	s      *Server
	rw     io.ReadWriteCloser
	ctx    context.Context
	cancel context.CancelFunc
	// out carries whole lines to the writer; sem bounds the requests
	// in flight.
	out chan []byte
	// try, when not nil, writes what the connection takes at once
	// without waiting (see send); wmu is held while a line is written,
	// queued counts the lines in out or in rest that are not written
	// yet, rest is what try left of a line, which the writer writes
	// before any other, and kick wakes the writer for it.
	try    func([]byte) (int, error)
	wmu    sync.Mutex
	queued atomic.Int64
	rest   []byte
	kick   chan struct{}
	// idle hands a request to a goroutine that waits for one (run).
	idle     chan func()
	sem      chan struct{}
	handlers sync.WaitGroup
	subs     sync.WaitGroup

	mu        sync.Mutex
	closed    bool
	ending    bool // Serve is returning: no handler starts
	werr      error
	stopEvent func() // the event subscription's, or nil
	// inflight cancels each request in flight, by its id's JSON.
	inflight map[string]*inflight
}

func (c *connection) closeConn() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.closed = true
		_ = c.rw.Close()
	}
}

func (c *connection) writeErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.werr
}

// writeLoop writes the lines of out, and what try left of a line, one
// at a time, each within the write timeout; a write that does not end
// in time drops the connection.
func (c *connection) writeLoop() {
	for {
		var line []byte
		select {
		case <-c.ctx.Done():
			return
		case line = <-c.out:
		case <-c.kick:
		}
		c.wmu.Lock()
		rest := c.rest
		c.rest = nil
		err := c.write(rest)
		if err == nil {
			err = c.write(line)
		}
		c.wmu.Unlock()
		if err != nil {
			c.cancel()
			return
		}
	}
}

// write writes line (nil: nothing) within the write timeout, with wmu
// held; a write that does not end in time drops the connection.
func (c *connection) write(line []byte) error {
	if line == nil {
		return nil
	}
	defer c.queued.Add(-1)
	timer := time.AfterFunc(c.s.opts.WriteTimeout, func() {
		c.mu.Lock()
		c.werr = ErrWriteTimeout
		c.mu.Unlock()
		c.s.log.Warn("rpc: dropping a client that does not read", "timeout", c.s.opts.WriteTimeout)
		c.cancel()
		c.closeConn()
	})
	_, err := c.rw.Write(line)
	timer.Stop()
	return err
}

// send writes one line, or queues it for the writer; false when the
// connection ended. When nothing is queued and the connection takes the
// whole line at once (try), it is written here, sparing the writer's
// wake-up; what the connection does not take at once is the writer's
// to write, before anything else, so that no goroutine that answers
// waits on a client that does not read.
func (c *connection) send(line []byte) bool {
	if c.try != nil && c.queued.Load() == 0 && c.wmu.TryLock() {
		if c.queued.Load() == 0 && c.ctx.Err() == nil {
			n, err := c.try(line)
			if err != nil {
				c.wmu.Unlock()
				c.cancel()
				return false
			}
			if n < len(line) {
				c.rest = line[n:]
				c.queued.Add(1)
				select {
				case c.kick <- struct{}{}:
				default:
				}
			}
			c.wmu.Unlock()
			return true
		}
		c.wmu.Unlock()
	}
	c.queued.Add(1)
	select {
	case c.out <- line:
		return true
	case <-c.ctx.Done():
		c.queued.Add(-1)
		return false
	}
}

// readLoop reads request lines and starts their handlers.
func (c *connection) readLoop() error {
	r := bufio.NewReaderSize(c.rw, 64<<10)
	for {
		line, over, err := readLine(r, c.s.opts.MaxLineBytes)
		if over > 0 {
			c.answer(nil, nil, errorf(CodeInvalidRequest, "request line of %d bytes or more is over the limit of %d bytes; it was discarded", over, c.s.opts.MaxLineBytes))
		} else if len(trimSpace(line)) > 0 {
			if !c.dispatch(line) {
				return c.ctx.Err()
			}
		}
		if err != nil {
			return err
		}
	}
}

// dispatch decodes one line and runs it in its own goroutine once a slot
// is free; false when the connection ended while it waited.
func (c *connection) dispatch(line []byte) bool {
	req, rerr := decodeRequest(line)
	if rerr != nil {
		c.answer(req.ID, nil, rerr)
		return true
	}
	if req.Method == CancelledMethod && !req.hasID {
		c.cancelRequest(req.Params)
		return true
	}
	m, ok := methodsByName[req.Method]
	if !ok {
		if req.hasID {
			c.answer(req.ID, nil, errorf(CodeMethodNotFound, "unknown method %q: get_mcp_capabilities lists the methods", clip(req.Method)))
		}
		return true
	}
	select {
	case c.sem <- struct{}{}:
	case <-c.ctx.Done():
		return false
	}
	c.mu.Lock()
	if c.ending {
		c.mu.Unlock()
		<-c.sem
		return false
	}
	c.handlers.Add(1)
	ctx, key := c.ctx, ""
	var own *inflight
	if req.hasID && string(req.ID) != "null" {
		// The request may be cancelled by its id (CancelledMethod); a
		// second request with the id of one in flight takes its place.
		own = &inflight{}
		ctx, own.cancel = context.WithCancel(c.ctx)
		key = string(req.ID)
		if c.inflight == nil {
			c.inflight = map[string]*inflight{}
		}
		c.inflight[key] = own
	}
	c.mu.Unlock()
	c.run(func() {
		var once sync.Once
		finish := func(res any, err *Error) {
			once.Do(func() {
				defer c.handlers.Done()
				defer func() { <-c.sem }()
				if own != nil {
					own.cancel() // releases the context
					c.mu.Lock()
					if c.inflight[key] == own {
						delete(c.inflight, key)
					}
					c.mu.Unlock()
				}
				if req.hasID {
					c.answer(req.ID, res, err)
				}
				if sub, ok := res.(subscription); ok {
					sub.start()
				}
			})
		}
		if m.runThen != nil {
			c.callThen(ctx, m, req.Params, finish)
			return
		}
		finish(c.call(ctx, m, req.Params))
	})
	return true
}

// workerIdle is how long a goroutine that ran a request waits for the
// next before it ends.
const workerIdle = 10 * time.Second

// run runs f on a goroutine of the connection's that is idle, or on a
// new one: a request runs on a stack already grown to what the engine's
// work needs, as the engine's connections run theirs (see
// engine/internal/line).
func (c *connection) run(f func()) {
	select {
	case c.idle <- f:
	default:
		go c.worker(f)
	}
}

// worker runs f, then each request handed to it while it is idle, until
// it has been idle for workerIdle or the connection ends.
func (c *connection) worker(f func()) {
	f()
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		select {
		case f := <-c.idle:
			f()
			idle.Reset(workerIdle)
		case <-idle.C:
			return
		case <-c.ctx.Done():
			return
		}
	}
}

// CancelledMethod is the notification that cancels a request in
// flight, as MCP's of the same name does: its params are
// {"requestId": ID}, the id as the request spelt it. The request's
// method sees its context end (an mcp tool call forwarded by an
// attached serve ends its server's call) and is still answered; a
// notification that names no request in flight is ignored.
const CancelledMethod = "notifications/cancelled"

// cancelRequest cancels the request in flight that params name.
func (c *connection) cancelRequest(params json.RawMessage) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil || len(p.RequestID) == 0 {
		return
	}
	c.mu.Lock()
	r := c.inflight[string(p.RequestID)]
	c.mu.Unlock()
	if r != nil {
		r.cancel()
	}
}

// inflight is a request in flight that may be cancelled.
type inflight struct{ cancel context.CancelFunc }

// callThen runs a method that answers later (method.runThen); a panic in
// it is answered as call answers one.
func (c *connection) callThen(ctx context.Context, m *method, params json.RawMessage, answer func(any, *Error)) {
	defer func() {
		if p := recover(); p != nil {
			c.s.log.Error("rpc: a method panicked", "method", m.name)
			answer(nil, errorf(CodeInternalError, "method %s failed inside the server (a bug)", m.name))
		}
	}()
	m.runThen(c, ctx, params, answer)
}

// call runs one method; a panic in it is a bug, answered as an internal
// error without its value (which may quote a secret).
func (c *connection) call(ctx context.Context, m *method, params json.RawMessage) (res any, rerr *Error) {
	defer func() {
		if p := recover(); p != nil {
			c.s.log.Error("rpc: a method panicked", "method", m.name)
			res, rerr = nil, errorf(CodeInternalError, "method %s failed inside the server (a bug)", m.name)
		}
	}()
	return m.run(c, ctx, params)
}

// response is a JSON-RPC response.
type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// answer writes the response to the request of id (null when unknown).
func (c *connection) answer(id json.RawMessage, res any, rerr *Error) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	if raw, ok := res.(encoded); ok && rerr == nil {
		// The id is as the request's decoder read it (a string, a number
		// or null, one valid JSON value).
		b := make([]byte, 0, len(raw)+len(id)+40)
		b = append(append(append(b, `{"jsonrpc":"2.0","id":`...), id...), `,"result":`...)
		c.send(append(append(b, raw...), "}\n"...))
		return
	}
	r := response{JSONRPC: "2.0", ID: id}
	if rerr != nil {
		r.Error = rerr
	} else {
		if res == nil {
			res = struct{}{}
		}
		r.Result = res
	}
	b, err := json.Marshal(r)
	if err != nil {
		b, _ = json.Marshal(response{JSONRPC: "2.0", ID: id, Error: errorf(CodeInternalError, "the answer could not be encoded (a bug): %v", err)})
	}
	c.send(append(b, '\n'))
}

// notify writes a notification.
func (c *connection) notify(method string, params any) bool {
	b, err := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}{"2.0", method, params})
	if err != nil {
		c.s.log.Error("rpc: a notification could not be encoded (a bug)", "method", method, "error", err)
		return true
	}
	return c.send(append(b, '\n'))
}

// readLine reads one line of at most max bytes, newline excluded. A
// longer line is read to its end and dropped: over is how many bytes it
// had (at least), and line is nil. err is the reader's error after the
// line (io.EOF after a last line without a newline).
func readLine(r *bufio.Reader, max int) (line []byte, over int, err error) {
	for {
		frag, err := r.ReadSlice('\n')
		if len(line)+len(frag) > max+1 || (len(line)+len(frag) > max && (len(frag) == 0 || frag[len(frag)-1] != '\n')) {
			n := len(line) + len(frag)
			for err == bufio.ErrBufferFull {
				frag, err = r.ReadSlice('\n')
				n += len(frag)
			}
			return nil, n, err
		}
		line = append(line, frag...)
		if err == bufio.ErrBufferFull {
			continue
		}
		return line, 0, err
	}
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && !notSpace(rune(b[0])) {
		b = b[1:]
	}
	for len(b) > 0 && !notSpace(rune(b[len(b)-1])) {
		b = b[:len(b)-1]
	}
	return b
}

// serverError maps an engine error to a JSON-RPC error.
func serverError(id string, err error) *Error {
	if errors.Is(err, engine.ErrUnknownServer) {
		return &Error{Code: CodeUnknownServer, Message: err.Error(), Data: map[string]string{"id": id}}
	}
	return &Error{Code: CodeFailed, Message: fmt.Sprintf("%v", err)}
}

// Answer answers one request line as [Server.Serve] answers a line of a
// connection (the same decoder, methods, remote decision and encoder),
// for a face that carries one request per exchange, such as the
// daemon's HTTP listener (POST /rpc). It returns the answer's JSON
// without a newline, or nil for a notification, which has none. A line
// over [Options.MaxLineBytes] is refused as Serve refuses it.
// subscribe_mcp_events and unsubscribe_mcp_events need a connection
// that stays open, and are answered [CodeInvalidRequest]. The request is
// cancelled when ctx ends.
func (s *Server) Answer(ctx context.Context, line []byte) []byte {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c := &connection{s: s, ctx: ctx, cancel: cancel, out: make(chan []byte, 1)}
	var req request
	var res any
	var rerr *Error
	if len(trimSpace(line)) > s.opts.MaxLineBytes {
		rerr = errorf(CodeInvalidRequest, "request of %d bytes is over the limit of %d bytes", len(line), s.opts.MaxLineBytes)
	} else if req, rerr = decodeRequest(line); rerr == nil {
		m, ok := methodsByName[req.Method]
		switch {
		case !ok:
			rerr = errorf(CodeMethodNotFound, "unknown method %q: get_mcp_capabilities lists the methods", clip(req.Method))
		case m.name == "subscribe_mcp_events" || m.name == "unsubscribe_mcp_events":
			rerr = errorf(CodeInvalidRequest, "%s needs a connection that stays open for the events; over the daemon's HTTP listener, GET /events streams them", m.name)
		case m.runThen != nil:
			type result struct {
				res  any
				rerr *Error
			}
			done := make(chan result, 1)
			c.callThen(ctx, m, req.Params, func(res any, rerr *Error) { done <- result{res, rerr} })
			r := <-done
			res, rerr = r.res, r.rerr
		default:
			res, rerr = c.call(ctx, m, req.Params)
		}
		if !req.hasID {
			return nil
		}
	}
	c.answer(req.ID, res, rerr)
	return bytes.TrimSuffix(<-c.out, []byte("\n"))
}
