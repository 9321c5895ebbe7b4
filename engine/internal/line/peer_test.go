package line

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestPeerRequestsBound admits requests until the count or the bytes
// (twice the params of each) would pass the bound, refuses a duplicate id, admits again once the
// client answered, and answers refusals with the request's id unless it
// is too long to echo.
func TestPeerRequestsBound(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sizes []int // params bytes of the requests, in order
		admit []bool
	}{
		{"count", []int{10, 10, 10, 10, 10}, []bool{true, true, true, true, false}},
		// Each request holds twice its params: read, and decoded.
		{"bytes", []int{300, 200, 30, 12}, []bool{true, true, false, true}},
		{"half the bound", []int{512, 1}, []bool{true, false}},
		{"one too large", []int{513, 10}, []bool{false, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPeerRequests(1024, nil)
			for i, n := range tc.sizes {
				if got := p.Admit(mustID(t, float64(i)), "elicitation/create", n) == nil; got != tc.admit[i] {
					t.Fatalf("request %d of %d bytes: admitted %v; want %v", i, n, got, tc.admit[i])
				}
			}
		})
	}
	p := NewPeerRequests(1024, nil)
	admit := func(id any) bool { return p.Admit(mustID(t, id), "elicitation/create", 10) == nil }
	if !admit("a") || admit("a") {
		t.Fatal("a duplicate id in flight was admitted")
	}
	for i := range MaxPeerRequests - 1 {
		admit(float64(i))
	}
	if admit("b") {
		t.Fatal("admitted past the count")
	}
	p.Done(mustID(t, "a"))
	if !admit("b") {
		t.Fatal("not admitted after an answer freed a place")
	}
	resp, written, ok := p.Refusal(mustID(t, "c"), refusedBusy)
	data, _ := jsonrpc.EncodeMessage(resp)
	if !ok || !strings.Contains(string(data), `"id":"c"`) || !strings.Contains(string(data), "refused by voltmcp") {
		t.Fatalf("refusal %s, %v", data, ok)
	}
	written()
	if _, _, ok := p.Refusal(mustID(t, strings.Repeat("i", maxEchoedID+1)), refusedBusy); ok {
		t.Fatal("a refusal echoes an id past maxEchoedID")
	}
	for i := range maxRefusing {
		if _, _, ok := p.Refusal(mustID(t, float64(i)), refusedBusy); !ok {
			t.Fatalf("refusal %d not made", i)
		}
	}
	if _, _, ok := p.Refusal(mustID(t, "d"), refusedBusy); ok {
		t.Fatal("more refusals being written than maxRefusing")
	}
}

// TestPeerRequestsMethods refuses, as not found and before any count, a
// request for a method the client does not answer, and one whose method
// carries no params but _meta (ping, roots/list) with large params;
// the refusal's code says which.
func TestPeerRequestsMethods(t *testing.T) {
	p := NewPeerRequests(1<<20, []string{"ping", "roots/list", "elicitation/create"})
	for _, tc := range []struct {
		method string
		params int
		want   *jsonrpc.Error
	}{
		{"ping", 0, nil},
		{"roots/list", 100, nil},
		{"elicitation/create", 100 << 10, nil},
		{"sampling/createMessage", 10, refusedNotServed},
		{"completion/complete", 10, refusedNotServed},
		{"", 10, refusedNotServed},
		{"ping", maxBareParams + 1, refusedLarge},
		{"roots/list", 400 << 10, refusedLarge},
	} {
		id := mustID(t, tc.method+fmt.Sprint(tc.params))
		if got := p.Admit(id, tc.method, tc.params); got != tc.want {
			t.Errorf("%s with %d bytes of params: %v; want %v", tc.method, tc.params, got, tc.want)
		} else if got != nil {
			resp, written, ok := p.Refusal(id, got)
			je, isRPC := resp.Error.(*jsonrpc.Error)
			if !ok || !isRPC || je.Code != tc.want.Code || !strings.Contains(je.Message, "refused by voltmcp") {
				t.Errorf("refusal of %s: %+v", tc.method, resp)
			}
			written()
		} else {
			p.Done(id)
		}
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

// TestReaderRefusesPeerRequests reads a server's requests past the
// bound of a client connection in each shape the reader reads (the
// usual envelope, read in place; members in another order, a number id;
// an envelope only encoding/json reads; a message spread over lines,
// which switches to the stream decoder): each is refused with its id,
// while a request within the bound, a notification and a response go
// on. The usual request is refused from the read buffer: reading many
// of them allocates a small part of their bytes.
func TestReaderRefusesPeerRequests(t *testing.T) {
	const bound = 16 << 10
	big := `{"message":"` + strings.Repeat("m", 10<<10) + `"}` // twice it passes the bound
	for _, tc := range []struct {
		name, line string
		id         any
	}{
		{"usual", `{"jsonrpc":"2.0","id":"r1","method":"elicitation/create","params":` + big + `}`, "r1"},
		{"params first, number id", `{"params":` + big + `,"method":"sampling/createMessage","id":7,"jsonrpc":"2.0"}`, float64(7)},
		{"escaped key", `{"jsonrpc":"2.0","id":"r2","\u006dethod":"roots/list","params":` + big + `}`, "r2"},
		{"key in another case", `{"jsonrpc":"2.0","ID":"r3","method":"ping","params":` + big + `}`, "r3"},
		{"spread over lines", "{\"jsonrpc\":\"2.0\",\n\"id\":\"r4\",\"method\":\"ping\",\"params\":" + big + "}", "r4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			input := `{"jsonrpc":"2.0","id":"small","method":"ping","params":{}}` + "\n" +
				tc.line + "\n" +
				`{"jsonrpc":"2.0","method":"notifications/progress","params":` + big + `}` + "\n" +
				`{"jsonrpc":"2.0","id":1,"result":` + big + `}` + "\n"
			r := newReader(strings.NewReader(input), 1<<20, NewPeerRequests(bound, nil))
			var got []string
			for {
				msg, refused, err := r.message()
				if err != nil {
					break
				}
				switch m := msg.(type) {
				case nil:
					got = append(got, fmt.Sprintf("refused %v", refused.ID.Raw()))
				case *jsonrpc.Request:
					got = append(got, fmt.Sprintf("request %v %s", m.ID.Raw(), m.Method))
				case *jsonrpc.Response:
					got = append(got, fmt.Sprintf("response %v %d", m.ID.Raw(), len(m.Result)))
				}
			}
			want := []string{"request small ping", fmt.Sprintf("refused %v", tc.id), "request <nil> notifications/progress", fmt.Sprintf("response 1 %d", len(big))}
			if !slices.Equal(got, want) {
				t.Fatalf("read %q; want %q", got, want)
			}
		})
	}

	// Refused from the read buffer: reading 64 requests of 256 KiB
	// allocates the buffer that holds one or two of them, not a copy of
	// each.
	const n, size = 64, 256 << 10
	var in strings.Builder
	for i := range n {
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":"f%d","method":"sampling/createMessage","params":{"text":"%s"}}`+"\n", i, strings.Repeat("s", size))
	}
	r := newReader(strings.NewReader(in.String()), 1<<20, NewPeerRequests(size, nil))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	refused := 0
	for {
		_, id, err := r.message()
		if err != nil {
			break
		}
		if id != nil {
			refused++
		}
	}
	runtime.ReadMemStats(&after)
	if refused != n {
		t.Fatalf("refused %d of %d requests", refused, n)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8*size {
		t.Fatalf("refusing %d requests of %d KiB allocated %d KiB; want at most %d KiB", n, size>>10, alloc>>10, 8*size>>10)
	}
}
