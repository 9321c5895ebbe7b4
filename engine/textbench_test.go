package engine

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/voltmcp/voltmcp/cue"
)

// The benchmarks of this file use only what the engine had before
// packages sanitize and redact, so that they run unchanged on an older
// tree for benchstat.

// BenchmarkScrub measures the scrubber of a server given n secret values
// on an error message and on a 4 KiB stderr tail, neither holding any.
func BenchmarkScrub(b *testing.B) {
	msg := `calling "tools/call": server returned an error: upstream request to https://api.example.com/v1/items failed: 502 Bad Gateway`
	tail := strings.Repeat("2026-05-01T12:00:00Z INFO handled request path=/v1/items status=200 took=12ms\n", 52)
	for _, n := range []int{1, 8} {
		var s scrubber
		for i := range n {
			s.add(fmt.Sprintf("ghp_%036d", i))
		}
		s.replace("https://api.example.com/v1?token=abc123", "https://api.example.com/v1?token=REDACTED")
		for _, c := range []struct{ name, t string }{{"error", msg}, {"stderr4KiB", tail}} {
			b.Run(fmt.Sprintf("%s/%dsecrets", c.name, n), func(b *testing.B) {
				b.SetBytes(int64(len(c.t)))
				b.ReportAllocs()
				for b.Loop() {
					s.text(c.t)
				}
			})
		}
	}
}

// BenchmarkCallRecord measures building the audit record of one call,
// which redacts the server's arguments and URL.
func BenchmarkCallRecord(b *testing.B) {
	in := ToolInput{
		Server: cue.Server{ID: "github", Transport: "stdio", Command: "npx",
			Args: []string{"-y", "@modelcontextprotocol/server-github@1.2.3", "--port", "8080", "--log-level", "info"}},
		Tool: Tool{Name: "create_issue", Hash: strings.Repeat("0f", 32)}, Risk: RiskWrite,
	}
	d := ToolDecision{Exposed: true, Allowed: true}
	args := json.RawMessage(`{"owner":"voltmcp","repo":"voltmcp","title":"Crash on start"}`)
	b.ReportAllocs()
	for b.Loop() {
		callRecord(in, d, args, "1.1")
	}
}
