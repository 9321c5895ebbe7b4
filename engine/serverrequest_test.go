package engine

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/internal/mcptest"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// liveHeap returns the heap the last garbage collection found live.
func liveHeap() int64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// peakLiveHeap samples the live heap until stop is closed and returns
// the largest value seen.
func peakLiveHeap(stop <-chan struct{}) <-chan int64 {
	out := make(chan int64, 1)
	go func() {
		peak := liveHeap()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				out <- max(peak, liveHeap())
				return
			case <-tick.C:
				peak = max(peak, liveHeap())
			}
		}
	}()
	return out
}

// TestServerRequestFlood has a server send 150 requests of 900 KiB to
// the client (sampling, elicitation, roots) during one call, never
// reading the answers, over stdio, Streamable HTTP (the go-sdk's client,
// which an elicitation handler makes the engine use) and legacy SSE,
// with an elicitation handler that does not answer while the flood lasts
// (as a person may not), and over stdio without one: the call completes,
// and the live heap grows by a few message caps at most, whatever the
// number of requests. Without a bound on what a server may have in
// flight, the requests queue in the client and the heap grows by
// hundreds of MiB while the client holds them (elicitation).
// TestServeServerRequestFloodRSS (cmd/voltmcp) measures the resident set
// of a real serve, without a handler, on every transport; in this
// process the HTTP test server's own buffers count too.
func TestServerRequestFlood(t *testing.T) {
	// Requests of 900 KiB under a 2 MiB cap: the flood shows the same as
	// one of 4 MB under 8 MiB (one request fits the bound, a second does
	// not), in a quarter of the time. Under the race detector, 40 of them,
	// within the call's timeout: without the bound the 40 would still
	// hold more than the limit below.
	const msgCap, size = 2 << 20, 900 << 10
	floods := 150
	if raceBuild {
		floods = 40
	}
	type shape struct {
		name   string
		srv    func(t *testing.T) server
		elicit bool
	}
	var shapes []shape
	for _, elicit := range []bool{false, true} {
		for _, tr := range []struct {
			name string
			srv  func(t *testing.T) server
		}{
			{"stdio", func(*testing.T) server { return stdio(mcptest.ModeFloodRequests, nil) }},
			{"streamable", func(t *testing.T) server {
				return httpServer(mcptest.ServeRawEvents(t, mcptest.ModeFloodRequests), cue.TransportStreamableHTTP)
			}},
			{"sse", func(t *testing.T) server {
				return httpServer(mcptest.ServeSSEOnly(t, mcptest.ModeFloodRequests), cue.TransportSSE)
			}},
		} {
			if !elicit && tr.name != "stdio" {
				continue
			}
			shapes = append(shapes, shape{tr.name + map[bool]string{false: ", no elicitation", true: ", elicitation"}[elicit], tr.srv, elicit})
		}
	}
	for _, sh := range shapes {
		elicit := sh.elicit
		t.Run(sh.name, func(t *testing.T) {
			opts := workspace(t, map[string]server{"bad": sh.srv(t)},
				map[string]any{"limits": map[string]any{"maxMessageBytes": msgCap}})
			var mu sync.Mutex
			asked := 0
			release := make(chan struct{})
			if elicit {
				opts.Elicit = func(ctx context.Context, _ string, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					mu.Lock()
					asked++
					mu.Unlock()
					// A person who does not answer while the flood lasts.
					select {
					case <-ctx.Done():
						return nil, ctx.Err()
					case <-release:
						return &mcp.ElicitResult{Action: "decline"}, nil
					}
				}
			}
			e := start(t, opts)
			t.Cleanup(func() { close(release) }) // before the engine closes
			ctx := testwait.Context(t)
			if err := e.Connect(ctx, "bad"); err != nil {
				t.Fatal(err)
			}
			// A first call, of no requests, does what a first call does
			// once (the engine compiles its plugins then), before the
			// heap is measured.
			if r := e.Gateway(ctx, GatewayInput{Action: "call", Server: "bad", Tool: mcptest.ToolFloodRequests,
				Arguments: map[string]any{"count": 0}}); r.IsError {
				t.Fatalf("first call: %s", clip(r.Text, 300))
			}
			runtime.GC()
			base := liveHeap()
			stop := make(chan struct{})
			peak := peakLiveHeap(stop)
			r := e.Gateway(ctx, GatewayInput{Action: "call", Server: "bad", Tool: mcptest.ToolFloodRequests,
				Arguments: map[string]any{"count": floods, "bytes": size}})
			close(stop)
			grew := <-peak - base
			if r.IsError || !strings.Contains(r.Text, fmt.Sprintf("sent %d requests", floods)) {
				t.Fatalf("call: error %v: %s", r.IsError, clip(r.Text, 300))
			}
			mu.Lock()
			t.Logf("live heap: base %d MiB, grew %d MiB; elicitations asked %d", base>>20, grew>>20, asked)
			mu.Unlock()
			// The requests in flight hold at most one message cap, read
			// and decoded (line.PeerRequests). The message being read is
			// held by the reader's buffer, and over HTTP by the go-sdk's
			// event reader and decoder too: up to three caps; a request
			// the client has answered may still be held by the goroutine
			// that answered it when the collector looks: one more. Over
			// HTTP the test server runs in this process: the event it
			// writes and its encoder's pooled buffer, two more. And 16 MiB
			// for the rest of the engine's work meanwhile. None of it
			// grows with the number of requests.
			if limit := int64(7*msgCap + 16<<20); grew > limit {
				t.Fatalf("the live heap grew by %d MiB; want at most %d MiB", grew>>20, limit>>20)
			}
		})
	}
}
