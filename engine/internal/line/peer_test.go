package line

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// request returns a server request with id and params of n bytes.
func request(t *testing.T, id any, n int) *jsonrpc.Request {
	t.Helper()
	rid, err := jsonrpc.MakeID(id)
	if err != nil {
		t.Fatal(err)
	}
	return &jsonrpc.Request{ID: rid, Method: "sampling/createMessage", Params: json.RawMessage(`"` + strings.Repeat("p", max(0, n-2)) + `"`)}
}

// TestPeerRequestsBound admits requests until the count or the bytes
// would pass the bound, refuses a duplicate id, admits again once the
// client answered, and answers refusals with the request's id unless it
// is too long to echo.
func TestPeerRequestsBound(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sizes []int // params bytes of the requests, in order
		admit []bool
	}{
		{"count", []int{10, 10, 10, 10, 10}, []bool{true, true, true, true, false}},
		{"bytes", []int{600, 400, 30}, []bool{true, true, false}},
		{"one too large", []int{1025, 10}, []bool{false, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPeerRequests(1024)
			for i, n := range tc.sizes {
				if got := p.Admit(request(t, float64(i), n)); got != tc.admit[i] {
					t.Fatalf("request %d of %d bytes: admitted %v; want %v", i, n, got, tc.admit[i])
				}
			}
		})
	}
	p := NewPeerRequests(1024)
	if !p.Admit(request(t, "a", 10)) || p.Admit(request(t, "a", 10)) {
		t.Fatal("a duplicate id in flight was admitted")
	}
	for i := range MaxPeerRequests - 1 {
		p.Admit(request(t, float64(i), 10))
	}
	if p.Admit(request(t, "b", 10)) {
		t.Fatal("admitted past the count")
	}
	p.Done(mustID(t, "a"))
	if !p.Admit(request(t, "b", 10)) {
		t.Fatal("not admitted after an answer freed a place")
	}
	data, written, ok := p.Refusal(request(t, "c", 10))
	if !ok || !strings.Contains(string(data), `"id":"c"`) || !strings.Contains(string(data), "refused by voltmcp") {
		t.Fatalf("refusal %s, %v", data, ok)
	}
	written()
	if _, _, ok := p.Refusal(request(t, strings.Repeat("i", maxEchoedID+1), 10)); ok {
		t.Fatal("a refusal echoes an id past maxEchoedID")
	}
	for i := range maxRefusing {
		if _, _, ok := p.Refusal(request(t, float64(i), 10)); !ok {
			t.Fatalf("refusal %d not made", i)
		}
	}
	if _, _, ok := p.Refusal(request(t, "d", 10)); ok {
		t.Fatal("more refusals being written than maxRefusing")
	}
}

func mustID(t *testing.T, v any) jsonrpc.ID {
	t.Helper()
	id, err := jsonrpc.MakeID(v)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
