package transport

import (
	"bufio"
	"bytes"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/voltmcp/voltmcp/engine/internal/tasks"
)

const (
	teeRequest = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`
	teeAnswer  = `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","execution":{"taskSupport":"optional"}},{"name":"b"}]}}`
)

// chunked gives at most n bytes a Read, so that a stream reaches the
// tee cut anywhere.
type chunked struct {
	r io.Reader
	n int
}

func (c chunked) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }

// readTee reads body through a taskTee, n bytes at most a read, with a
// Listings that waits for the answer to teeRequest.
func readTee(t testing.TB, body string, events bool, max, n int) ([]byte, map[string]string) {
	t.Helper()
	l := &tasks.Listings{}
	if _, ok := l.Sent([]byte(teeRequest)); !ok {
		t.Fatal("the request not noted")
	}
	tee := &taskTee{rc: io.NopCloser(chunked{strings.NewReader(body), n}), l: l, max: max, events: events}
	out, err := io.ReadAll(chunked{tee, n})
	if err != nil {
		t.Fatal(err)
	}
	return out, l.Take()
}

// TestTaskTee: the tee reads a listing's task support from a JSON body
// and from an event stream, however the bytes are cut, and the reader
// gets the bytes as they were.
func TestTaskTee(t *testing.T) {
	want := map[string]string{"a": "optional"}
	multi := strings.Replace(teeAnswer, `"result":`, "\r\ndata: \"result\":", 1)
	for _, tt := range []struct {
		name   string
		body   string
		events bool
		want   map[string]string
	}{
		{"json", teeAnswer, false, want},
		{"json, another id", strings.Replace(teeAnswer, `"id":1`, `"id":"1"`, 1), false, nil},
		{"json, malformed", teeAnswer[:len(teeAnswer)-1], false, nil},
		{"events", ": hi\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\nid: 1\ndata: " + teeAnswer + "\n\n", true, want},
		{"events, CRLF and two data lines", "data: " + multi + "\r\n\r\n", true, want},
		{"events, the answer not ended", "data: " + teeAnswer + "\n", true, nil},
		{"events, the answer twice", "data: " + teeAnswer + "\n\ndata: " + strings.Replace(teeAnswer, "optional", "required", 1) + "\n\n", true, want},
		{"events, not JSON", "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[\n\n", true, nil},
	} {
		for _, n := range []int{1, 2, 7, 4096} {
			out, got := readTee(t, tt.body, tt.events, 1<<16, n)
			if string(out) != tt.body {
				t.Fatalf("%s, %d bytes a read: the reader got %q", tt.name, n, out)
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("%s, %d bytes a read: %v, want %v", tt.name, n, got, tt.want)
			}
		}
	}
	// A message past the bound is not read, and the next one is.
	big := "data: " + strings.Replace(teeAnswer, `"name":"b"`, `"name":"b","description":"`+strings.Repeat("x", 500)+`"`, 1) + "\n\n"
	if _, got := readTee(t, big, true, 400, 64); got != nil {
		t.Errorf("an event past the bound gave %v", got)
	}
	if _, got := readTee(t, ": "+strings.Repeat("x", 500)+"\n\ndata: "+teeAnswer+"\n\n", true, 400, 64); !maps.Equal(got, want) {
		t.Errorf("the event after one past the bound gave %v", got)
	}
	if _, got := readTee(t, big[6:len(big)-2], false, 400, 64); got != nil {
		t.Errorf("a JSON body past the bound gave %v", got)
	}
}

// TestHeaderTransportReadsListings: through a HeaderTransport with
// Listings, the answer to a tools/list POST (JSON or events) and an
// answer on a GET's event stream give task support, the bodies reach
// the client as the server sent them, and a POST of another method, or
// one that failed, leaves nothing pending.
func TestHeaderTransportReadsListings(t *testing.T) {
	var answer, stream string
	var status int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, stream)
			return
		}
		body, _ := io.ReadAll(r.Body)
		if string(body) != teeRequest && !strings.Contains(string(body), "tools/call") {
			http.Error(w, "the body changed: "+string(body), http.StatusBadRequest)
			return
		}
		if strings.HasPrefix(answer, "data:") {
			w.Header().Set("Content-Type", "text/event-stream")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, answer)
	}))
	defer srv.Close()
	u, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	origin, _ := OriginOf(u.URL)
	l := &tasks.Listings{}
	ht := &HeaderTransport{Base: http.DefaultTransport, Origin: origin, MaxMessage: 1 << 16, TooLarge: io.ErrShortBuffer, Listings: l}
	hc := HTTPClient(ht)
	do := func(method, body string) string {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, _ := http.NewRequest(method, srv.URL, rd)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		got, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return string(got)
	}
	want := map[string]string{"a": "optional"}
	for _, a := range []string{teeAnswer, "data: " + teeAnswer + "\n\n"} {
		answer, status = a, http.StatusOK
		if got := do(http.MethodPost, teeRequest); got != a {
			t.Fatalf("the client got %q, the server sent %q", got, a)
		}
		if got := l.Take(); !maps.Equal(got, want) || l.Pending() {
			t.Errorf("%.20s: %v (pending %v)", a, got, l.Pending())
		}
	}
	// Legacy SSE: the POST is accepted, the answer comes on the stream.
	answer, status = "", http.StatusAccepted
	do(http.MethodPost, teeRequest)
	if !l.Pending() {
		t.Fatal("an accepted tools/list request is not pending")
	}
	stream = "event: endpoint\ndata: /m\n\nevent: message\ndata: " + teeAnswer + "\n\n"
	if got := do(http.MethodGet, ""); got != stream {
		t.Fatalf("the stream reached the client as %q", got)
	}
	if got := l.Take(); !maps.Equal(got, want) || l.Pending() {
		t.Errorf("the stream gave %v (pending %v)", got, l.Pending())
	}
	answer, status = teeAnswer, http.StatusOK
	do(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`)
	answer, status = "no", http.StatusInternalServerError
	do(http.MethodPost, teeRequest)
	if got := l.Take(); got != nil || l.Pending() {
		t.Errorf("a call's answer, or a failed listing, gave %v (pending %v)", got, l.Pending())
	}
}

// FuzzTaskTee: whatever the stream and however it is cut, the reader
// gets its bytes as they are, and the task support read is what reading
// the whole stream's events one by one gives.
func FuzzTaskTee(f *testing.F) {
	f.Add([]byte("data: "+teeAnswer+"\n\n"), uint8(3), true)
	f.Add([]byte(": x\r\n\r\nid: 2\r\ndata: {\"jsonrpc\":\"2.0\",\r\ndata: \"id\":1,\"result\":{\"tools\":[{\"name\":\"a\",\"execution\":{\"taskSupport\":\"x\"}}]}}\r\n\r\n"), uint8(1), true)
	f.Add([]byte(teeAnswer), uint8(5), false)
	f.Add([]byte("data: "+teeAnswer+"\n\r\n\rdata: "+teeAnswer+"\n\n"), uint8(9), true)
	f.Add([]byte("data: "+teeAnswer+"\r\r\n\r\r\n"), uint8(4), true)
	f.Fuzz(func(t *testing.T, stream []byte, n uint8, events bool) {
		const max = 1 << 16
		if len(stream) > max {
			return
		}
		out, got := readTee(t, string(stream), events, max, int(n)+1)
		if !bytes.Equal(out, stream) {
			t.Fatalf("the reader got %q of %q", out, stream)
		}
		l := &tasks.Listings{}
		l.Sent([]byte(teeRequest))
		switch {
		case !events:
			l.Received(stream)
		case bytes.HasSuffix(stream, []byte("\n")):
			// (A stream cut mid-line ends in a line that readLine takes
			// whole at the end of the stream, and the tee does not.)
			er := eventReader{r: bufio.NewReader(bytes.NewReader(stream)), max: max, tooLarge: io.ErrShortBuffer}
			for {
				data, err := er.next()
				if err != nil {
					break
				}
				l.Received(data)
			}
		default:
			return
		}
		if want := l.Take(); !maps.Equal(got, want) {
			t.Fatalf("the tee read %v, the events %v, of %q", got, want, stream)
		}
	})
}

// TestNoteListing: a tools/list request is noted whatever its length up
// to maxListRequest, from a copy of its body; the body sent is whole.
func TestNoteListing(t *testing.T) {
	long := `{"jsonrpc":"2.0","id":"p2","method":"tools/list","params":{"cursor":"` + strings.Repeat("c", 3000) + `"}}`
	for _, tt := range []struct {
		body string
		want bool
	}{
		{teeRequest, true},
		{long, true},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"q":"` + strings.Repeat("a", 600) + `tools/list"}}}`, false},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"` + strings.Repeat("c", maxListRequest) + `"}}`, false},
	} {
		ht := &HeaderTransport{Listings: &tasks.Listings{}}
		req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/", strings.NewReader(tt.body))
		if _, got := ht.noteListing(req); got != tt.want || ht.Listings.Pending() != tt.want {
			t.Errorf("%.60s (%d bytes): noted %v, want %v", tt.body, len(tt.body), got, tt.want)
		}
		if sent, _ := io.ReadAll(req.Body); string(sent) != tt.body {
			t.Errorf("%.60s: the body sent changed", tt.body)
		}
	}
}
