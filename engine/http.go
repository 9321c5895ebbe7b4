package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/engine/internal/line"
)

// headerTransport adds a server's configured headers and auth to every
// request, resolving ${env:NAME} references at the moment the request is
// sent, and records the status of the last POST (for the Streamable HTTP
// to SSE fallback). It is the one way to a server's origin: a request to
// any other origin than origin (the configured URL's) is refused before
// it is sent, whoever named its URL (a legacy SSE endpoint event, a
// redirect, a token refresh), so no configured header or token leaves
// that origin.
type headerTransport struct {
	base   http.RoundTripper
	srv    cue.Server
	origin origin // of the configured URL; the zero origin refuses every request
	// refused is the first request refused for its origin, which
	// connectHTTP reports in place of the SDK's error (that quotes the
	// whole URL).
	refused  atomic.Pointer[crossOriginError]
	lookup   func(string) (string, bool)
	scrub    *scrubber
	lastPOST atomic.Int32
	// maxMessage bounds one message of a response (boundedBody); zero
	// means no bound. trips, when set, counts the responses cut short.
	maxMessage int
	trips      *atomic.Int64
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if o, ok := originOf(req.URL); !ok || o != t.origin {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		err := &crossOriginError{server: t.srv.ID, to: o}
		t.refused.CompareAndSwap(nil, err)
		return nil, err
	}
	req = req.Clone(req.Context())
	for name, raw := range t.srv.Headers {
		v, err := cue.ExpandEnv(raw, t.lookup)
		if err != nil {
			return nil, fmt.Errorf("header %s: %w", name, err)
		}
		if cue.HasEnvRef(raw) {
			t.scrub.add(v)
		}
		req.Header.Set(name, v)
	}
	if a := t.srv.Auth; a != nil {
		switch a.Type {
		case "bearer":
			tok, err := cue.ExpandEnv(a.Token, t.lookup)
			if err != nil {
				return nil, fmt.Errorf("auth token: %w", err)
			}
			t.scrub.add(tok)
			req.Header.Set("Authorization", "Bearer "+tok)
		case "env":
			tok, ok := t.lookup(a.Variable)
			if !ok {
				return nil, fmt.Errorf("auth: %w", &cue.MissingEnvError{Name: a.Variable})
			}
			t.scrub.add(tok)
			header, scheme := "Authorization", "Bearer"
			if a.Header != "" {
				header = a.Header
			}
			if a.Scheme != nil {
				scheme = *a.Scheme
			}
			if scheme != "" {
				tok = scheme + " " + tok
			}
			req.Header.Set(header, tok)
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err == nil && req.Method == http.MethodPost {
		t.lastPOST.Store(int32(resp.StatusCode))
	}
	if err == nil && resp.Body != nil {
		ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		events := ct == "text/event-stream"
		if t.maxMessage > 0 {
			resp.Body = &boundedBody{rc: resp.Body, max: t.maxMessage, events: events, eol: true, trips: t.trips}
		}
		if events && req.Method == http.MethodGet {
			// A legacy SSE stream: its first endpoint event is the only one.
			resp.Body = newEndpointFilter(resp.Body)
		}
	}
	return resp, err
}

// boundedBody bounds what one message of an HTTP response may take, as
// line.Transport does on stdio: the whole body of a JSON response, each
// event of an event stream (Streamable HTTP answers a call with one;
// legacy SSE keeps one open). Past the bound, reads fail with
// line.ErrMessageTooLarge, so a server cannot make the gateway buffer an
// endless message.
type boundedBody struct {
	rc     io.ReadCloser
	max    int
	events bool // text/event-stream: the count starts again at each event
	n      int  // bytes of the current message
	eol    bool // the last byte ended a line
	cr     bool // the last byte was a CR (of a CRLF, perhaps)
	err    error
	trips  *atomic.Int64 // counts bodies cut short, when set
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
			if b.eol && b.events {
				b.n = 0 // an empty line ends an event
			}
			b.eol, b.cr = true, c == '\r'
		default:
			b.eol, b.cr = false, false
		}
		b.n++
	}
	if b.n > b.max {
		b.err = line.ErrMessageTooLarge
		if b.trips != nil {
			b.trips.Add(1)
		}
		return n, b.err
	}
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }

// httpClient returns the client for one HTTP server. It refuses redirects
// to another origin than the first request's: a configured header (an
// API key, say) must not follow the request to a host the user did not
// name. (headerTransport refuses such requests too; this names the
// redirect.)
func httpClient(rt http.RoundTripper) *http.Client {
	return &http.Client{
		Transport: rt,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return errors.New("stopped after 5 redirects")
			}
			if !sameOrigin(req.URL, via[0].URL) {
				o, _ := originOf(req.URL)
				return fmt.Errorf("refused a redirect to another origin (%s)", o)
			}
			return nil
		},
	}
}

// resolveURL expands the references of a server's URL.
func resolveURL(srv cue.Server, lookup func(string) (string, bool), scrub *scrubber) (string, error) {
	u, err := cue.ExpandEnv(srv.URL, lookup)
	if err != nil {
		return "", fmt.Errorf("url: %w", err)
	}
	// Go's URL errors quote the whole URL: show it with its credentials
	// redacted, and hide values that came from the environment.
	scrub.replace(u, cue.RedactURL(u))
	if cue.HasEnvRef(srv.URL) {
		if p, err := url.Parse(u); err == nil && p.RawQuery != "" {
			scrub.add(p.RawQuery)
		}
	}
	return u, nil
}

// unauthorized reports whether a status answering the initialize POST
// asks for credentials.
func unauthorized(status int32) bool {
	return status == http.StatusUnauthorized || status == http.StatusForbidden
}

// notSupported reports whether a status answering the initialize POST
// means "this endpoint does not speak Streamable HTTP", which is when the
// MCP spec tells clients to try the older SSE transport.
func notSupported(status int32) bool {
	return status == http.StatusBadRequest || status == http.StatusNotFound || status == http.StatusMethodNotAllowed
}

// connectHTTP connects to an HTTP server, falling back from Streamable
// HTTP to SSE when the transport was not named and the server says it
// does not speak Streamable HTTP. It returns the transport that worked.
// oauth, when not nil, authorizes the Streamable HTTP requests. Every
// request goes through ht, bound to the origin of endpoint.
func connectHTTP(ctx context.Context, client *mcp.Client, srv cue.Server, endpoint string, ht *headerTransport, oauth auth.OAuthHandler, opts *mcp.ClientSessionOptions) (*mcp.ClientSession, string, error) {
	if u, err := url.Parse(endpoint); err == nil {
		ht.origin, _ = originOf(u)
	}
	hc := httpClient(ht)
	if srv.Transport == cue.TransportSSE && !srv.TransportAuto {
		cs, err := client.Connect(ctx, &mcp.SSEClientTransport{Endpoint: endpoint, HTTPClient: hc}, opts)
		return cs, cue.TransportSSE, ht.refusal(err)
	}
	// The SDK's default retries resume a call's stream (GET with
	// Last-Event-ID) when the server closes it mid-call.
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, OAuthHandler: oauth}, opts)
	if err == nil || !srv.TransportAuto || !notSupported(ht.lastPOST.Load()) || ctx.Err() != nil {
		return cs, cue.TransportStreamableHTTP, ht.refusal(err)
	}
	cs, sseErr := client.Connect(ctx, &mcp.SSEClientTransport{Endpoint: endpoint, HTTPClient: hc}, opts)
	if sseErr != nil {
		if r := ht.refused.Load(); r != nil {
			return nil, cue.TransportSSE, r
		}
		return nil, cue.TransportSSE, fmt.Errorf("streamable HTTP: %v; SSE fallback: %w", err, sseErr)
	}
	return cs, cue.TransportSSE, nil
}

// refusal returns, when a connection failed, the refusal of a request to
// another origin if there was one: the reason, named without the URL's
// path or query. Else it returns err.
func (t *headerTransport) refusal(err error) error {
	if err == nil {
		return nil
	}
	if r := t.refused.Load(); r != nil {
		return r
	}
	return err
}

// defaultGrace is how long a stdio server gets to exit after stdin closes,
// and again after SIGTERM.
const defaultGrace = 2 * time.Second
