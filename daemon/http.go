package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/voltmcp/voltmcp/devices"
	"github.com/voltmcp/voltmcp/rpc"
)

// The daemon's HTTP listener serves paired remote clients (a browser UI,
// the spec's mobile app through a tunnel to this machine) on a loopback
// address ([Options.HTTPAddr]). It is one more face of the same
// workspaces' [rpc.Server]s, each made with [rpc.Options.Remote], so
// that the voltmcp.remote policy decides every request before it runs:
//
//   - POST /rpc: one JSON-RPC request in the body, its answer in the
//     response ([rpc.Server.Answer]: the same decoder and encoder as
//     the socket).
//   - GET /events: the workspace's mcp_event stream as Server-Sent
//     Events, each event's id its seq; ?sinceSeq=N or a Last-Event-ID
//     header resumes after N.
//
// Every request carries Authorization: Bearer <device token> (package
// devices; `voltmcp daemon pair`), checked against the store on each
// request, so that a revoked token is refused at once. The workspace is
// the Voltmcp-Workspace header's project directory, or the user-level
// workspace without one; a remote client reaches only a workspace that
// an agent session of this machine opened (attach_workspace), or the
// user-level one.

// The HTTP listener's paths and header.
const (
	HTTPRPCPath      = "/rpc"
	HTTPEventsPath   = "/events"
	WorkspaceHeader  = "Voltmcp-Workspace"
	maxHTTPBody      = 1 << 20
	httpWriteTimeout = 10 * time.Second
	// recheckEvery is how often an event stream checks its device's
	// token again.
	recheckEvery = time.Second
	// DefaultMaxHTTPConns bounds the HTTP listener's connections.
	DefaultMaxHTTPConns = 64
)

// CheckLoopback refuses an HTTP listening address that is not a
// loopback one: the host must be 127.0.0.1, ::1 or localhost, with a
// port (0 picks one). The daemon's listener is for clients of this
// machine (a tunnel brings a phone's); a wider address would offer the
// daemon to the network.
func CheckLoopback(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("--http %q: want HOST:PORT with a loopback host (127.0.0.1:PORT, [::1]:PORT or localhost:PORT): %v", addr, err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return "", fmt.Errorf("--http %q: port %q is not a number from 0 to 65535", addr, port)
	}
	switch host {
	case "127.0.0.1", "::1":
	case "localhost":
		host = "127.0.0.1" // never resolved: a hosts file could point it elsewhere
	default:
		return "", fmt.Errorf("--http %q: host %q is not a loopback address; the daemon listens only on 127.0.0.1, ::1 or localhost (reach it from another device through a tunnel, such as ssh -L)", addr, host)
	}
	return net.JoinHostPort(host, port), nil
}

// httpFace is the daemon's HTTP listener.
type httpFace struct {
	d     *daemon
	store *devices.Store
	// hosts are the Host (and Origin host) values a request may carry:
	// the listener's loopback address as 127.0.0.1, [::1] or localhost
	// with its port. Anything else is refused (DNS rebinding).
	hosts map[string]bool
}

// listenHTTP listens on opts.HTTPAddr and serves until d.ctx ends; the
// returned function waits until the server stopped.
func (d *daemon) listenHTTP() (wait func(), err error) {
	addr, err := CheckLoopback(d.opts.HTTPAddr)
	if err != nil {
		return nil, err
	}
	if d.opts.Devices == nil {
		return nil, errors.New("daemon: Options.Devices is required with HTTPAddr")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("daemon: --http %s: %w", d.opts.HTTPAddr, err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	h := &httpFace{d: d, store: d.opts.Devices, hosts: map[string]bool{}}
	for _, host := range []string{"127.0.0.1", "[::1]", "localhost"} {
		h.hosts[host+":"+port] = true
	}
	max := d.opts.MaxHTTPConns
	if max <= 0 {
		max = DefaultMaxHTTPConns
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    16 << 10,
		BaseContext:       func(net.Listener) context.Context { return d.ctx },
	}
	d.httpAddr = ln.Addr().String()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(&limitListener{Listener: ln, max: max})
	}()
	go func() {
		<-d.ctx.Done()
		// The requests' contexts are d.ctx's: they end; Shutdown waits
		// for them a while, Close ends the rest.
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if srv.Shutdown(sctx) != nil {
			srv.Close()
		}
	}()
	d.log.Info("voltmcp daemon: listening for paired devices", "http", d.httpAddr)
	return func() { <-done }, nil
}

// fail answers a refusal: a JSON-RPC error object with id null, so that
// a client reads every answer one way.
func fail(w http.ResponseWriter, status, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(errorLine(nil, code, msg))
}

func (h *httpFace) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	// DNS rebinding: a page of another site whose name resolves to
	// 127.0.0.1 sends its own name as Host.
	if !h.hosts[strings.ToLower(r.Host)] {
		fail(w, http.StatusMisdirectedRequest, rpc.CodeRefused, "the Host header is not this daemon's loopback address (127.0.0.1, [::1] or localhost with its port)")
		return
	}
	// A browser's cross-site request names its page's origin: only the
	// daemon's own origin is served.
	if origins := r.Header.Values("Origin"); len(origins) > 1 || len(origins) == 1 && !h.sameOrigin(origins[0]) {
		fail(w, http.StatusForbidden, rpc.CodeRefused, "cross-origin requests are refused: the Origin is not this daemon's")
		return
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site == "cross-site" || site == "same-site" {
		fail(w, http.StatusForbidden, rpc.CodeRefused, "cross-site requests are refused")
		return
	}
	// A missing, malformed, unknown or revoked token gets one answer:
	// which it was is not said.
	token, ok := bearer(r.Header.Values("Authorization"))
	dev, known := h.store.Verify(token)
	if !ok || !known {
		w.Header().Set("WWW-Authenticate", `Bearer realm="voltmcp daemon"`)
		fail(w, http.StatusUnauthorized, rpc.CodeRefused, "a paired device's token is required as Authorization: Bearer <token> ('voltmcp daemon pair' on the daemon's machine pairs one)")
		return
	}
	if err := h.store.Touch(r.Context(), dev); err != nil {
		h.d.log.Warn("voltmcp daemon: recording a device's last use", "device", dev.ID, "err", err)
	}
	switch r.URL.Path {
	case HTTPRPCPath:
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			fail(w, http.StatusMethodNotAllowed, rpc.CodeInvalidRequest, "POST a JSON-RPC request to "+HTTPRPCPath)
			return
		}
		h.rpc(w, r)
	case HTTPEventsPath:
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			fail(w, http.StatusMethodNotAllowed, rpc.CodeInvalidRequest, "GET "+HTTPEventsPath+" streams the events")
			return
		}
		h.events(w, r, token)
	default:
		fail(w, http.StatusNotFound, rpc.CodeInvalidRequest, fmt.Sprintf("no such path %q: POST %s or GET %s", clipPath(r.URL.Path), HTTPRPCPath, HTTPEventsPath))
	}
}

// bearer is the credential of values, a request's Authorization
// headers, when they are one "Bearer <credential>" (the scheme in any
// case).
func bearer(values []string) (string, bool) {
	const scheme = "bearer "
	if len(values) != 1 || len(values[0]) <= len(scheme) || !strings.EqualFold(values[0][:len(scheme)], scheme) {
		return "", false
	}
	return strings.TrimSpace(values[0][len(scheme):]), true
}

// clipPath bounds a path quoted in a message.
func clipPath(p string) string {
	if len(p) > 64 {
		return p[:64] + "..."
	}
	return p
}

// sameOrigin reports whether o is the daemon's own origin.
func (h *httpFace) sameOrigin(o string) bool {
	host, ok := strings.CutPrefix(o, "http://")
	return ok && h.hosts[strings.ToLower(host)]
}

// workspace is the request's workspace, counted in until the release it
// returns is called; the error answer is written when it cannot be had.
func (h *httpFace) workspace(w http.ResponseWriter, r *http.Request) (*workspace, func(), bool) {
	d := h.d
	d.mu.Lock()
	if d.stopping {
		d.mu.Unlock()
		fail(w, http.StatusServiceUnavailable, CodeBusy, "voltmcp daemon: stopping")
		return nil, nil, false
	}
	d.handlers.Add(1)
	d.mu.Unlock()
	var project string
	if p := r.Header.Get(WorkspaceHeader); p != "" {
		// A directory that is not there and one no session opened get
		// the same answer: a device learns nothing of the disk.
		var err error
		project, err = CanonicalProject(p)
		d.mu.Lock()
		_, open := d.workspaces[project]
		d.mu.Unlock()
		if err != nil || !open {
			d.handlers.Done()
			fail(w, http.StatusNotFound, rpc.CodeRefused, fmt.Sprintf("workspace %q is not open in the daemon: a paired device reaches the user-level workspace and those an agent session of this machine attached", clipPath(p)))
			return nil, nil, false
		}
	}
	ws, err := d.workspace(project)
	if err != nil {
		d.handlers.Done()
		fail(w, http.StatusServiceUnavailable, CodeBusy, err.Error())
		return nil, nil, false
	}
	return ws, func() { d.detach(ws); d.handlers.Done() }, true
}

// rpc answers POST /rpc.
func (h *httpFace) rpc(w http.ResponseWriter, r *http.Request) {
	if ct := r.Header.Get("Content-Type"); ct != "application/json" && !strings.HasPrefix(ct, "application/json;") {
		fail(w, http.StatusUnsupportedMediaType, rpc.CodeInvalidRequest, "the request's Content-Type must be application/json")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxHTTPBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			fail(w, http.StatusRequestEntityTooLarge, rpc.CodeInvalidRequest, fmt.Sprintf("the request is over the limit of %d bytes", maxHTTPBody))
			return
		}
		fail(w, http.StatusBadRequest, rpc.CodeInvalidRequest, "the request body could not be read")
		return
	}
	// The body is read: a method may run longer than ReadTimeout (a
	// connection's discovery), which must not end its context.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	ws, release, ok := h.workspace(w, r)
	if !ok {
		return
	}
	answer := ws.remote.Answer(r.Context(), body)
	release()
	_ = rc.SetWriteDeadline(time.Now().Add(httpWriteTimeout))
	w.Header().Set("Cache-Control", "no-store")
	if answer == nil {
		w.WriteHeader(http.StatusNoContent) // a notification
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(answer, '\n'))
}

// events streams GET /events for the device of token.
func (h *httpFace) events(w http.ResponseWriter, r *http.Request, token string) {
	since := r.URL.Query().Get("sinceSeq")
	if since == "" {
		since = r.Header.Get("Last-Event-ID")
	}
	params := "{}"
	if since != "" {
		n, err := strconv.ParseUint(since, 10, 64)
		if err != nil {
			fail(w, http.StatusBadRequest, rpc.CodeInvalidParams, fmt.Sprintf("sinceSeq (or Last-Event-ID) %q: want the seq of the last event seen, a whole number", clipPath(since)))
			return
		}
		params = fmt.Sprintf(`{"sinceSeq":%d}`, n)
	}
	ws, release, ok := h.workspace(w, r)
	if !ok {
		return
	}
	defer release()
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{}) // a stream outlives ReadTimeout
	conn := &sseConn{w: w, rc: rc, ended: make(chan struct{}), checked: time.Now(),
		verify: func() bool { _, ok := h.store.Verify(token); return ok },
		first:  []byte(`{"jsonrpc":"2.0","id":"events","method":"subscribe_mcp_events","params":` + params + "}\n")}
	// The token is checked again once per recheckEvery whether or not an
	// event goes out, so that a revoked device's stream ends at once.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() {
		t := time.NewTicker(recheckEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if !conn.verify() {
					cancel()
					return
				}
			}
		}
	}()
	_ = ws.remote.Serve(ctx, conn)
}

// sseConn carries one subscription of a workspace's remote rpc.Server
// to an HTTP response as Server-Sent Events: its reads are the
// subscribe request, then nothing until the response ends; its writes
// are the subscription's answer (a refusal becomes the response's error
// status) and then its mcp_event notifications, each an SSE event whose
// data is the event and whose id is its seq. The device's token is
// checked again once per [recheckEvery], and before an event goes out
// when that long has passed: a stream of a device revoked meanwhile
// ends.
type sseConn struct {
	w      http.ResponseWriter
	rc     *http.ResponseController
	first  []byte
	ended  chan struct{}
	verify func() bool
	// checked is when the token was last verified.
	checked time.Time

	mu      sync.Mutex
	closed  bool
	started bool
}

func (c *sseConn) Read(p []byte) (int, error) {
	if len(c.first) > 0 {
		n := copy(p, c.first)
		c.first = c.first[n:]
		return n, nil
	}
	<-c.ended
	return 0, io.EOF
}

func (c *sseConn) Write(line []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, net.ErrClosed
	}
	_ = c.rc.SetWriteDeadline(time.Now().Add(httpWriteTimeout))
	if !c.started {
		// The subscription's answer: an error is the response's.
		var ans struct {
			Error json.RawMessage `json:"error"`
		}
		if json.Unmarshal(line, &ans) != nil || len(ans.Error) > 0 {
			c.w.Header().Set("Content-Type", "application/json")
			c.w.WriteHeader(http.StatusForbidden)
			_, _ = c.w.Write(line)
			return 0, errors.New("daemon: the subscription was refused")
		}
		c.started = true
		c.w.Header().Set("Content-Type", "text/event-stream")
		c.w.Header().Set("Cache-Control", "no-store")
		c.w.WriteHeader(http.StatusOK)
		if _, err := io.WriteString(c.w, ": subscribed to mcp_events.v1\n\n"); err != nil {
			return 0, err
		}
		return len(line), c.rc.Flush()
	}
	if time.Since(c.checked) >= recheckEvery {
		if !c.verify() {
			return 0, errors.New("daemon: the device was revoked")
		}
		c.checked = time.Now()
	}
	var n struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(line, &n) != nil || n.Method != "mcp_event" {
		return len(line), nil
	}
	var ev struct {
		Seq uint64 `json:"seq"`
	}
	_ = json.Unmarshal(n.Params, &ev)
	if _, err := fmt.Fprintf(c.w, "id: %d\nevent: mcp_event\ndata: %s\n\n", ev.Seq, n.Params); err != nil {
		return 0, err
	}
	return len(line), c.rc.Flush()
}

func (c *sseConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.closed = true
		close(c.ended)
	}
	return nil
}

// limitListener serves at most max connections at once: one more is
// closed at once, so that a flood holds no more than max.
type limitListener struct {
	net.Listener
	max int

	mu sync.Mutex
	n  int
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		full := l.n >= l.max
		if !full {
			l.n++
		}
		l.mu.Unlock()
		if full {
			c.Close()
			continue
		}
		return &countedConn{Conn: c, l: l}, nil
	}
}

// countedConn counts itself out of its listener once closed.
type countedConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.n--
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}
