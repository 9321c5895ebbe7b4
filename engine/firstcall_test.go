package engine

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/internal/mcptest"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// TestConcurrentFirstCallsWaitForDiscovery makes 200 calls at once to
// servers never listed, most of them arriving while the first call's
// discovery is running: every one waits for that discovery and runs.
// Through the engine's gateway, and through `voltmcp serve`'s stdio
// server (whose calls take the lean path).
func TestConcurrentFirstCallsWaitForDiscovery(t *testing.T) {
	t.Parallel()
	const servers, calls = 4, 200
	for _, via := range []string{"gateway", "serve"} {
		t.Run("via="+via, func(t *testing.T) {
			t.Parallel()
			cfg := map[string]server{}
			for i := range servers {
				// Paged listings of many tools: the discovery takes nine
				// round trips of up to 50 tools, while the calls below
				// start at once, as soon as it has begun.
				cfg[fmt.Sprintf("s%d", i)] = stdio(mcptest.ModeBehave, nil, "VOLTMCP_TESTSERVER_EXTRA_TOOLS=400")
			}
			e := start(t, workspace(t, cfg, nil))
			ctx := testwait.Context(t)
			run := func(id string) (string, bool) {
				r := e.Gateway(ctx, GatewayInput{Action: "call", Server: id, Tool: "echo", Arguments: map[string]any{"text": "hi " + id}})
				return r.Text, !r.IsError
			}
			if via == "serve" {
				cs := serveSession(t, ctx, e)
				run = func(id string) (string, bool) {
					res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: GatewayToolName,
						Arguments: map[string]any{"action": "call", "server": id, "tool": "echo", "arguments": map[string]any{"text": "hi " + id}}})
					if err != nil {
						return err.Error(), false
					}
					return text(res), !res.IsError
				}
			}
			var wg sync.WaitGroup
			var mu sync.Mutex
			failed := map[string]int{}
			call := func(id string) {
				defer wg.Done()
				text, ok := run(id)
				if !ok || !strings.Contains(text, "hi "+id) {
					mu.Lock()
					failed[text]++
					mu.Unlock()
				}
			}
			// One first call each starts a discovery; the rest come while
			// it runs.
			for i := range servers {
				wg.Add(1)
				go call(fmt.Sprintf("s%d", i))
			}
			for i := range servers {
				id := fmt.Sprintf("s%d", i)
				for {
					s, _ := e.Server(id)
					if s.Status == StatusDiscovering || s.Status == StatusReady || s.Status == StatusError {
						break
					}
					if ctx.Err() != nil {
						t.Fatalf("server %s: status %s", id, s.Status)
					}
					time.Sleep(time.Millisecond)
				}
			}
			for i := range calls - servers {
				wg.Add(1)
				go call(fmt.Sprintf("s%d", i%servers))
			}
			wg.Wait()
			for text, n := range failed {
				t.Errorf("%d calls failed: %s", n, text)
			}
		})
	}
}

// serveSession serves the gateway of e over in-process pipes, as
// `voltmcp serve` does on stdio, and returns an agent's session on it.
func serveSession(t *testing.T, ctx context.Context, e *Engine) *mcp.ClientSession {
	t.Helper()
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- e.ServeStdio(ctx, sr, sw) }()
	client := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1.0.0"}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: cr, Writer: cw}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		cw.Close()
		<-done
	})
	return cs
}

// TestConcurrentReadsWaitForDiscovery races describe, list_resources,
// list_prompts and search against a first call to a server never
// listed: each one that arrives while the first listing runs waits for
// it and answers from it, none says "not listed yet" or finds nothing
// (a search, whose wait is short, may instead say the server is still
// being listed).
func TestConcurrentReadsWaitForDiscovery(t *testing.T) {
	t.Parallel()
	const each = 25
	// Paged listings of many tools: the discovery takes a while, and its
	// timeouts are generous for a loaded machine.
	slow := server{"discoveryTimeoutMs": 120000, "connectTimeoutMs": 60000}
	e := start(t, workspace(t, map[string]server{"s": stdio(mcptest.ModeBehave, slow, "VOLTMCP_TESTSERVER_EXTRA_TOOLS=400")}, nil))
	ctx := testwait.Context(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := map[string]int{}
	run := func(in GatewayInput, want string) {
		defer wg.Done()
		r := e.Gateway(ctx, in)
		// Search waits a short while only, and then says so.
		pending := in.Action == "search" && strings.Contains(r.Text, "still being listed")
		if r.IsError || !strings.Contains(r.Text, want) && !pending {
			mu.Lock()
			failed[in.Action+": "+r.Text]++
			mu.Unlock()
		}
	}
	wg.Add(1)
	go run(GatewayInput{Action: "call", Server: "s", Tool: "echo", Arguments: map[string]any{"text": "hi"}}, "hi")
	for {
		s, _ := e.Server("s")
		if s.Status == StatusDiscovering {
			break
		}
		if s.Status == StatusReady || s.Status == StatusError || ctx.Err() != nil {
			t.Fatalf("the discovery did not run long enough to race: status %s", s.Status)
		}
		time.Sleep(time.Millisecond)
	}
	for i := range each {
		wg.Add(4)
		go run(GatewayInput{Action: "describe", Server: "s", Tool: fmt.Sprintf("tool_%04d", i)}, "inputSchema")
		go run(GatewayInput{Action: "list_resources", Server: "s"}, "mcptest://readme")
		go run(GatewayInput{Action: "list_prompts", Server: "s"}, "greet")
		go run(GatewayInput{Action: "search", Query: "echo"}, `"tool":"echo"`)
	}
	wg.Wait()
	for text, n := range failed {
		t.Errorf("%d answers wrong: %.300s", n, text)
	}
}
