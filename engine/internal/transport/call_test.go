package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/internal/testwait"
)

// callServer answers each POST with answer(id of the request, its body):
// a content type and a body. Requests that are not calls (a reply to a
// ping, a cancellation) are recorded in posts.
type callServer struct {
	mu     sync.Mutex
	posts  []string
	answer func(id string) (status int, contentType, body string)
}

func (c *callServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	data, _ := io.ReadAll(r.Body)
	var msg struct {
		ID     any    `json:"id"`
		Method string `json:"method"`
	}
	_ = json.Unmarshal(data, &msg)
	if r.Header.Get("Mcp-Session-Id") != "sess-1" || r.Header.Get("Mcp-Protocol-Version") != "2025-11-25" {
		http.Error(w, "bad headers", http.StatusBadRequest)
		return
	}
	if msg.Method != "tools/call" {
		c.mu.Lock()
		c.posts = append(c.posts, string(data))
		c.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
		return
	}
	status, ct, body := c.answer(msg.ID.(string))
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

func (c *callServer) posted() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.posts...)
}

var errTestTooLarge = errors.New("message too large")

func newCaller(t *testing.T, h http.Handler) *Caller {
	t.Helper()
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return &Caller{Client: hs.Client(), Endpoint: hs.URL, Session: "sess-1", Protocol: "2025-11-25", Max: 4096, TooLarge: errTestTooLarge}
}

func response(id, result string) string {
	return `{"jsonrpc":"2.0","id":"` + id + `","result":` + result + `}`
}

// TestCallerReadsEveryAnswerForm checks a call answered as a JSON body,
// and as an event stream that first carries a progress notification, a
// list_changed notification, a ping and another call's response.
func TestCallerReadsEveryAnswerForm(t *testing.T) {
	ctx := context.Background()
	params := []byte(`{"name":"echo","arguments":{}}`)
	const result = `{"content":[{"type":"text","text":"hi"}]}`
	srv := &callServer{answer: func(id string) (int, string, string) {
		return 200, "application/json", response(id, result)
	}}
	h := newCaller(t, srv)
	raw, err := h.Call(ctx, params, nil, nil)
	if err != nil || string(raw) != result {
		t.Fatalf("JSON answer: %s %v", raw, err)
	}

	srv.answer = func(id string) (int, string, string) {
		return 200, "text/event-stream; charset=utf-8", "event: message\r\ndata: " +
			`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1,"total":2}}` + "\r\n\r\n" +
			": a comment\n\n" +
			"data: " + `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` + "\n\n" +
			"data: " + `{"jsonrpc":"2.0","id":7,"method":"ping"}` + "\n\n" +
			"data: " + response("another", `{}`) + "\n\n" +
			"event: message\ndata: " + response(id, result) + "\n\n"
	}
	var progress []float64
	var changed []string
	raw, err = h.Call(ctx, params, func(p *mcp.ProgressNotificationParams) { progress = append(progress, p.Progress) },
		func(method string) { changed = append(changed, method) })
	if err != nil || string(raw) != result {
		t.Fatalf("event stream: %s %v", raw, err)
	}
	if len(progress) != 1 || progress[0] != 1 || len(changed) != 1 || changed[0] != "notifications/tools/list_changed" {
		t.Errorf("notifications: progress %v, changed %v", progress, changed)
	}
	// The ping is answered, as the SDK's client answers it.
	deadline := testwait.Deadline(t)
	for len(srv.posted()) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if p := srv.posted(); len(p) != 1 || !strings.Contains(p[0], `"id":7`) || !strings.Contains(p[0], `"result":{}`) {
		t.Errorf("the ping's answer: %q", p)
	}
	if h.Made() != 2 {
		t.Errorf("Made = %d, want 2", h.Made())
	}
}

// TestCallerRefusals checks how a call ends when the server refuses it
// or answers out of bounds.
func TestCallerRefusals(t *testing.T) {
	ctx := context.Background()
	params := []byte(`{"name":"echo","arguments":{}}`)
	for _, c := range []struct {
		name        string
		status      int
		contentType string
		body        func(id string) string
		want        func(error) bool
	}{
		{"unknown session", 404, "text/plain", func(string) string { return "session not found" }, func(err error) bool { return errors.Is(err, ErrRetrySDK) }},
		{"unauthorized", 401, "text/plain", func(string) string { return "" }, func(err error) bool { return errors.Is(err, ErrRetrySDK) }},
		{"server error", 500, "text/plain", func(string) string { return "" }, func(err error) bool { return err != nil && strings.Contains(err.Error(), "HTTP 500") }},
		{"another content type", 200, "text/html", func(string) string { return "<p>" }, func(err error) bool { return err != nil && strings.Contains(err.Error(), "text/html") }},
		{"JSON too large", 200, "application/json", func(id string) string { return response(id, `"`+strings.Repeat("x", 5000)+`"`) }, func(err error) bool { return errors.Is(err, errTestTooLarge) }},
		{"event too large", 200, "text/event-stream", func(id string) string { return "data: " + response(id, `"`+strings.Repeat("x", 5000)+`"`) + "\n\n" }, func(err error) bool { return errors.Is(err, errTestTooLarge) }},
		{"stream ends first", 200, "text/event-stream", func(string) string { return "data: " + response("other", `{}`) + "\n\n" }, func(err error) bool { return err != nil && strings.Contains(err.Error(), "without an answer") }},
		{"not JSON-RPC", 200, "application/json", func(string) string { return `{"jsonrpc":"1.0"}` }, func(err error) bool { var b *BrokenAnswer; return errors.As(err, &b) }},
		{"an error answer", 200, "application/json", func(id string) string {
			return `{"jsonrpc":"2.0","id":"` + id + `","error":{"code":-32602,"message":"bad params"}}`
		}, func(err error) bool { var je *jsonrpc.Error; return errors.As(err, &je) && je.Code == -32602 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newCaller(t, &callServer{answer: func(id string) (int, string, string) { return c.status, c.contentType, c.body(id) }})
			raw, err := h.Call(ctx, params, nil, nil)
			if raw != nil || !c.want(err) {
				t.Errorf("got %s, %v", raw, err)
			}
		})
	}
}

// TestCallerCancels checks that a call whose context ends tells the
// server, as the SDK's client does.
func TestCallerCancels(t *testing.T) {
	release := make(chan struct{})
	srv := &callServer{answer: func(id string) (int, string, string) {
		<-release
		return 200, "application/json", response(id, `{}`)
	}}
	h := newCaller(t, srv)
	defer close(release)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	if _, err := h.Call(ctx, []byte(`{"name":"slow","arguments":{}}`), nil, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled call: %v", err)
	}
	deadline := testwait.Deadline(t)
	for len(srv.posted()) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if p := srv.posted(); len(p) != 1 || !strings.Contains(p[0], "notifications/cancelled") || !strings.Contains(p[0], `"requestId":"voltmcp-h1"`) {
		t.Errorf("the cancellation: %q", p)
	}
}

// FuzzCallerEvents feeds a call's event stream bytes: the caller never
// panics, returns at most one of a result and an error, and a result is
// only ever the one the stream gave for the call's id, byte for byte.
func FuzzCallerEvents(f *testing.F) {
	f.Add([]byte("data: " + response("voltmcp-h1", `{"a":1}`) + "\n\n"))
	f.Add([]byte("event: message\r\ndata: {\"jsonrpc\":\"2.0\",\r\ndata: \"id\":\"voltmcp-h1\",\"result\":[]}\r\n\r\n"))
	f.Add([]byte("data: {\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"roots/list\"}\n\ndata: " + response("voltmcp-h1", `null`) + "\n"))
	f.Add([]byte("data:" + strings.Repeat("[", 2000) + "\n\n"))
	f.Fuzz(func(t *testing.T, stream []byte) {
		h := &Caller{Client: &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 202, Body: io.NopCloser(bytes.NewReader(nil))}, nil
		})}, Endpoint: "http://127.0.0.1:1/", Max: 1 << 16, TooLarge: errTestTooLarge}
		raw, err := h.events(context.Background(), "voltmcp-h1", bytes.NewReader(stream), nil, nil)
		if raw != nil && err != nil {
			t.Fatalf("both a result and an error: %s %v", raw, err)
		}
		if raw != nil {
			if !json.Valid(raw) {
				t.Fatalf("an invalid result: %q", raw)
			}
			if !bytes.Contains(bytes.ReplaceAll(stream, []byte("\ndata: "), []byte("\n")), bytes.TrimSpace(raw)) && !bytes.Contains(stream, raw) {
				// A result spread over data lines is joined by newlines;
				// compare without the field names.
				joined := bytes.ReplaceAll(bytes.ReplaceAll(stream, []byte("data: "), nil), []byte("data:"), nil)
				if !bytes.Contains(bytes.ReplaceAll(joined, []byte("\r"), nil), bytes.ReplaceAll(raw, []byte("\r"), nil)) {
					t.Fatalf("a result the stream did not give: %q", raw)
				}
			}
		}
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
