package daemon

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/voltmcp/voltmcp/rpc"
	"github.com/voltmcp/voltmcp/safefile"
)

// ErrNotRunning is Dial's error when no daemon answers on the socket.
var ErrNotRunning = errors.New("no voltmcp daemon is running")

// GoneError is a [Client]'s error for a request in flight, or made,
// after the daemon's connection ended: the daemon exited, was killed or
// dropped the connection.
type GoneError struct{ Err error }

func (e *GoneError) Error() string { return "the voltmcp daemon went away: " + e.Err.Error() }
func (e *GoneError) Unwrap() error { return e.Err }

// maxAnswer bounds one answer line a Client reads.
const maxAnswer = 64 << 20

// Dial connects to the daemon of agentDir. When none listens it returns
// an error that wraps [ErrNotRunning] and says how to start one.
func Dial(ctx context.Context, agentDir string) (net.Conn, error) {
	sock := SocketPath(agentDir)
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("%w (nothing answers on %s): start one with 'voltmcp daemon', or run 'voltmcp serve --daemon=auto', which starts one", ErrNotRunning, sock)
		}
		return nil, fmt.Errorf("voltmcp daemon %s: %w", sock, err)
	}
	return c, nil
}

// Client is a JSON-RPC client of the daemon over one connection:
// requests may be made concurrently; notifications go to the function
// given to [NewClient].
type Client struct {
	conn   net.Conn
	notify func(method string, params json.RawMessage)
	wmu    sync.Mutex

	mu      sync.Mutex
	next    int64
	pending map[int64]func(answer)
	err     error // why the connection ended, once it did
	done    chan struct{}
}

// answer is one JSON-RPC answer.
type answer struct {
	result json.RawMessage
	err    error
}

// NewClient starts a client on conn; notify, when not nil, receives each
// notification the daemon sends, on the client's reader (it must not
// block for long).
func NewClient(conn net.Conn, notify func(method string, params json.RawMessage)) *Client {
	c := &Client{conn: conn, notify: notify, pending: map[int64]func(answer){}, done: make(chan struct{})}
	go c.read()
	return c
}

// Done is closed when the connection ended; Err then says why.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err is why the connection ended, as a *GoneError; nil while it is up.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close ends the connection.
func (c *Client) Close() error {
	err := c.conn.Close()
	<-c.done
	return err
}

// read reads answers and notifications until the connection ends, then
// fails every request in flight with a *GoneError.
func (c *Client) read() {
	r := bufio.NewReaderSize(c.conn, 64<<10)
	var end error
	for {
		line, err := readLine(r)
		if len(bytes.TrimSpace(line)) > 0 {
			c.handle(line)
		}
		if err != nil {
			end = err
			break
		}
	}
	if errors.Is(end, io.EOF) {
		end = errors.New("the connection closed")
	}
	gone := &GoneError{Err: end}
	c.mu.Lock()
	c.err = gone
	pending := c.pending
	c.pending = nil
	c.mu.Unlock()
	for _, deliver := range pending {
		deliver(answer{err: gone})
	}
	c.conn.Close()
	close(c.done)
}

// readLine reads one line of at most maxAnswer bytes.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		part, err := r.ReadSlice('\n')
		line = append(line, part...)
		if len(line) > maxAnswer {
			return nil, fmt.Errorf("an answer over %d bytes", maxAnswer)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return line, err
	}
}

// handle routes one line.
func (c *Client) handle(line []byte) {
	if id, result, ok := plainResult(line); ok {
		c.answerWith(id, answer{result: result})
		return
	}
	var m struct {
		ID     *int64          `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
		Result json.RawMessage `json:"result"`
		Error  *rpc.Error      `json:"error"`
	}
	if err := json.Unmarshal(line, &m); err != nil {
		return
	}
	if m.Method != "" {
		if c.notify != nil {
			c.notify(m.Method, m.Params)
		}
		return
	}
	if m.ID == nil {
		return
	}
	if m.Error != nil {
		c.answerWith(*m.ID, answer{err: m.Error})
		return
	}
	c.answerWith(*m.ID, answer{result: m.Result})
}

// answerWith hands a to the request id in flight, if there is one.
func (c *Client) answerWith(id int64, a answer) {
	c.mu.Lock()
	deliver := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if deliver != nil {
		deliver(a)
	}
}

// plainResult reads line when it is a successful answer as the daemon
// writes one, {"jsonrpc":"2.0","id":N,"result":R}, without decoding R,
// which is left to the caller (an attached serve checks the framing of
// a forwarded call's result and passes it on as it is). It reports
// false for any other line, which handle decodes in full.
func plainResult(line []byte) (id int64, result json.RawMessage, ok bool) {
	const head, mid = `{"jsonrpc":"2.0","id":`, `,"result":`
	rest, ok := bytes.CutPrefix(line, []byte(head))
	if !ok {
		return 0, nil, false
	}
	i := 0
	for i < len(rest) && i < 18 && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	if i == 0 || (rest[0] == '0' && i > 1) {
		return 0, nil, false
	}
	id, err := strconv.ParseInt(string(rest[:i]), 10, 64)
	if err != nil {
		return 0, nil, false
	}
	rest, ok = bytes.CutPrefix(rest[i:], []byte(mid))
	if !ok {
		return 0, nil, false
	}
	rest = bytes.TrimRight(rest, " \t\r\n")
	if len(rest) < 2 || rest[len(rest)-1] != '}' {
		return 0, nil, false
	}
	result = rest[:len(rest)-1]
	if !json.Valid(result) {
		return 0, nil, false
	}
	return id, result, true
}

// Call sends method with params (any JSON value; a json.RawMessage is
// sent as it is) and waits for the answer, which it decodes into result
// when result is not nil. An error answer is an *[rpc.Error]; a
// connection that ends first is a *[GoneError].
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	raw, err := c.CallRaw(ctx, method, params)
	if err != nil || result == nil {
		return err
	}
	return json.Unmarshal(raw, result)
}

// CallRaw is Call returning the result's JSON as it came.
func (c *Client) CallRaw(ctx context.Context, method string, params any) (json.RawMessage, error) {
	ch := make(chan answer, 1)
	c.CallRawThen(ctx, method, params, func(res json.RawMessage, err error) { ch <- answer{res, err} })
	a := <-ch
	return a.result, a.err
}

// CallRawThen is CallRaw handing the answer to then instead of waiting
// for it. then runs once: on the client's reader when the daemon
// answers or the connection ends (it must not block for long: no other
// answer is read meanwhile), on a goroutine of its own when ctx ends
// first (with ctx's error), or before CallRawThen returns when the
// request cannot be sent.
func (c *Client) CallRawThen(ctx context.Context, method string, params any, then func(json.RawMessage, error)) {
	var once atomic.Bool
	deliver := func(a answer) {
		if once.CompareAndSwap(false, true) {
			then(a.result, a.err)
		}
	}
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		deliver(answer{err: err})
		return
	}
	c.next++
	id := c.next
	stop := context.AfterFunc(ctx, func() {
		if c.forget(id) {
			// The daemon ends the request (its server's call, for a
			// forwarded call of the mcp tool) and its answer is dropped.
			_ = c.write(append(strconv.AppendInt([]byte(`{"jsonrpc":"2.0","method":"`+rpc.CancelledMethod+`","params":{"requestId":`), id, 10), "}}\n"...))
		}
		deliver(answer{err: ctx.Err()})
	})
	c.pending[id] = func(a answer) {
		stop()
		deliver(a)
	}
	c.mu.Unlock()
	b, err := appendRequest(make([]byte, 0, 64+len(method)+rawLen(params)), id, method, params)
	if err != nil {
		c.forget(id)
		stop()
		deliver(answer{err: err})
		return
	}
	_ = c.write(b) // a failed write's call is answered by the reader
}

// appendRequest appends the request line (newline included) of id,
// method and params to b. Params that are a json.RawMessage are written
// as they are when they are compact JSON (the mcp tool's arguments as an
// agent sent them, forwarded); nil, or an empty json.RawMessage, leaves
// params out.
func appendRequest(b []byte, id int64, method string, params any) ([]byte, error) {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, id, 10)
	m, err := json.Marshal(method)
	if err != nil {
		return nil, err
	}
	b = append(append(b, `,"method":`...), m...)
	var p []byte
	switch v := params.(type) {
	case nil:
	case json.RawMessage:
		p = v
		if len(p) > 0 && !compactLine(p) {
			if p, err = json.Marshal(v); err != nil {
				return nil, err
			}
		}
	default:
		if p, err = json.Marshal(v); err != nil {
			return nil, err
		}
	}
	if len(p) > 0 {
		b = append(append(b, `,"params":`...), p...)
	}
	return append(b, "}\n"...), nil
}

// compactLine reports whether raw is valid JSON that fits on one line
// as it is.
func compactLine(raw []byte) bool {
	return bytes.IndexByte(raw, '\n') < 0 && json.Valid(raw)
}

// rawLen is the length of params when they are JSON already.
func rawLen(params any) int {
	if raw, ok := params.(json.RawMessage); ok {
		return len(raw)
	}
	return 0
}

// forget drops the request id in flight, and reports whether it was.
func (c *Client) forget(id int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.pending[id]
	delete(c.pending, id)
	return ok
}

// write writes one line, whole; a failed write ends the connection.
func (c *Client) write(b []byte) error {
	c.wmu.Lock()
	_, err := c.conn.Write(b)
	c.wmu.Unlock()
	if err != nil {
		c.conn.Close() // the reader ends, and answers the calls in flight with why
	}
	return err
}

// Attach dials the daemon of agentDir and attaches the connection to
// project's workspace ("" for the user-level one), returning a client
// for the rest of it.
func Attach(ctx context.Context, agentDir, project string, notify func(method string, params json.RawMessage)) (*Client, Attached, error) {
	conn, err := Dial(ctx, agentDir)
	if err != nil {
		return nil, Attached{}, err
	}
	c := NewClient(conn, notify)
	var at Attached
	params := map[string]string{}
	if project != "" {
		params["project"] = project
	}
	if err := c.Call(ctx, AttachMethod, params, &at); err != nil {
		c.Close()
		return nil, Attached{}, err
	}
	return c, at, nil
}

// AskStatus asks the daemon of agentDir for its [Status].
func AskStatus(ctx context.Context, agentDir string) (Status, error) {
	var st Status
	err := oneCall(ctx, agentDir, StatusMethod, &st)
	return st, err
}

// AskStop asks the daemon of agentDir to stop and returns its pid; it
// does not wait for it to end ([WaitStopped] does).
func AskStop(ctx context.Context, agentDir string) (int, error) {
	var res struct {
		PID int `json:"pid"`
	}
	err := oneCall(ctx, agentDir, StopMethod, &res)
	return res.PID, err
}

// oneCall dials, makes one daemon request, and closes.
func oneCall(ctx context.Context, agentDir, method string, result any) error {
	conn, err := Dial(ctx, agentDir)
	if err != nil {
		return err
	}
	c := NewClient(conn, nil)
	defer c.Close()
	return c.Call(ctx, method, nil, result)
}

// WaitStopped waits until no daemon holds agentDir's lock file, that
// is until a daemon asked to stop ([AskStop]) has closed its engines
// and let go, or ctx ends.
func WaitStopped(ctx context.Context, agentDir string) error {
	f, _, err := safefile.OpenAppend(LockPath(agentDir), 0o600)
	if err != nil {
		return fmt.Errorf("daemon lock file: %w", err)
	}
	defer f.Close()
	if err := safefile.LockFile(ctx, f, nil); err != nil {
		return err
	}
	safefile.UnlockFile(f)
	return nil
}

// Running reports whether a daemon holds agentDir's lock file: one runs,
// or is starting and about to listen.
func Running(agentDir string) bool {
	f, _, err := safefile.OpenAppend(LockPath(agentDir), 0o600)
	if err != nil {
		return false
	}
	defer f.Close()
	try, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := safefile.LockFile(try, f, cancel); err != nil {
		return errors.Is(err, context.Canceled)
	}
	safefile.UnlockFile(f)
	return false
}
