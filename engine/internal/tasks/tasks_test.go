package tasks

import (
	"encoding/json"
	"maps"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

func TestRead(t *testing.T) {
	for _, tt := range []struct {
		name   string
		result string
		want   map[string]string
	}{
		{"three", `{"tools":[{"name":"a","execution":{"taskSupport":"optional"}},{"name":"b","inputSchema":{}},` +
			`{"name":"c","execution":{"taskSupport":"required"}},{"name":"d","execution":{}}],"nextCursor":"x"}`,
			map[string]string{"a": "optional", "c": "required"}},
		{"none", `{"tools":[{"name":"a"}]}`, nil},
		{"no tools", `{}`, nil},
		{"null tools", `{"tools":null}`, nil},
		{"not an object", `[1,2]`, nil},
		{"not JSON", `{"tools":[{"name":"a","execution":{"taskSupport":"optional"}}`, nil},
		{"tools not an array", `{"tools":{"name":"a"}}`, nil},
		// The go-sdk matches keys exactly; so does Read.
		{"keys in another case", `{"tools":[{"Name":"a","execution":{"taskSupport":"optional"}},{"name":"b","Execution":{"taskSupport":"optional"}},` +
			`{"name":"c","execution":{"TaskSupport":"optional"}}],"Tools":[{"name":"d","execution":{"taskSupport":"optional"}}]}`, nil},
		{"wrong types skipped", `{"tools":[1,{"name":2,"execution":{"taskSupport":"optional"}},{"name":"b","execution":"optional"},` +
			`{"name":"c","execution":{"taskSupport":true}},{"name":"d","execution":{"taskSupport":""}},{"name":"e","execution":{"taskSupport":"forbidden"}}]}`,
			map[string]string{"e": "forbidden"}},
		{"the last of a repeated name", `{"tools":[{"name":"a","execution":{"taskSupport":"optional"}},{"name":"a","execution":{"taskSupport":"required"}}]}`,
			map[string]string{"a": "required"}},
	} {
		if got := Read([]byte(tt.result)); !maps.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestListings: only the answer to a tools/list request noted gives
// task support, once; an id of another type, an error, or another
// method's answer give none.
func TestListings(t *testing.T) {
	var l Listings
	page := json.RawMessage(`{"tools":[{"name":"a","execution":{"taskSupport":"optional"}}]}`)
	id := func(v any) jsonrpc.ID {
		id, err := jsonrpc.MakeID(v)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	if l.Pending() || l.Take() != nil {
		t.Fatal("a new Listings has something")
	}
	if l.Request(&jsonrpc.Request{ID: id(float64(1)), Method: "tools/call"}) || l.Request(&jsonrpc.Request{Method: "tools/list"}) {
		t.Error("a tools/call, or a notification, noted as a listing")
	}
	if !l.Request(&jsonrpc.Request{ID: id(float64(1)), Method: "tools/list"}) || !l.Pending() {
		t.Fatal("a tools/list request not noted")
	}
	l.Response(&jsonrpc.Response{ID: id("1"), Result: page}) // a string id is another id
	l.Response(&jsonrpc.Response{ID: id(float64(2)), Result: page})
	if got := l.Take(); got != nil || !l.Pending() {
		t.Fatalf("answers to other ids gave %v", got)
	}
	l.Response(&jsonrpc.Response{ID: id(float64(1)), Result: page})
	if got := l.Take(); got["a"] != "optional" || len(got) != 1 || l.Pending() {
		t.Fatalf("the listing gave %v (pending %v)", got, l.Pending())
	}
	if got := l.Take(); got != nil {
		t.Errorf("a second Take gave %v", got)
	}
	l.Response(&jsonrpc.Response{ID: id(float64(1)), Result: page}) // answered already
	l.Request(&jsonrpc.Request{ID: id(float64(3)), Method: "tools/list"})
	l.Response(&jsonrpc.Response{ID: id(float64(3)), Error: &jsonrpc.Error{Code: 1, Message: "no"}})
	if got := l.Take(); got != nil || l.Pending() {
		t.Errorf("a repeated answer, or an error, gave %v (pending %v)", got, l.Pending())
	}
	var none *Listings
	if none.Take() != nil {
		t.Error("a nil Listings has something")
	}
}

// TestListingsRaw: Sent and Received take the message bytes, decode
// them as the go-sdk does, and give nothing for bytes that are not a
// message.
func TestListingsRaw(t *testing.T) {
	var l Listings
	for _, msg := range []string{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"tools/list"}}`,
		`{"id":7,"method":"tools/list"}`, `not json "tools/list"`, `{"jsonrpc":"2.0","method":"tools/list"}`} {
		if _, ok := l.Sent([]byte(msg)); ok || l.Pending() {
			t.Errorf("%s: noted as a tools/list request", msg)
		}
	}
	if id, ok := l.Sent([]byte(`{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{}}`)); !ok || id.Raw() != int64(8) {
		t.Fatalf("a tools/list request not noted: %v", id.Raw())
	} else {
		l.Forget(id)
	}
	if l.Pending() {
		t.Fatal("a request forgotten is still pending")
	}
	if _, ok := l.Sent([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}`)); !ok {
		t.Fatal("a tools/list request not noted")
	}
	l.Received([]byte(`{"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"a","execution":{"taskSupport":"required"}}]`))
	l.Received([]byte(`{"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"b","execution":{"taskSupport":"required"}}]}}`))
	if got := l.Take(); !maps.Equal(got, map[string]string{"b": "required"}) {
		t.Errorf("got %v", got)
	}
}

// TestListingsConcurrent is for -race: listings noted, answered and
// taken from many goroutines.
func TestListingsConcurrent(t *testing.T) {
	var l Listings
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				id, _ := jsonrpc.MakeID(float64(i*100 + j))
				l.Request(&jsonrpc.Request{ID: id, Method: "tools/list"})
				l.Response(&jsonrpc.Response{ID: id, Result: json.RawMessage(`{"tools":[{"name":"a","execution":{"taskSupport":"optional"}}]}`)})
				l.Take()
			}
		})
	}
	wg.Wait()
	if l.Pending() {
		t.Error("listings still pending")
	}
}

// FuzzRead: Read never panics, and gives exactly what a generic decode
// of the result finds: each tools[i] object's string "name" whose
// "execution" object has a non-empty string "taskSupport", the last of
// a repeated name.
func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"tools":[{"name":"a","execution":{"taskSupport":"optional"}},{"name":"b"}]}`))
	f.Add([]byte(`{"tools":[{"name":"a","execution":{"taskSupport":"optional"}},{"name":"a","execution":{"taskSupport":""}}]}`))
	f.Add([]byte(`{"tools":[{"Name":"a","execution":{"taskSupport":"x"}}],"tools":[]}`))
	f.Add([]byte(`{"tools":[{"name":"\u00e9\ud800","execution":{"taskSupport":"\xff"}}]}`))
	f.Fuzz(func(t *testing.T, result []byte) {
		got := Read(result)
		var want map[string]string
		var top map[string]any
		if json.Unmarshal(result, &top) == nil {
			tools, _ := top["tools"].([]any)
			for _, v := range tools {
				tool, _ := v.(map[string]any)
				name, okName := tool["name"].(string)
				exec, _ := tool["execution"].(map[string]any)
				ts, okTS := exec["taskSupport"].(string)
				if okName && okTS && ts != "" {
					if want == nil {
						want = map[string]string{}
					}
					want[name] = ts
				}
			}
		}
		if !maps.Equal(got, want) {
			t.Fatalf("Read gave %v, a generic decode %v", got, want)
		}
	})
}
