//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/internal/mcptest"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// peakRSS returns the peak resident set of process pid (VmHWM), in
// bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM of %d: %q", pid, rest)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

// TestServeServerRequestFloodRSS measures what an outside review
// measures: the peak resident set of a real `voltmcp serve`, before and
// after an upstream server sends it a flood of requests during one call
// (sampling, elicitation and roots/list, cycling, never reading the
// answers), over stdio, Streamable HTTP and legacy SSE. The peak may grow
// by at most twice the message cap (docs/security.md): refused requests
// are dropped before anything copies them (line.PeerRequests, on every
// transport), and the requests admitted hold at most one cap with what
// the go-sdk decodes of them.
func TestServeServerRequestFloodRSS(t *testing.T) {
	if testing.Short() {
		t.Skip("builds voltmcp")
	}
	// Requests of 900 KiB under a 2 MiB cap: the flood shows as one of
	// 4 MB under the default 8 MiB does (one request fits the bound, a
	// second does not), in a quarter of the time and memory.
	const msgCap, floods, size = 2 << 20, 150, 900 << 10
	// serve is built as users run it: the test binary may carry the race
	// detector, whose shadow memory grows with the heap it watches.
	bin := filepath.Join(t.TempDir(), "voltmcp")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		name   string
		server func(t *testing.T) map[string]any
	}{
		{"stdio", func(*testing.T) map[string]any {
			command, args, env := mcptest.Command(mcptest.ModeFloodRequests)
			return map[string]any{"command": command, "args": args, "env": env}
		}},
		{"streamable", func(t *testing.T) map[string]any {
			return map[string]any{"url": mcptest.ServeRawEvents(t, mcptest.ModeFloodRequests), "transport": "streamable-http"}
		}},
		{"sse", func(t *testing.T) map[string]any {
			return map[string]any{"url": mcptest.ServeSSEOnly(t, mcptest.ModeFloodRequests), "transport": "sse"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			srv := tc.server(t)
			for k, v := range map[string]any{"connectTimeoutMs": testTimeoutMs, "discoveryTimeoutMs": testTimeoutMs, "callTimeoutMs": testTimeoutMs} {
				srv[k] = v
			}
			doc := map[string]any{"version": 1, "servers": map[string]any{"bad": srv},
				"settings": map[string]any{"limits": map[string]any{"maxMessageBytes": msgCap}}}
			data, _ := json.Marshal(doc)
			project := filepath.Join(dir, "project")
			if err := os.MkdirAll(filepath.Join(project, ".volt"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(project, ".volt", "mcp.json"), data, 0o644); err != nil {
				t.Fatal(err)
			}
			serve := exec.Command(bin, "serve", "--home", filepath.Join(dir, "home"), "--project", project, "--approve")
			cs := connectCommand(t, serve, "")
			ctx := testwait.Context(t)
			call := func(count, bytes int) string {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp", Arguments: map[string]any{
					"action": "call", "server": "bad", "tool": mcptest.ToolFloodRequests,
					"arguments": map[string]any{"count": count, "bytes": bytes}}})
				if err != nil {
					t.Fatal(err)
				}
				text := ""
				for _, c := range res.Content {
					if tc, ok := c.(*mcp.TextContent); ok {
						text += tc.Text
					}
				}
				if res.IsError {
					t.Fatalf("call: %s", text)
				}
				return text
			}
			// A first call, of one request, does what a first call does
			// once (connecting, compiling plugins), before the baseline.
			call(1, size)
			base := peakRSS(t, serve.Process.Pid)
			if text := call(floods, size); !strings.Contains(text, fmt.Sprintf("sent %d requests", floods)) {
				t.Fatalf("flood call: %s", text)
			}
			peak := peakRSS(t, serve.Process.Pid)
			t.Logf("serve's peak RSS: %d MiB before the flood, %d MiB after (+%d KiB)", base>>20, peak>>20, (peak-base)>>10)
			if grew := peak - base; grew > 2*msgCap {
				t.Fatalf("serve's peak RSS grew by %d KiB in a flood of %d requests of %d KiB; want at most twice the message cap, %d KiB",
					grew>>10, floods, size>>10, 2*msgCap>>10)
			}
		})
	}
}
