package engine

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/engine/internal/transport"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// TestLoopBetweenGatewaysEnds runs two gateways that list each other
// over Streamable HTTP on loopback, A with a stdio server besides: a
// call that goes from A through B back to A is refused by A, and B says
// which of its servers leads back, while a call that goes through B to
// a server that is not a gateway passes. A configured header cannot
// replace the chain the engine sends.
func TestLoopBetweenGatewaysEnds(t *testing.T) {
	t.Parallel()
	ctx := testwait.Context(t)
	lnA, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lnB, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const tokenA, tokenB = testToken + "A", testToken + "B"
	gateway := func(ln net.Listener, token string) server {
		return server{"url": "http://" + ln.Addr().String() + "/", "headers": map[string]string{"Authorization": "Bearer " + token}}
	}
	// The listeners serve before the engines start and until they have
	// closed, so that the sessions between them end as they close.
	var handlers [2]atomic.Pointer[http.Handler]
	for i, ln := range []net.Listener{lnA, lnB} {
		hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if h := handlers[i].Load(); h != nil {
				(*h).ServeHTTP(w, r)
				return
			}
			http.Error(w, "not yet", http.StatusServiceUnavailable)
		})}
		go func() { _ = hs.Serve(ln) }()
		t.Cleanup(func() { hs.Close() })
	}
	// B first: engines close in the reverse order, and each checks, once
	// closed, that no server process is left, A's own among them.
	b := start(t, workspace(t, map[string]server{"a": gateway(lnA, tokenA), "other": gateway(lnA, tokenA)}, nil))
	// A's entry for B sets a Voltmcp-Via of its own, which the engine's
	// replaces.
	toB := gateway(lnB, tokenB)
	toB["headers"].(map[string]string)[transport.ViaHeader] = "spoof1"
	a := start(t, workspace(t, map[string]server{"b": toB, "s": stdio("behave", nil)}, nil))
	// A notes the Voltmcp-Via of each call it is sent.
	var seen atomic.Value
	ha := a.HTTPHandler(tokenA)
	recordA := http.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			seen.Store(r.Header.Get(transport.ViaHeader))
		}
		ha.ServeHTTP(w, r)
	}))
	for i, h := range []http.Handler{recordA, b.HTTPHandler(tokenB)} {
		handlers[i].Store(&h)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + lnA.Addr().String() + "/", HTTPClient: bearerClient(tokenA)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(args map[string]any) (string, bool) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp", Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		return text(res), res.IsError
	}
	through := func(server string, inner map[string]any) map[string]any {
		return map[string]any{"action": "call", "server": server, "tool": "mcp", "arguments": inner}
	}
	echo := map[string]any{"action": "call", "server": "s", "tool": "echo", "arguments": map[string]any{"text": "round"}}

	// A → B → A → s: B's call to A comes back to A, which refuses it.
	for _, via := range []string{"a", "other"} {
		got, isErr := call(through("b", through(via, echo)))
		if !isErr || !strings.Contains(got, "server "+via+" leads back to this gateway") {
			t.Errorf("a call round the loop through %s: error %v, %q", via, isErr, got)
		}
	}
	// A → s, and A → B → (A's listing of) b: no loop.
	if got, isErr := call(echo); isErr || got != "round" {
		t.Errorf("a call to s: error %v, %q", isErr, got)
	}
	if got, isErr := call(through("b", map[string]any{"action": "list_servers"})); isErr || !strings.Contains(got, "a") {
		t.Errorf("a listing through b: error %v, %q", isErr, got)
	}

	// Both codecs of B's surface carry the chain on: the lean one, and the
	// SDK's (a call with _meta), to A, which sees the agent's chain, then B.
	// The SDK's session keeps the context of its initialize request, so
	// that one names other gateways than the calls do.
	vt := &viaTransport{next: bearerClient(tokenB).Transport}
	vt.via.Store("init0")
	viaAgent := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
	bcs, err := viaAgent.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + lnB.Addr().String() + "/",
		HTTPClient: &http.Client{Transport: vt}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer bcs.Close()
	vt.via.Store("agent0")
	// B names itself to A by an id of A's origin, not by its instance id,
	// which it gives no server.
	u, _ := url.Parse("http://" + lnA.Addr().String() + "/")
	originA, _ := transport.OriginOf(u)
	toA := transport.ViaID(b.viaKey, originA)
	if toA == b.instance || toA == transport.ViaID(b.viaKey, transport.Origin{Scheme: "http", Host: "127.0.0.1", Port: 1}) {
		t.Fatalf("B's id for A: %s", toA)
	}
	for _, meta := range []mcp.Meta{nil, {"progressToken": "p1"}} {
		seen.Store("")
		res, err := bcs.CallTool(ctx, &mcp.CallToolParams{Meta: meta, Name: "mcp", Arguments: through("a", echo)})
		if err != nil || res.IsError || text(res) != "round" {
			t.Fatalf("a call through b to a (_meta %v): %v %v", meta, text(res), err)
		}
		if got, want := seen.Load(), "agent0,"+toA; got != want {
			t.Errorf("_meta %v: A was sent Voltmcp-Via %q, want %q", meta, got, want)
		}
	}
}

// viaTransport sends every request with the Voltmcp-Via header via, as a
// gateway in front would.
type viaTransport struct {
	via  atomic.Value // string
	next http.RoundTripper
}

func (v *viaTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(transport.ViaHeader, v.via.Load().(string))
	return v.next.RoundTrip(r)
}

// TestRefuseLoop checks the Voltmcp-Via header a gateway's handler reads:
// its own id anywhere in it, or a chain past MaxVia, is a loop (508); a
// malformed one is a bad request (400).
func TestRefuseLoop(t *testing.T) {
	t.Parallel()
	e := start(t, workspace(t, map[string]server{}, nil))
	h := e.HTTPHandler(testToken)
	long := strings.Repeat("x1,", transport.MaxVia) + "x1"
	for _, c := range []struct {
		via  string
		want int
	}{
		{e.instance, http.StatusLoopDetected},
		{"other1, " + e.instance + ",other2", http.StatusLoopDetected},
		{long, http.StatusLoopDetected},
		{"a b", http.StatusBadRequest},
		{"a,,b", http.StatusBadRequest},
		{strings.Repeat("a", 65), http.StatusBadRequest},
	} {
		req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(transport.ViaHeader, c.via)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != c.want {
			t.Errorf("Via %q: status %d, want %d (%s)", c.via, w.Code, c.want, w.Body.String())
		}
	}
}
