package transport

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// errTooLarge is the error the bounded bodies of the tests fail with.
var errTooLarge = errors.New("message too large")

// TestBoundedBody checks the bound of one message in an HTTP response:
// the whole body of JSON, each event of an event stream, whatever its
// line endings.
func TestBoundedBody(t *testing.T) {
	event := func(data, eol string) string { return "event: message" + eol + "data: " + data + eol + eol }
	for _, c := range []struct {
		name   string
		body   string
		events bool
		fails  bool
	}{
		{"json under", strings.Repeat("x", 100), false, false},
		{"json over", strings.Repeat("x", 101), false, true},
		// Many small events add up past the bound, each under it.
		{"events LF", strings.Repeat(event(strings.Repeat("a", 50), "\n"), 20), true, false},
		{"events CRLF", strings.Repeat(event(strings.Repeat("a", 50), "\r\n"), 20), true, false},
		{"events CR", strings.Repeat(event(strings.Repeat("a", 50), "\r"), 20), true, false},
		{"one event over", event(strings.Repeat("a", 120), "\n"), true, true},
		// A CRLF is one line end, not an empty line.
		{"CRLF lines of one event", "data: " + strings.Repeat("a\r\n", 60), true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := &boundedBody{rc: io.NopCloser(&slowReader{s: c.body}), max: 100, events: c.events, tooLarge: errTooLarge}
			got, err := io.ReadAll(b)
			if fails := errors.Is(err, errTooLarge); fails != c.fails || (err != nil && !fails) {
				t.Fatalf("read %d bytes, error %v; want failure %v", len(got), err, c.fails)
			}
			if !c.fails && string(got) != c.body {
				t.Errorf("read %q", got)
			}
		})
	}
}

// slowReader returns at most 7 bytes a read, so that events and line
// ends straddle reads.
type slowReader struct{ s string }

func (r *slowReader) Read(p []byte) (int, error) {
	if r.s == "" {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), 7)], r.s)
	r.s = r.s[n:]
	return n, nil
}

// TestHeaderTransport: a request to the configured origin gets the
// headers SetHeaders sets and its POST status is kept; a request to
// another origin, in any spelling, is refused unsent, and a failed
// connection reports that refusal in place of its own error.
func TestHeaderTransport(t *testing.T) {
	var got atomic.Pointer[string]
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := r.Header.Get("X-Key")
		got.Store(&v)
		w.WriteHeader(http.StatusTeapot)
	}))
	defer ts.Close()
	u, _ := url.Parse(ts.URL)
	o, _ := OriginOf(u)
	ht := &HeaderTransport{Base: http.DefaultTransport, Server: "s", Origin: o,
		SetHeaders: func(h http.Header) error { h.Set("X-Key", "k1"); return nil }}
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader("{}"))
	resp, err := ht.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if p := got.Load(); p == nil || *p != "k1" || ht.LastPOST() != http.StatusTeapot {
		t.Errorf("header %v, last POST %d", p, ht.LastPOST())
	}
	if req.Header.Get("X-Key") != "" {
		t.Error("the caller's request was changed")
	}
	got.Store(nil)
	for _, other := range []string{"http://localhost:" + u.Port() + "/x", "https://" + u.Host + "/x", "http://" + u.Hostname() + ":1/x?token=secret-query"} {
		req, _ := http.NewRequest(http.MethodGet, other, nil)
		_, err := ht.RoundTrip(req)
		var co *CrossOriginError
		if !errors.As(err, &co) || co.Server != "s" || strings.Contains(err.Error(), "secret-query") {
			t.Errorf("%s: %v", other, err)
		}
	}
	if got.Load() != nil {
		t.Error("a request of another origin reached the server")
	}
	if err := ht.refusal(errors.New("the SDK's error")); !strings.Contains(err.Error(), "localhost") {
		t.Errorf("refusal: %v", err)
	}
	if ht.refusal(nil) != nil {
		t.Error("a refusal for a connection that did not fail")
	}
}

// TestConnectHTTPRefusesItself: a server whose answers carry the
// gateway's own instance id fails the connection with a *SelfError,
// through the Streamable HTTP to SSE fallback too, whatever the status;
// another id is a server like any other.
func TestConnectHTTPRefusesItself(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(InstanceHeader, "me")
		http.Error(w, "not found", http.StatusNotFound)
	}))
	defer ts.Close()
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	for _, mode := range []HTTPMode{Streamable, SSE, StreamableOrSSE} {
		ht := &HeaderTransport{Base: http.DefaultTransport, Server: "self", Self: "me"}
		_, _, err := ConnectHTTP(t.Context(), client, ts.URL+"/mcp", mode, ht, nil, nil)
		var self *SelfError
		if !errors.As(err, &self) || self.Server != "self" || !strings.Contains(err.Error(), "server self is this gateway itself") {
			t.Errorf("mode %d: %v", mode, err)
		}
		ht = &HeaderTransport{Base: http.DefaultTransport, Server: "other", Self: "not me"}
		if _, _, err := ConnectHTTP(t.Context(), client, ts.URL+"/mcp", mode, ht, nil, nil); err == nil || errors.As(err, &self) {
			t.Errorf("mode %d, another gateway: %v", mode, err)
		}
	}
}

// TestConnectHTTPRefusesTheGatewaysToken: in every HTTP mode, a request
// whose Authorization carries one of SelfTokens is refused before it is
// sent; another bearer is sent.
func TestConnectHTTPRefusesTheGatewaysToken(t *testing.T) {
	var got atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		http.Error(w, "not found", http.StatusNotFound)
	}))
	defer ts.Close()
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	bearer := func(tok string) func(http.Header) error {
		return func(h http.Header) error { h.Set("Authorization", "bearer  "+tok); return nil }
	}
	for _, mode := range []HTTPMode{Streamable, SSE, StreamableOrSSE} {
		ht := &HeaderTransport{Base: http.DefaultTransport, Server: "self", SelfTokens: []string{"other", "tok-en"}, SetHeaders: bearer("tok-en")}
		_, _, err := ConnectHTTP(t.Context(), client, ts.URL+"/mcp", mode, ht, nil, nil)
		var self *SelfError
		if !errors.As(err, &self) || !self.Token || !strings.Contains(err.Error(), "'voltmcp disable self'") || strings.Contains(err.Error(), "tok-en") {
			t.Errorf("mode %d: %v", mode, err)
		}
		if n := got.Load(); n != 0 {
			t.Fatalf("mode %d: %d requests reached the server", mode, n)
		}
		ht = &HeaderTransport{Base: http.DefaultTransport, Server: "other", SelfTokens: []string{"tok-en"}, SetHeaders: bearer("tok-en2")}
		if _, _, err := ConnectHTTP(t.Context(), client, ts.URL+"/mcp", mode, ht, nil, nil); err == nil || errors.As(err, &self) || got.Load() == 0 {
			t.Errorf("mode %d, another token: %v", mode, err)
		}
		got.Store(0)
	}
}
