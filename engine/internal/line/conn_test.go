package line

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/engine/internal/turn"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// nopWriteCloser discards writes.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// readAll reads messages from a Conn over input until an error.
func readAll(t *testing.T, input string, max int) ([]jsonrpc.Message, error) {
	t.Helper()
	c, err := (&Transport{Reader: io.NopCloser(strings.NewReader(input)), Writer: nopWriteCloser{io.Discard}, MaxMessage: max}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var msgs []jsonrpc.Message
	for {
		m, err := c.Read(context.Background())
		if err != nil {
			return msgs, err
		}
		msgs = append(msgs, m)
	}
}

func TestLineConnDecodesLikeTheSDK(t *testing.T) {
	input := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}

{"jsonrpc":"2.0","id":"a-1","result":{"ok":true}}
{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no such method"}}
{"jsonrpc":"2.0",
 "id":2,
 "method":""}
`
	msgs, err := readAll(t, input, 0)
	if !errors.Is(err, io.EOF) {
		t.Fatalf("end of stream: %v", err)
	}
	if len(msgs) != 5 {
		t.Fatalf("got %d messages, want 5: %v", len(msgs), msgs)
	}
	// Each message must decode exactly as the SDK's own decoder does it.
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"a-1","result":{"ok":true}}`,
		`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no such method"}}`,
		`{"jsonrpc":"2.0","id":2,"method":""}`,
	}
	for i, line := range lines {
		want, err := jsonrpc.DecodeMessage([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		gotJSON, _ := jsonrpc.EncodeMessage(msgs[i])
		wantJSON, _ := jsonrpc.EncodeMessage(want)
		if string(gotJSON) != string(wantJSON) {
			t.Errorf("message %d:\n got %s\nwant %s", i, gotJSON, wantJSON)
		}
	}
}

func TestLineConnRefusesBadInput(t *testing.T) {
	for _, tc := range []struct {
		name, input string
		max         int
		want        string
	}{
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]` + "\n", 0, "batches are not supported"},
		{"version", `{"jsonrpc":"1.0","id":1,"method":"ping"}` + "\n", 0, "invalid message version"},
		{"response without id", `{"jsonrpc":"2.0","result":{}}` + "\n", 0, "without an id"},
		{"bad id", `{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}` + "\n", 0, "invalid ID"},
		{"garbage", "hello\n", 0, "invalid character"},
		{"too large", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 4096) + `"}}` + "\n", 1024, "exceeds the size limit"},
		{"torn", `{"jsonrpc":"2.0","id":1,"meth`, 0, "unexpected EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readAll(t, tc.input, tc.max)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestLineConnLimitIsPerMessage(t *testing.T) {
	// Many messages, each under the bound, add up to far more than it.
	msg := `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + strings.Repeat("y", 300) + `"}}` + "\n"
	msgs, err := readAll(t, strings.Repeat(msg, 100), 1024)
	if !errors.Is(err, io.EOF) || len(msgs) != 100 {
		t.Fatalf("got %d messages and %v, want 100 and EOF", len(msgs), err)
	}
}

func TestLineConnCloseUnblocksRead(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	c, err := (&Transport{Reader: r, Writer: nopWriteCloser{io.Discard}}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.Read(context.Background())
		done <- err
	}()
	time.Sleep(10 * time.Millisecond)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Read after Close returned a message")
		}
	case <-time.After(testwait.Patience):
		t.Fatal("Close did not unblock Read")
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestLineConnWritesOneLinePerMessage(t *testing.T) {
	var sb strings.Builder
	c, err := (&Transport{Reader: io.NopCloser(strings.NewReader("")), Writer: nopWriteCloser{&sb}}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	id, _ := jsonrpc.MakeID(float64(3))
	for range 2 {
		if err := c.Write(context.Background(), &jsonrpc.Response{ID: id, Result: []byte(`{"a":"b\nc"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	want := `{"jsonrpc":"2.0","id":3,"result":{"a":"b\nc"}}` + "\n"
	if sb.String() != want+want {
		t.Fatalf("wrote %q", sb.String())
	}
}

// TestLineConnServesTheSDKClient runs a real SDK client against the
// gateway over Transport, the way `voltmcp serve` runs.
func TestLineConnServesTheSDKClient(t *testing.T) {
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, &Transport{Reader: sr, Writer: sw}) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, &Transport{Reader: cr, Writer: cw}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "über ✓"}})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "über ✓" {
		t.Fatalf("call: %v %v", res, err)
	}
	cs.Close()
	cw.Close()
	if err := <-done; err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrClosedPipe) {
		t.Logf("server ended: %v", err)
	}
}

// ownCallPeer is the far end of a client Conn: it reads the
// requests the connection writes and answers them as the test says.
type ownCallPeer struct {
	c     *Conn
	lines chan string    // what the connection wrote
	out   io.WriteCloser // what the connection reads
}

func newOwnCallPeer(t *testing.T) *ownCallPeer {
	t.Helper()
	cr, pw := io.Pipe()
	pr, cw := io.Pipe()
	conn, err := (&Transport{Reader: cr, Writer: cw, Client: true}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(); pw.Close(); pr.Close() })
	p := &ownCallPeer{c: conn.(*Conn), lines: make(chan string, 16), out: pw}
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	return p
}

// next returns the id and method of the next message the connection
// wrote.
func (p *ownCallPeer) next(t *testing.T) (id, method string) {
	t.Helper()
	var line string
	select {
	case l, ok := <-p.lines:
		if !ok {
			t.Fatal("the connection wrote nothing more")
		}
		line = l
	case <-time.After(testwait.Patience):
		t.Fatal("the connection wrote nothing")
	}
	var m struct {
		ID     string `json:"id"`
		Method string `json:"method"`
		Params struct {
			RequestID string `json:"requestId"`
		} `json:"params"`
	}
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatalf("the connection wrote %q: %v", line, err)
	}
	if m.Method == "notifications/cancelled" {
		return m.Params.RequestID, m.Method
	}
	return m.ID, m.Method
}

func (p *ownCallPeer) answer(t *testing.T, id, result string) {
	t.Helper()
	if _, err := io.WriteString(p.out, `{"jsonrpc":"2.0","id":"`+id+`","result":`+result+"}\n"); err != nil {
		t.Fatal(err)
	}
}

type ownAnswer struct {
	result string
	err    error
}

// sendCall makes a call on p's connection and returns where its answer
// goes; each reply runs do, if set, first.
func (p *ownCallPeer) sendCall(ctx context.Context, do func(yield func())) <-chan ownAnswer {
	got := make(chan ownAnswer, 1)
	p.c.Send(ctx, "tools/call", json.RawMessage(`{"name":"x"}`), func(yield func(), result json.RawMessage, err error) {
		if do != nil {
			do(yield)
		}
		got <- ownAnswer{string(result), err}
	})
	return got
}

func waitAnswer(t *testing.T, got <-chan ownAnswer) ownAnswer {
	t.Helper()
	select {
	case a := <-got:
		return a
	case <-time.After(testwait.Patience):
		t.Fatal("no answer")
		return ownAnswer{}
	}
}

// TestLineConnSendRunsRepliesOnTheReader checks the engine's own calls:
// each reply runs on the connection's reader, which reads on when the
// reply returns or yields. A reply that waits after yielding does not
// hold up the answer to another call.
func TestLineConnSendRunsRepliesOnTheReader(t *testing.T) {
	p := newOwnCallPeer(t)
	ctx := context.Background()
	release := make(chan struct{})
	first := p.sendCall(ctx, func(yield func()) {
		yield()
		<-release // waits until the second call is answered
	})
	id1, method := p.next(t)
	if method != "tools/call" {
		t.Fatalf("wrote %s", method)
	}
	second := p.sendCall(ctx, nil)
	id2, _ := p.next(t)
	if id1 == id2 || !strings.HasPrefix(id1, ownIDPrefix) {
		t.Fatalf("ids %q and %q", id1, id2)
	}
	p.answer(t, id1, `{"n":1}`)
	p.answer(t, id2, `{"n":2}`)
	if a := waitAnswer(t, second); a.err != nil || a.result != `{"n":2}` {
		t.Fatalf("second call: %+v", a)
	}
	close(release)
	if a := waitAnswer(t, first); a.err != nil || a.result != `{"n":1}` {
		t.Fatalf("first call: %+v", a)
	}
	// A response to no call in flight is dropped; the reader reads on.
	p.answer(t, id1, `{"n":1}`)
	third := p.sendCall(ctx, nil)
	id3, _ := p.next(t)
	if _, err := io.WriteString(p.out, `{"jsonrpc":"2.0","id":"`+id3+`","error":{"code":-32602,"message":"no such tool"}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	var werr *jsonrpc.Error
	if a := waitAnswer(t, third); !errors.As(a.err, &werr) || werr.Message != "no such tool" {
		t.Fatalf("error response: %+v", a)
	}
	if left := p.c.Pending(); left != 0 {
		t.Errorf("%d calls left in flight", left)
	}
}

// TestLineConnSendEnds checks the ways a call ends without a response:
// its context ends (and the peer is told), the connection closes, or
// the reading fails.
func TestLineConnSendEnds(t *testing.T) {
	t.Run("cancel", func(t *testing.T) {
		p := newOwnCallPeer(t)
		ctx, cancel := context.WithCancel(context.Background())
		got := p.sendCall(ctx, nil)
		id, _ := p.next(t)
		cancel()
		if a := waitAnswer(t, got); !errors.Is(a.err, context.Canceled) {
			t.Fatalf("cancelled call: %+v", a)
		}
		if cid, method := p.next(t); method != "notifications/cancelled" || cid != id {
			t.Fatalf("after the cancel the connection wrote %s for %q, want notifications/cancelled for %q", method, cid, id)
		}
		p.answer(t, id, `{}`) // too late: dropped
	})
	t.Run("close", func(t *testing.T) {
		p := newOwnCallPeer(t)
		got := p.sendCall(context.Background(), nil)
		p.next(t)
		go p.c.Close()
		if a := waitAnswer(t, got); !errors.Is(a.err, ErrConnClosed) {
			t.Fatalf("call in flight at close: %+v", a)
		}
		if a := waitAnswer(t, p.sendCall(context.Background(), nil)); !errors.Is(a.err, ErrConnClosed) {
			t.Fatalf("call after close: %+v", a)
		}
	})
	t.Run("read-error", func(t *testing.T) {
		cr, pw := io.Pipe()
		conn, err := (&Transport{Reader: cr, Writer: nopWriteCloser{io.Discard}, Client: true, MaxMessage: 64}).Connect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		p := &ownCallPeer{c: conn.(*Conn), out: pw}
		got := p.sendCall(context.Background(), nil)
		go io.WriteString(pw, `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"`+strings.Repeat("x", 100)+`"}}`+"\n")
		a := waitAnswer(t, got)
		if !errors.Is(a.err, ErrConnClosed) || !errors.Is(a.err, ErrMessageTooLarge) {
			t.Fatalf("call in flight when the reading failed: %+v", a)
		}
	})
}

// TestLineConnReplyPanics checks that a panic in a reply, which runs on
// the connection's reader, goes to the handler its call's context
// carries, and that turn.Await raises it again on the goroutine that waits.
func TestLineConnReplyPanics(t *testing.T) {
	p := newOwnCallPeer(t)
	handled := make(chan any, 1)
	ctx := turn.WithPanicHandler(context.Background(), func(v any) { handled <- v })
	p.sendCall(ctx, func(func()) { panic("reply bug") })
	id, _ := p.next(t)
	p.answer(t, id, `{}`)
	select {
	case v := <-handled:
		if v != "reply bug" {
			t.Fatalf("handler got %v", v)
		}
	case <-time.After(testwait.Patience):
		t.Fatal("the panic did not reach the handler")
	}
	// The reader survived it.
	got := p.sendCall(context.Background(), nil)
	id, _ = p.next(t)
	p.answer(t, id, `{"ok":true}`)
	if a := waitAnswer(t, got); a.err != nil {
		t.Fatal(a.err)
	}

	raised := make(chan any, 1)
	go func() {
		defer func() { raised <- recover() }()
		turn.Await(context.Background(), func(ctx context.Context, then func(func(), string)) {
			p.c.Send(ctx, "tools/call", json.RawMessage(`{}`), func(yield func(), _ json.RawMessage, _ error) {
				panic("awaited reply bug")
			})
		})
	}()
	id, _ = p.next(t)
	p.answer(t, id, `{}`)
	select {
	case v := <-raised:
		if v != "awaited reply bug" {
			t.Fatalf("await raised %v", v)
		}
	case <-time.After(testwait.Patience):
		t.Fatal("await did not return")
	}
}

// checkTap hands every request to work it runs on the reader.
type checkTap struct {
	work func(method string, yield func())
}

func (t checkTap) Inbound(_ *Conn, msg jsonrpc.Message) (bool, func(yield func())) {
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return false, nil
	}
	return true, func(yield func()) { t.work(req.Method, yield) }
}
func (checkTap) Outbound(jsonrpc.Message) {}
func (checkTap) Drain()                   {}

// waitForPeer blocks, as work that waits on a peer would.
func waitForPeer(ch <-chan struct{}) { <-ch }

// TestConnChecksThatWorkYieldsBeforeItBlocks checks the connection's
// checked mode (Transport.Check): a tap's work that blocks on the
// reader before it yields is reported, with the blocking step in the
// stack, while work that yields first and then blocks is not, and the
// connection reads on meanwhile.
func TestConnChecksThatWorkYieldsBeforeItBlocks(t *testing.T) {
	reported := make(chan string, 4)
	check := &turn.Check{Limit: 50 * time.Millisecond, Held: func(_ time.Duration, stack string) { reported <- stack }}
	release := make(chan struct{})
	answered := make(chan string, 4)
	tap := checkTap{work: func(method string, yield func()) {
		if method != "blocks" {
			yield()
		}
		waitForPeer(release) // for "blocks", the bug: no yield first
		answered <- method
	}}
	pr, pw := io.Pipe()
	defer pw.Close()
	conn, err := (&Transport{Reader: pr, Writer: nopWriteCloser{io.Discard}, Tap: tap, Check: check}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	write := func(method string) {
		t.Helper()
		if _, err := io.WriteString(pw, `{"jsonrpc":"2.0","id":1,"method":"`+method+`"}`+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	write("yields")
	write("yields") // read while the first waits: it yielded
	write("blocks") // read while both wait
	select {
	case stack := <-reported:
		if !strings.Contains(stack, "line.waitForPeer") || !strings.Contains(stack, "line.TestConnChecksThatWorkYieldsBeforeItBlocks") {
			t.Errorf("the report does not name the blocking step:\n%s", stack)
		}
	case <-time.After(testwait.Patience):
		t.Fatal("work that blocked on the reader was not reported")
	}
	select {
	case stack := <-reported:
		t.Errorf("more than the blocking work was reported:\n%s", stack)
		// testwait: a negative wait, nothing more may be reported
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	for range 3 {
		select {
		case <-answered:
		case <-time.After(testwait.Patience):
			t.Fatal("the work did not end")
		}
	}
}
