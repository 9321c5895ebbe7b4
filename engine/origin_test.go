package engine

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/internal/testwait"
)

// canaryToken is the secret in the configured Authorization header of the
// origin tests: it must never reach a listener of another origin.
const canaryToken = "canary_5f1e0c7a9b3d4e21"

// foreignListener is a server of another origin than the configured one.
// It counts what reaches it and whether the canary came along.
type foreignListener struct {
	url      string
	requests atomic.Int32
	canary   atomic.Bool
}

func newForeignListener(t *testing.T) *foreignListener {
	t.Helper()
	f := &foreignListener{}
	ts, u := serveLoopback(t)
	ts.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.requests.Add(1)
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		for _, vs := range r.Header {
			for _, v := range vs {
				if strings.Contains(v, canaryToken) {
					f.canary.Store(true)
				}
			}
		}
		if bytes.Contains(body, []byte(canaryToken)) || strings.Contains(r.URL.String(), canaryToken) {
			f.canary.Store(true)
		}
		w.WriteHeader(http.StatusAccepted)
	})
	ts.Start()
	f.url = u
	return f
}

// canaryOptions is a workspace whose servers send the canary in their
// Authorization header, read from the environment.
func canaryOptions(t *testing.T, servers map[string]server) Options {
	opts := workspace(t, servers, nil)
	host := opts.LookupEnv
	opts.LookupEnv = func(k string) (string, bool) {
		if k == "CANARY" {
			return canaryToken, true
		}
		return host(k)
	}
	return opts
}

// TestSSEEndpointOfAnotherOriginIsRefused: a legacy SSE server whose
// endpoint event names another origin gets no POST there, and the
// configured Authorization header goes nowhere but the configured origin.
func TestSSEEndpointOfAnotherOriginIsRefused(t *testing.T) {
	t.Parallel()
	foreign := newForeignListener(t)
	fu, _ := url.Parse(foreign.url)
	// Each endpoint names the foreign listener (or, for https, the SSE
	// server's own port under another scheme) in another spelling.
	sse, sseURL := serveLoopback(t)
	su, _ := url.Parse(sseURL)
	endpoints := map[string]string{
		"absolute":     foreign.url + "/messages?sessionid=1",
		"scheme-rel":   "//" + fu.Host + "/messages?sessionid=1",
		"userinfo":     "http://" + su.Host + "@" + fu.Host + "/messages",
		"localhost":    "http://localhost:" + fu.Port() + "/messages",
		"https-same":   "https://" + su.Host + "/messages",
		"ipv6-mapped":  "http://[::ffff:127.0.0.1]:" + fu.Port() + "/messages",
		"other-scheme": "ftp://" + fu.Host + "/messages",
	}
	var mu sync.Mutex
	posts := 0
	sse.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			mu.Lock()
			posts++
			mu.Unlock()
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: endpoint\ndata: %s\n\n", endpoints[strings.TrimPrefix(r.URL.Path, "/")])
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	sse.Start()
	servers := map[string]server{}
	for name := range endpoints {
		servers[name] = server{"url": sseURL + "/" + name, "transport": "sse", "connectTimeoutMs": 5000,
			"headers": map[string]string{"Authorization": "Bearer ${env:CANARY}"}}
	}
	e := start(t, canaryOptions(t, servers))
	ctx := testwait.Context(t)
	for name := range endpoints {
		err := e.Connect(ctx, name)
		if err == nil {
			t.Errorf("%s: connected through an endpoint of another origin", name)
			continue
		}
		msg := err.Error()
		if name != "other-scheme" && (!strings.Contains(msg, "server "+name+": refused") || !strings.Contains(msg, "another origin")) {
			t.Errorf("%s: error does not name the refusal: %v", name, err)
		}
		if strings.Contains(msg, "sessionid") || strings.Contains(msg, "/messages") || strings.Contains(msg, canaryToken) {
			t.Errorf("%s: error shows more than the origin: %v", name, err)
		}
	}
	if n := foreign.requests.Load(); n != 0 || foreign.canary.Load() {
		t.Errorf("the foreign listener got %d requests (canary: %v)", n, foreign.canary.Load())
	}
	mu.Lock()
	defer mu.Unlock()
	if posts != 0 {
		t.Errorf("the SSE server got %d POSTs", posts)
	}
}

// TestRedirectToAnotherOriginCarriesNoHeader: a Streamable HTTP or SSE
// server that redirects to another origin gets the request refused; the
// configured header never reaches the other origin.
func TestRedirectToAnotherOriginCarriesNoHeader(t *testing.T) {
	t.Parallel()
	foreign := newForeignListener(t)
	ts, u := serveLoopback(t)
	ts.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, foreign.url+"/mcp?k=v", http.StatusTemporaryRedirect)
	})
	ts.Start()
	e := start(t, canaryOptions(t, map[string]server{
		"streamable": {"url": u + "/mcp", "transport": "streamable-http", "headers": map[string]string{"Authorization": "Bearer ${env:CANARY}"}},
		"sse":        {"url": u + "/sse", "transport": "sse", "auth": map[string]any{"type": "env", "variable": "CANARY"}},
	}))
	ctx := testwait.Context(t)
	for _, id := range []string{"streamable", "sse"} {
		err := e.Connect(ctx, id)
		if err == nil || !strings.Contains(err.Error(), "another origin") {
			t.Errorf("%s: %v", id, err)
		}
	}
	if n := foreign.requests.Load(); n != 0 || foreign.canary.Load() {
		t.Errorf("the foreign listener got %d requests (canary: %v)", n, foreign.canary.Load())
	}
}

// TestSSELaterEndpointEventIsIgnored: an endpoint event after the first
// neither moves the POSTs nor ends the session.
func TestSSELaterEndpointEventIsIgnored(t *testing.T) {
	t.Parallel()
	foreign := newForeignListener(t)
	ms := mcp.NewServer(&mcp.Implementation{Name: "sse-test", Version: "1"}, nil)
	mcp.AddTool(ms, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	inner := mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return ms }, nil)
	ts, u := serveLoopback(t)
	var streams atomic.Int32
	ts.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			streams.Add(1)
			w = &injectEvents{ResponseWriter: w, extra: "event: endpoint\ndata: " + foreign.url + "/messages?sessionid=x\n\n" +
				"data: " + foreign.url + "/other\nevent: endpoint\n\n"}
		}
		inner.ServeHTTP(w, r)
	})
	ts.Start()
	t.Cleanup(func() {
		for ss := range ms.Sessions() {
			_ = ss.Close()
		}
	})
	e := start(t, canaryOptions(t, map[string]server{
		"s": {"url": u + "/sse", "transport": "sse", "headers": map[string]string{"Authorization": "Bearer ${env:CANARY}"}},
	}))
	ctx := testwait.Context(t)
	for i := range 3 {
		res, err := e.callUngated(ctx, "s", "echo", map[string]any{"text": fmt.Sprint(i)})
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if text(res) != fmt.Sprint(i) {
			t.Fatalf("call %d: %q", i, text(res))
		}
	}
	if n := foreign.requests.Load(); n != 0 || foreign.canary.Load() {
		t.Errorf("the foreign listener got %d requests (canary: %v)", n, foreign.canary.Load())
	}
	// One session served every call: the later events did not end it.
	if n := streams.Load(); n != 1 {
		t.Errorf("%d SSE sessions opened, want 1", n)
	}
}

// injectEvents writes extra events into an event stream before its
// second event: after the go-sdk client has read the endpoint event and
// posted its first message.
type injectEvents struct {
	http.ResponseWriter
	extra  string
	writes int
}

func (w *injectEvents) Write(p []byte) (int, error) {
	if w.writes++; w.writes == 2 {
		if _, err := io.WriteString(w.ResponseWriter, w.extra); err != nil {
			return 0, err
		}
	}
	return w.ResponseWriter.Write(p)
}

func (w *injectEvents) Flush() { w.ResponseWriter.(http.Flusher).Flush() }
