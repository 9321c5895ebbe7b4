//go:build linux

package main

import (
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

// rss returns the resident set of process pid (VmRSS) and its peak
// (VmHWM), in bytes.
func rss(t *testing.T, pid int) (now, peak int64) {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	field := func(name string) int64 {
		for line := range strings.Lines(string(data)) {
			if rest, ok := strings.CutPrefix(line, name+":"); ok {
				kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
				if err != nil {
					t.Fatalf("%s of %d: %q", name, pid, rest)
				}
				return kb << 10
			}
		}
		t.Fatalf("no %s in /proc/%d/status", name, pid)
		return 0
	}
	return field("VmRSS"), field("VmHWM")
}

// resetPeakRSS makes the peak resident set of process pid its present
// one (Linux 4.0 on), so that a later peak is the peak of what came
// after, not of the start-up before.
func resetPeakRSS(t *testing.T, pid int) {
	t.Helper()
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		t.Skipf("cannot reset the peak RSS of serve (Linux 4.0 or later lets the process's owner write 5 to /proc/PID/clear_refs): %v", err)
	}
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
	// The review's flood: requests of 4 MB under the default 8 MiB cap
	// (one fits the bound, a second does not), 100 of them rather than
	// 300, since the peak is reached in the first few. serve's client
	// answers none of the flood's methods but roots/list, whose params
	// carry nothing it reads: every request is refused from the bytes
	// read, and the garbage of decoding none of them is what the
	// collector's pacing would let grow past the figure.
	const msgCap, floods, size = 8 << 20, 100, 4_000_000
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
			// The baseline is serve's resident set then, and the peak
			// counts from it: the start-up's own peak (a plugin's
			// compile) must not hide the flood's.
			call(1, size)
			resetPeakRSS(t, serve.Process.Pid)
			base, _ := rss(t, serve.Process.Pid)
			if text := call(floods, size); !strings.Contains(text, fmt.Sprintf("sent %d requests", floods)) {
				t.Fatalf("flood call: %s", text)
			}
			_, peak := rss(t, serve.Process.Pid)
			t.Logf("serve's RSS: %d MiB before the flood, peak %d MiB (+%d KiB)", base>>20, peak>>20, (peak-base)>>10)
			if grew := peak - base; grew > 2*msgCap {
				t.Fatalf("serve's peak RSS grew by %d KiB in a flood of %d requests of %d KiB; want at most twice the message cap, %d KiB",
					grew>>10, floods, size>>10, 2*msgCap>>10)
			}
		})
	}
}
