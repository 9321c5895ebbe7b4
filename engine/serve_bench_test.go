package engine

import (
	"context"
	"fmt"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/internal/mcptest"
)

// servePipe serves the gateway of e over in-process pipes and returns a
// connected client session: the agent's side of `voltmcp serve` on stdio.
func servePipe(b *testing.B, ctx context.Context, e *Engine) *mcp.ClientSession {
	b.Helper()
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- e.ServeStdio(ctx, sr, sw) }()
	client := mcp.NewClient(&mcp.Implementation{Name: "bench-agent", Version: "1.0.0"}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: cr, Writer: cw}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cs.Close()
		cw.Close()
		<-done
	})
	return cs
}

// reportPercentiles adds p50 and p99 of the durations to the benchmark.
func reportPercentiles(b *testing.B, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(d[min(len(d)-1, len(d)*99/100)].Microseconds()), "p99-µs")
}

// BenchmarkServeCall is a tools/call through `voltmcp serve` (an agent's
// client, the gateway over pipes, the engine, a stdio upstream), against
// the same call made directly to the upstream with the SDK's client, in
// one run. The gateway's goal: within 1.5 times the direct call.
func BenchmarkServeCall(b *testing.B) {
	args := map[string]any{"text": "hello, gateway"}
	b.Run("via=serve", func(b *testing.B) {
		e := benchEngine(b, benchWorkspace(b, map[string]server{"up": stdio(mcptest.ModeBehave, nil)}))
		ctx := benchCtx(b)
		if err := e.Connect(ctx, "up"); err != nil {
			b.Fatal(err)
		}
		cs := servePipe(b, ctx, e)
		params := &mcp.CallToolParams{Name: GatewayToolName, Arguments: map[string]any{"action": "call", "server": "up", "tool": "echo", "arguments": args}}
		if res, err := cs.CallTool(ctx, params); err != nil || res.IsError {
			b.Fatalf("call through serve: %v %v", res, err)
		}
		var d []time.Duration
		b.ReportAllocs()
		for b.Loop() {
			start := time.Now()
			if _, err := cs.CallTool(ctx, params); err != nil {
				b.Fatal(err)
			}
			d = append(d, time.Since(start))
		}
		reportPercentiles(b, d)
	})
	b.Run("via=direct", func(b *testing.B) {
		ctx := benchCtx(b)
		cs := benchDirectSession(b, ctx)
		var d []time.Duration
		b.ReportAllocs()
		for b.Loop() {
			start := time.Now()
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: args}); err != nil {
				b.Fatal(err)
			}
			d = append(d, time.Since(start))
		}
		reportPercentiles(b, d)
	})
}

// BenchmarkServeColdStart is start-up to the first tools/list answer:
// engine.New over a workspace of 20 lazy servers with warm metadata
// caches, serving, an agent connecting and listing tools. No upstream
// starts.
func BenchmarkServeColdStart(b *testing.B) {
	servers := map[string]server{}
	for i := range 20 {
		servers[fmt.Sprintf("s%02d", i)] = stdio(mcptest.ModeBehave, nil)
	}
	opts := benchWorkspace(b, servers)
	// Warm the caches once.
	warm := benchEngine(b, opts)
	for id := range servers {
		if err := warm.Refresh(benchCtx(b), id); err != nil {
			b.Fatal(err)
		}
	}
	warm.Close()
	opts.Passive = false
	opts.Surface = cue.SurfaceServe
	b.ReportAllocs()
	var first []time.Duration
	for b.Loop() {
		start := time.Now()
		ctx, cancel := context.WithCancel(context.Background())
		e, err := New(ctx, &opts)
		if err != nil {
			b.Fatal(err)
		}
		cr, sw := io.Pipe()
		sr, cw := io.Pipe()
		done := make(chan error, 1)
		go func() { done <- e.ServeStdio(ctx, sr, sw) }()
		client := mcp.NewClient(&mcp.Implementation{Name: "bench-agent", Version: "1.0.0"}, nil)
		cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: cr, Writer: cw}, nil)
		if err != nil {
			b.Fatal(err)
		}
		if res, err := cs.ListTools(ctx, nil); err != nil || len(res.Tools) != 1 {
			b.Fatalf("tools/list: %v %v", res, err)
		}
		first = append(first, time.Since(start))
		// Shutting down is not start-up: the audit queue drains here,
		// with the redact policy it loaded in the background.
		b.StopTimer()
		cs.Close()
		cw.Close()
		<-done
		e.Close()
		cancel()
		b.StartTimer()
	}
	reportPercentiles(b, first)
	if kids := children(); len(kids) > 0 {
		b.Errorf("a lazy server started: %v", kids)
	}
}
