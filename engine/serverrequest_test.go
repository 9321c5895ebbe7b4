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

// TestServerRequestFlood has a server send 150 requests of 1 MiB to the
// client (sampling, elicitation, roots) during one call, never reading
// the answers, with and without an elicitation handler (one that does
// not answer while the flood lasts, as a person may not): the call
// completes, and the live heap grows by a few message caps at most,
// whatever the number of requests. Without a bound on what a server may
// have in flight, the requests queue in the client and the heap grows by
// hundreds of MiB when the client holds them (elicitation); refused at
// once (sampling, which the engine does not offer), they cost little
// either way.
func TestServerRequestFlood(t *testing.T) {
	// Requests of 1 MiB under a 2 MiB cap: the flood shows the same as one
	// of 4 MiB under 8 MiB, in a quarter of the time (it runs under the
	// race detector too).
	const msgCap, floods, size = 2 << 20, 150, 1 << 20
	for _, elicit := range []bool{false, true} {
		t.Run(map[bool]string{false: "no elicitation", true: "elicitation"}[elicit], func(t *testing.T) {
			opts := workspace(t, map[string]server{"bad": stdio(mcptest.ModeFloodRequests, nil)},
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
			// The requests in flight hold at most one message cap of params
			// (line.PeerRequests), which the client decodes once more: two
			// caps. The reader holds up to three copies of the message it
			// reads (its buffer, encoding/json's, the decoded params, as a
			// heap profile shows): three more; a request the client has
			// answered may still be held by the goroutine that answered it
			// when the collector looks: one more. And 16 MiB for the rest
			// of the engine's work meanwhile. None of it grows with the
			// number of requests.
			if limit := int64(6*msgCap + 16<<20); grew > limit {
				t.Fatalf("the live heap grew by %d MiB; want at most %d MiB", grew>>20, limit>>20)
			}
		})
	}
}
