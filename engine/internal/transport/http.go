package transport

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/engine/internal/line"
	"github.com/voltmcp/voltmcp/engine/internal/tasks"
)

// HeaderTransport adds a server's configured headers and auth to every
// request, by calling SetHeaders at the moment the request is sent, and
// records the status of the last POST (for the Streamable HTTP to SSE
// fallback, see [ConnectHTTP]). It is the one way to a server's origin: a
// request to any other origin than Origin (the configured URL's) is
// refused before it is sent, whoever named its URL (a legacy SSE
// endpoint event, a redirect, a token refresh), so no configured header
// or token leaves that origin. Its fields are set before its first
// request and not changed after.
type HeaderTransport struct {
	Base   http.RoundTripper // sends the requests
	Server string            // the server's name, for errors
	// Origin is the configured URL's; the zero Origin refuses every
	// request. ConnectHTTP sets it from the endpoint it is given.
	Origin Origin
	// SetHeaders sets the configured headers and auth on the header of
	// a request about to be sent (a copy of the caller's), resolving
	// references to the environment then. An error fails the request.
	// Nil sets none.
	SetHeaders func(http.Header) error
	// MaxMessage bounds one message of a response (boundedBody); zero
	// means no bound. TooLarge is the error a read past it returns.
	// Trips, when set, counts the responses cut short.
	MaxMessage int
	TooLarge   error
	// PeerMethods lists the methods of the server's requests that the
	// client answers; the others are refused before they are decoded
	// (line.PeerRequests). Nil admits any.
	PeerMethods []string
	Trips       *atomic.Int64
	// Self is the instance id of the gateway this transport belongs to
	// (the value of InstanceHeader its own HTTP handler answers with);
	// a response that carries it fails its request with a *SelfError:
	// the server is the gateway itself, whatever the URL's spelling.
	// "" checks nothing.
	Self string
	// SelfTokens are the bearer tokens of this user's gateways (voltmcp
	// serve --http): a request whose Authorization, once SetHeaders set
	// it, is one of them fails with a *SelfError before it is sent. Nil
	// checks nothing.
	SelfTokens []string
	// ViaKey is the gateway's secret for the id it names itself by in the
	// ViaHeader of each request ([ViaID] of Origin). Nil sends no
	// ViaHeader. ViaSent, when set, records each id sent.
	ViaKey  []byte
	ViaSent *ViaSet
	// SSEPostWait bounds each POST of a legacy SSE session (ssePosts).
	// Zero means 30 seconds.
	SSEPostWait time.Duration
	// Listings, when set (and MaxMessage is), is told of each tools/list
	// request a POST carries, and reads each tool's task support from the
	// answer as the SDK reads it: the POST's response (a JSON body or an
	// event stream), or a GET's event stream (legacy SSE answers there),
	// through a taskTee that leaves the bytes as they are.
	Listings *tasks.Listings

	// refused is the first request refused for its origin, which
	// ConnectHTTP reports in place of the SDK's error (that quotes the
	// whole URL).
	refused  atomic.Pointer[CrossOriginError]
	self     atomic.Pointer[SelfError]
	loop     atomic.Pointer[LoopError]
	sse      atomic.Pointer[ssePosts] // the POSTs of the legacy SSE session made through it
	viaID    atomic.Pointer[string]   // ViaID, once worked out
	lastPOST atomic.Int32
	// gate bounds the server's requests to the client (peerGate); set
	// by ConnectHTTP.
	gate *peerGate
}

// InstanceHeader is the response header with which voltmcp serve --http
// answers every request: the serving gateway's instance id, random for
// each engine, so that the engine can tell when a configured HTTP server
// is itself ([HeaderTransport.Self]).
const InstanceHeader = "Voltmcp-Instance"

// SelfError is a request to a server whose response carried the
// gateway's own instance id: the server is this gateway, and using it
// would make the gateway call itself without end.
type SelfError struct {
	Server string // the server's name
	// File is the config file that defines the server, when the caller
	// knows it.
	File string
	// Token is true when the request carried the gateway's bearer token
	// ([HeaderTransport.SelfTokens]), false when the answer carried its
	// instance id.
	Token bool
}

func (e *SelfError) Error() string {
	where := ""
	if e.File != "" {
		where = " in " + e.File
	}
	how := "its url reaches this voltmcp serve --http, which would call itself without end"
	if e.Token {
		how = "its Authorization header carries the token of this user's voltmcp serve --http, which voltmcp never calls through itself"
	}
	return fmt.Sprintf("server %s is this gateway itself: %s; if the entry%s is there for an MCP client, 'voltmcp disable %s' makes voltmcp leave it, else point its url at another server", e.Server, how, where, e.Server)
}

// carriesSelfToken reports whether h's Authorization is a bearer token
// of SelfTokens, compared in constant time.
func (t *HeaderTransport) carriesSelfToken(h http.Header) bool {
	if len(t.SelfTokens) == 0 {
		return false
	}
	scheme, cred, ok := strings.Cut(strings.TrimSpace(h.Get("Authorization")), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	cred = strings.TrimSpace(cred)
	found := false
	for _, tok := range t.SelfTokens {
		if tok != "" && subtle.ConstantTimeCompare([]byte(cred), []byte(tok)) == 1 {
			found = true
		}
	}
	return found
}

// RoundTrip implements [http.RoundTripper].
func (t *HeaderTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if o, ok := OriginOf(req.URL); !ok || o != t.Origin {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		err := &CrossOriginError{Server: t.Server, To: o}
		t.refused.CompareAndSwap(nil, err)
		return nil, err
	}
	req = req.Clone(req.Context())
	if t.SetHeaders != nil {
		if err := t.SetHeaders(req.Header); err != nil {
			return nil, err
		}
	}
	if id := t.ViaID(); id != "" {
		// Set after the configured headers, so that none replaces it.
		req.Header.Set(ViaHeader, strings.Join(append(slices.Clone(ViaOf(req.Context())), id), ","))
	}
	if t.carriesSelfToken(req.Header) {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		err := &SelfError{Server: t.Server, Token: true}
		t.self.CompareAndSwap(nil, err)
		return nil, err
	}
	var listing jsonrpc.ID
	listed := false
	tee := t.Listings != nil && t.MaxMessage > 0
	if tee && req.Method == http.MethodPost {
		listing, listed = t.noteListing(req)
	}
	if t.gate != nil && req.Method == http.MethodPost {
		t.gate.noteAnswer(req)
	}
	resp, err := t.Base.RoundTrip(req)
	if listed && (err != nil || resp.StatusCode/100 != 2) {
		t.Listings.Forget(listing) // no answer will come
	}
	if err == nil && t.Self != "" && resp.Header.Get(InstanceHeader) == t.Self {
		Discard(resp)
		err := &SelfError{Server: t.Server}
		t.self.CompareAndSwap(nil, err)
		return nil, err
	}
	if err == nil && resp.StatusCode == http.StatusLoopDetected && resp.Header.Get(InstanceHeader) != "" {
		Discard(resp)
		err := &LoopError{Server: t.Server}
		t.loop.CompareAndSwap(nil, err)
		return nil, err
	}
	if err == nil && req.Method == http.MethodPost {
		t.lastPOST.Store(int32(resp.StatusCode))
	}
	if err == nil && resp.Body != nil {
		ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		events := ct == "text/event-stream"
		if t.MaxMessage > 0 {
			resp.Body = &boundedBody{rc: resp.Body, max: t.MaxMessage, events: events, tooLarge: t.TooLarge, trips: t.Trips}
		}
		switch {
		case events && t.gate != nil:
			// The server's requests pass the bound (peerGate); a legacy
			// SSE stream's first endpoint event is the only one.
			resp.Body = newEventFilter(resp.Body, t.gate.keep(req, req.Method == http.MethodGet))
		case events && req.Method == http.MethodGet:
			// A legacy SSE stream: its first endpoint event is the only one.
			resp.Body = newEndpointFilter(resp.Body)
		}
		if tee && (events && req.Method == http.MethodGet || listed && (events || ct == "application/json")) {
			resp.Body = &taskTee{rc: resp.Body, l: t.Listings, max: t.MaxMessage, events: events}
		}
	}
	return resp, err
}

// EndSession ends the requests of the legacy SSE session made through t
// that still wait for an answer, and fails those to come. Call it before
// closing the session, which waits for them: a server that dropped the
// session may never answer them (ssePosts). A Streamable HTTP session is
// not affected.
func (t *HeaderTransport) EndSession() {
	if p := t.sse.Load(); p != nil {
		p.end()
	}
}

// ViaID returns the id the gateway names itself by to this server in
// ViaHeader, "" without a ViaKey. The first call, once Origin is set,
// works it out and adds it to ViaSent; later calls return it.
func (t *HeaderTransport) ViaID() string {
	if t.ViaKey == nil {
		return ""
	}
	if id := t.viaID.Load(); id != nil {
		return *id
	}
	id := ViaID(t.ViaKey, t.Origin)
	if t.ViaSent != nil {
		t.ViaSent.Add(id)
	}
	t.viaID.Store(&id)
	return id
}

// LastPOST is the HTTP status of the last POST answered, or 0 before
// one was.
func (t *HeaderTransport) LastPOST() int32 { return t.lastPOST.Load() }

// refusal returns, when a connection failed, the refusal of a request
// that reached the gateway itself or of one to another origin, if there
// was one: the reason, named without the URL's path or query. Else it
// returns err.
func (t *HeaderTransport) refusal(err error) error {
	if err == nil {
		return nil
	}
	if r := t.self.Load(); r != nil {
		return r
	}
	if r := t.loop.Swap(nil); r != nil {
		// A loop is the chain of one request, not the server's for good.
		return r
	}
	if r := t.refused.Load(); r != nil {
		return r
	}
	return err
}

// boundedBody bounds what one message of an HTTP response may take, as
// the stdio connection does for a line: the whole body of a JSON
// response, each event of an event stream (Streamable HTTP answers a
// call with one; legacy SSE keeps one open). Past the bound, reads fail
// with tooLarge, so a server cannot make the gateway buffer an endless
// message.
type boundedBody struct {
	rc       io.ReadCloser
	max      int
	events   bool          // text/event-stream: the count starts again at each event
	tooLarge error         // the error of a read past max
	trips    *atomic.Int64 // counts bodies cut short, when set
	n        int           // bytes of the current message
	mid      bool          // the last byte did not end a line
	cr       bool          // the last byte was a CR (of a CRLF, perhaps)
	err      error
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.rc.Read(p)
	for _, c := range p[:n] {
		switch {
		case c == '\n' && b.cr:
			b.cr = false // CRLF ends one line
		case c == '\n' || c == '\r':
			if !b.mid && b.events {
				b.n = 0 // an empty line ends an event
			}
			b.mid, b.cr = false, c == '\r'
		default:
			b.mid, b.cr = true, false
		}
		b.n++
	}
	if b.n > b.max {
		b.err = b.tooLarge
		if b.trips != nil {
			b.trips.Add(1)
		}
		return n, b.err
	}
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }

// HTTPClient returns the client for one HTTP server. It refuses
// redirects to another origin than the first request's: a configured
// header (an API key, say) must not follow the request to a host the
// user did not name. ([HeaderTransport] refuses such requests too; this
// names the redirect.)
func HTTPClient(rt http.RoundTripper) *http.Client {
	return &http.Client{
		Transport: rt,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return errors.New("stopped after 5 redirects")
			}
			if !sameOrigin(req.URL, via[0].URL) {
				o, _ := OriginOf(req.URL)
				return fmt.Errorf("refused a redirect to another origin (%s)", o)
			}
			return nil
		},
	}
}

// Discard reads what is left of a response's body, up to 64 KiB (so
// that its connection can serve another request), and closes it.
func Discard(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
}

// Unauthorized reports whether a status answering the initialize POST
// asks for credentials.
func Unauthorized(status int32) bool {
	return status == http.StatusUnauthorized || status == http.StatusForbidden
}

// notSupported reports whether a status answering the initialize POST
// means "this endpoint does not speak Streamable HTTP", which is when the
// MCP spec tells clients to try the older SSE transport.
func notSupported(status int32) bool {
	return status == http.StatusBadRequest || status == http.StatusNotFound || status == http.StatusMethodNotAllowed
}

// HTTPMode is which HTTP transport [ConnectHTTP] speaks.
type HTTPMode int

const (
	// Streamable speaks Streamable HTTP.
	Streamable HTTPMode = iota
	// SSE speaks the legacy SSE transport.
	SSE
	// StreamableOrSSE speaks Streamable HTTP, or SSE when the server
	// says it does not speak Streamable HTTP: a config that names no
	// transport.
	StreamableOrSSE
)

// ConnectHTTP connects client to the HTTP server at endpoint as mode
// says, falling back from Streamable HTTP to SSE when the mode allows it
// and the server says it does not speak Streamable HTTP. sse reports
// whether the transport that worked (or failed last) is SSE. oauth, when
// not nil, authorizes the requests of either transport: a 401 (or 403)
// on the SSE stream's GET or on a POST to its endpoint goes to the same
// handler as one on a Streamable HTTP POST. Every request goes
// through ht, bound to the origin of endpoint; a request ht refused for
// its origin, or for reaching the gateway itself, is the error reported,
// in place of the SDK's (which quotes the whole URL).
func ConnectHTTP(ctx context.Context, client *mcp.Client, endpoint string, mode HTTPMode, ht *HeaderTransport, oauth auth.OAuthHandler, opts *mcp.ClientSessionOptions) (cs *mcp.ClientSession, sse bool, err error) {
	if u, err := url.Parse(endpoint); err == nil {
		ht.Origin, _ = OriginOf(u)
	}
	ht.gate = &peerGate{base: ht.Base, origin: ht.Origin, peer: line.NewPeerRequests(ht.MaxMessage, ht.PeerMethods)}
	hc := HTTPClient(ht)
	// Each SSE session has a client of its own, whose POSTs end with it
	// (ssePosts, below a login, which it does not bound).
	sseClient := func() *http.Client {
		posts := newSSEPosts(ht, ht.SSEPostWait)
		ht.sse.Store(posts)
		var rt http.RoundTripper = posts
		if oauth != nil {
			// The SDK's SSE transport takes no OAuth handler: its
			// requests are authorized on their way to ht.
			if u, err := url.Parse(endpoint); err == nil {
				rt = &sseOAuth{next: rt, handler: oauth, endpoint: u}
			}
		}
		return HTTPClient(rt)
	}
	if mode == SSE {
		cs, err := client.Connect(ctx, &mcp.SSEClientTransport{Endpoint: endpoint, HTTPClient: sseClient()}, opts)
		return cs, true, ht.refusal(err)
	}
	// The SDK's default retries resume a call's stream (GET with
	// Last-Event-ID) when the server closes it mid-call.
	cs, err = client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, OAuthHandler: oauth}, opts)
	if err == nil || mode != StreamableOrSSE || !notSupported(ht.lastPOST.Load()) || ctx.Err() != nil {
		return cs, false, ht.refusal(err)
	}
	cs, sseErr := client.Connect(ctx, &mcp.SSEClientTransport{Endpoint: endpoint, HTTPClient: sseClient()}, opts)
	if sseErr != nil {
		if r := ht.refusal(sseErr); r != sseErr {
			return nil, true, r
		}
		return nil, true, fmt.Errorf("streamable HTTP: %v; SSE fallback: %w", err, sseErr)
	}
	return cs, true, nil
}
