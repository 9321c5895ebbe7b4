package transport

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/voltmcp/voltmcp/engine/internal/line"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// TestPeerGate reads an event stream through a HeaderTransport with its
// gate, from a real server on loopback: the server's requests within the
// bound pass, those past it are dropped from the stream whatever the
// event's shape (one data line, several, a name of another kind), and
// their refusals are posted to the endpoint the stream named, with the
// stream's headers; notifications, responses and the first endpoint
// event pass; an answer the client posts frees its request's place.
func TestPeerGate(t *testing.T) {
	pad := strings.Repeat("p", 300<<10) // two such requests pass a 1 MiB bound
	events := []string{
		"event: endpoint\ndata: /post?s=1\n\n",
		`data: {"jsonrpc":"2.0","id":"a","method":"elicitation/create","params":{"message":"` + pad + `"}}` + "\n\n",
		`data: {"jsonrpc":"2.0","id":"b","method":"sampling/createMessage","params":{"m":"` + pad + `"}}` + "\n\n",
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\ndata: \"id\":7,\"method\":\"roots/list\",\"params\":{\"m\":\"" + pad + "\"}}\r\n\r\n",
		`event: other` + "\n" + `data: {"jsonrpc":"2.0","id":"c","method":"ping","params":{"m":"` + pad + `"}}` + "\n\n",
		`data: {"jsonrpc":"2.0","method":"notifications/message","params":{"m":"` + pad + `"}}` + "\n\n",
		`data: {"jsonrpc":"2.0","id":1,"result":{}}` + "\n\n",
		"event: endpoint\ndata: /elsewhere\n\n",
		// A key spelled with escapes is the key it spells.
		`data: {"jsonrpc":"2.0","id":"d","\u006dethod":"sampling/createMessage","params":{"m":"` + pad + `"}}` + "\n\n",
		// A result that mentions a method is a result.
		`data: {"jsonrpc":"2.0","id":2,"result":{"text":"the \"method\" key","pad":"` + pad + `"}}` + "\n\n",
	}
	kept := []int{0, 1, 5, 6, 9}
	var mu sync.Mutex
	var posts []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			mu.Lock()
			posts = append(posts, r.URL.RequestURI()+" "+r.Header.Get("X-Session")+" "+string(body))
			mu.Unlock()
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			_, _ = io.WriteString(w, e)
		}
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	ht := &HeaderTransport{Base: http.DefaultTransport, Server: "s", MaxMessage: 1 << 20, TooLarge: io.ErrShortBuffer}
	ht.Origin, _ = OriginOf(u)
	ht.gate = &peerGate{base: ht.Base, origin: ht.Origin, peer: line.NewPeerRequests(1<<20, nil)}

	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/sse", nil)
	req.Header.Set("X-Session", "s1")
	resp, err := ht.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var want string
	for _, i := range kept {
		want += events[i]
	}
	if string(got) != want {
		t.Fatalf("the stream passed %d bytes, want %d: %.200q", len(got), len(want), got)
	}
	testwait.For(t, "four refusals", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(posts) == 4
	})
	mu.Lock()
	for _, id := range []string{`"b"`, `7`, `"c"`, `"d"`} {
		if !slices.ContainsFunc(posts, func(p string) bool {
			return strings.HasPrefix(p, "/post?s=1 s1 ") && strings.Contains(p, `"id":`+id) && strings.Contains(p, "refused by voltmcp")
		}) {
			t.Errorf("no refusal of %s posted to the endpoint with the stream's headers: %q", id, posts)
		}
	}
	mu.Unlock()

	// The client answers "a": its place is free again.
	if !ht.gate.peer.Holding() {
		t.Fatal("the admitted request is not counted")
	}
	post, _ := http.NewRequest(http.MethodPost, srv.URL+"/post?s=1", strings.NewReader(`{"jsonrpc":"2.0","id":"a","result":{"action":"decline"}}`))
	resp, err = ht.RoundTrip(post)
	if err != nil {
		t.Fatal(err)
	}
	Discard(resp)
	if ht.gate.peer.Holding() {
		t.Fatal("the answer the client posted did not end its request's count")
	}
}
