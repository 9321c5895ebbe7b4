package engine

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// nopWriteCloser discards writes.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// readAll reads messages from a lineConn over input until an error.
func readAll(t *testing.T, input string, max int) ([]jsonrpc.Message, error) {
	t.Helper()
	c, err := (&lineTransport{r: io.NopCloser(strings.NewReader(input)), w: nopWriteCloser{io.Discard}, max: max}).Connect(context.Background())
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
	c, err := (&lineTransport{r: r, w: nopWriteCloser{io.Discard}}).Connect(context.Background())
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
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not unblock Read")
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestLineConnWritesOneLinePerMessage(t *testing.T) {
	var sb strings.Builder
	c, err := (&lineTransport{r: io.NopCloser(strings.NewReader("")), w: nopWriteCloser{&sb}}).Connect(context.Background())
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
// gateway over lineTransport, the way `voltmcp serve` runs.
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
	go func() { done <- srv.Run(ctx, &lineTransport{r: sr, w: sw}) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, &lineTransport{r: cr, w: cw}, nil)
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
