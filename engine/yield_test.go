package engine

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/engine/internal/turn"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// TestLeanServeYieldsBeforeBlocking runs calls of the mcp tool on the
// lean path with the readers of every stdio connection checked
// (turn.Check): the agent's, whose reader runs the gateway's work, and
// the server's, whose reader runs the work after the server's answer.
// Work that holds either reader for a second without yielding, as a
// step that blocks before it yields would (connecting the server,
// waiting for a slow call, writing the audit log or the output store),
// fails the test with the stack of the step.
func TestLeanServeYieldsBeforeBlocking(t *testing.T) {
	t.Parallel()
	e := start(t, workspace(t, map[string]server{"s": stdio("behave", nil)}, nil))
	var mu sync.Mutex
	var held []string
	e.readerCheck.Store(&turn.Check{Limit: time.Second, Held: func(d time.Duration, stack string) {
		mu.Lock()
		held = append(held, fmt.Sprintf("held for %v:\n%s", d, stack))
		mu.Unlock()
	}})
	lean, p := initializedWirePeer(t, e)
	calls := []map[string]any{
		// The first connects the server, on the lean path's work.
		{"action": "call", "server": "s", "tool": "echo", "arguments": map[string]any{"text": "cold"}},
		{"action": "call", "server": "s", "tool": "echo", "arguments": map[string]any{"text": "warm"}},
		{"action": "call", "server": "s", "tool": "slow", "arguments": map[string]any{"ms": 1500}},
		{"action": "call", "server": "s", "tool": "echo", "arguments": map[string]any{"text": strings.Repeat("long output\n", 20000)}},
		{"action": "search", "query": "echo"},
		{"action": "describe", "server": "s", "tool": "echo"},
		{"action": "status"},
	}
	for i, in := range calls {
		p.send(gatewayCallMsg(i+2, in, nil))
		if r := p.reply(i + 2); r["result"] == nil {
			t.Fatalf("%v: %v", in, r)
		}
	}
	if n := lean.answered.Load(); n != int64(len(calls)) {
		t.Errorf("the lean path answered %d of %d calls", n, len(calls))
	}
	// A direct call, waited for by turn.Await off any reader.
	if res, err := e.callUngated(testwait.Context(t), "s", "echo", map[string]any{"text": "direct"}); err != nil || text(res) != "direct" {
		t.Errorf("direct call: %v %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, h := range held {
		t.Errorf("work on a connection's reader did not yield before it blocked; %s", h)
	}
}
