package mcptest

import (
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServeHTTP serves mode on two servers bound to 127.0.0.1 and returns their
// URLs: one speaks Streamable HTTP at path /mcp, the other legacy HTTP+SSE
// at path /sse. Each has its own mcp.Server, so that a change made through
// one (mode list-changed) does not show in the other. Both stop when the
// test ends. Mode is behave, hang-call, list-changed, or one of the
// oversized-output modes flood-result, binary-result and huge-resource.
//
// A call to the hang tool returns only when the test ends, and a go-sdk
// server closes a session only once its handlers return: until then,
// closing a session with such a call in flight blocks on the server side
// (the go-sdk Streamable HTTP client gives its DELETE 5 seconds).
func ServeHTTP(t testing.TB, mode string) (streamableURL, sseURL string) {
	t.Helper()
	requireHTTPMode(t, mode, false)
	h := newHTTPHarness(t)
	streamable := mcp.NewStreamableHTTPHandler(h.getServer(mode), nil)
	sse := mcp.NewSSEHandler(h.getServer(mode), nil)
	return h.serve(t, "/mcp", streamable), h.serve(t, "/sse", sse)
}

// ServeStreamableOnly serves mode over Streamable HTTP at the returned URL,
// where POST works but GET (which opens the server-to-client SSE stream, or
// a legacy SSE session) gets 405 Method Not Allowed. Mode is one of
// ServeHTTP's, repeat-cursor, bad-metadata, or one of the raw
// hostile modes that only answer (huge-metadata, many-tools, schema-bomb
// and the rug-pull modes); the raw modes are served by a sessionless
// server that answers each POST with JSON.
func ServeStreamableOnly(t testing.TB, mode string) string {
	t.Helper()
	requireHTTPMode(t, mode, true)
	h := newHTTPHarness(t)
	inner := h.streamableHandler(mode)
	return h.serve(t, "/mcp", http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodGet {
			w.Header().Set("Allow", "POST, DELETE")
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
			return
		}
		inner.ServeHTTP(w, req)
	}))
}

// ServeSSEOnly serves mode over legacy HTTP+SSE only, as servers from
// before Streamable HTTP do: a GET of the returned URL opens a session, a
// POST to it with the session's query (the endpoint the server announces)
// carries a message, and any other POST gets 404 Not Found. Its modes are
// ServeHTTP's, the raw ones of ServeStreamableOnly and flood-requests,
// whose requests go on the session's stream before the answer.
func ServeSSEOnly(t testing.TB, mode string) string {
	t.Helper()
	if mode != ModeFloodRequests {
		requireHTTPMode(t, mode, true)
	}
	h := newHTTPHarness(t)
	var sse http.Handler
	if isRawMode(mode) {
		sse = rawSSEHandler(mode, h.stop)
	} else {
		sse = mcp.NewSSEHandler(h.getServer(mode), nil)
	}
	return h.serve(t, "/sse", http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch {
		case req.Method == http.MethodPost && req.URL.Query().Get("sessionid") == "":
			http.NotFound(w, req)
		case req.Method != http.MethodGet && req.Method != http.MethodPost:
			w.Header().Set("Allow", "GET, POST")
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		default:
			sse.ServeHTTP(w, req)
		}
	}))
}

// ServeHTTPWithHeaderCheck serves mode over Streamable HTTP at the returned
// URL, answering 401 Unauthorized to every request that does not carry the
// header with exactly the value. Modes are those of ServeStreamableOnly.
func ServeHTTPWithHeaderCheck(t testing.TB, mode, header, value string) string {
	t.Helper()
	requireHTTPMode(t, mode, true)
	h := newHTTPHarness(t)
	inner := h.streamableHandler(mode)
	return h.serve(t, "/mcp", http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if got, ok := req.Header[http.CanonicalHeaderKey(header)]; !ok || len(got) != 1 || got[0] != value {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		inner.ServeHTTP(w, req)
	}))
}

// requireHTTPMode fails the test unless mode can be served over HTTP (raw
// modes only when raw is set).
func requireHTTPMode(t testing.TB, mode string, raw bool) {
	t.Helper()
	if isHTTPMode(mode) || raw && isRawHTTPMode(mode) {
		return
	}
	t.Fatalf("mcptest: mode %q cannot be served by this HTTP helper", mode)
}

// httpHarness owns the servers of one Serve call and stops them, and every
// handler they run, when the test ends.
type httpHarness struct {
	stop    chan struct{}      // closed first, to release hang handlers
	https   []*httptest.Server // the HTTP servers
	servers []*mcp.Server      // the MCP servers behind them
}

// newHTTPHarness returns a harness that stops its servers when the test
// ends.
func newHTTPHarness(t testing.TB) *httpHarness {
	h := &httpHarness{stop: make(chan struct{})}
	t.Cleanup(h.close)
	return h
}

// close releases blocked handlers, then drops every connection (a hanging
// GET stream or tool call would otherwise keep an HTTP server from
// closing), shuts the HTTP servers down and closes the MCP sessions that
// outlive their connections (Streamable HTTP sessions do).
func (h *httpHarness) close() {
	close(h.stop)
	for _, ts := range h.https {
		ts.CloseClientConnections()
		ts.Close()
	}
	for _, s := range h.servers {
		for ss := range s.Sessions() {
			_ = ss.Close()
		}
	}
}

// getServer returns a getServer function for the go-sdk HTTP handlers that
// always returns the same new server of mode.
func (h *httpHarness) getServer(mode string) func(*http.Request) *mcp.Server {
	s := newServer(mode, serverConfig{stop: h.stop})
	h.servers = append(h.servers, s)
	return func(*http.Request) *mcp.Server { return s }
}

// streamableHandler returns the Streamable HTTP handler of mode: the
// go-sdk's for an SDK mode, the raw one for a raw mode.
func (h *httpHarness) streamableHandler(mode string) http.Handler {
	if isRawMode(mode) {
		return rawHTTPHandler(mode)
	}
	return mcp.NewStreamableHTTPHandler(h.getServer(mode), nil)
}

// serve serves handler at path on a new server bound to 127.0.0.1 and
// returns its URL.
func (h *httpHarness) serve(t testing.TB, path string, handler http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("mcptest: listening on 127.0.0.1: %v", err)
	}
	mux := http.NewServeMux()
	mux.Handle(path, handler)
	ts := &httptest.Server{Listener: ln, Config: &http.Server{Handler: mux}}
	ts.Start()
	h.https = append(h.https, ts)
	return ts.URL + path
}
