package engine

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/voltmcp/voltmcp/cue"
)

// The benchmarks of this file use only what the engine had before
// packages sanitize and redact, so that they run unchanged on an older
// tree for benchstat.

// BenchmarkCleanOutput measures the output cleaner on the call path: a
// clean ASCII output (the fast path), clean text with non-ASCII letters,
// and output with escapes and invisible characters to remove.
func BenchmarkCleanOutput(b *testing.B) {
	ascii := strings.Repeat(`{"id":42,"title":"Crash on start","state":"open","labels":["bug"]}`+"\n", 64)
	unicode := strings.Repeat("Über die Brücke, 日本語のテキスト, emoji 😀 and a tab\there.\n", 64)
	dirty := strings.Repeat("\x1b[31merror\x1b[0m: file\u200b not found \u202eevil\u202c (ESC ( B: \x1b(B)\n", 64)
	for _, c := range []struct{ name, s string }{{"ascii4KiB", ascii}, {"unicode4KiB", unicode}, {"dirty4KiB", dirty}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.s)))
			b.ReportAllocs()
			for b.Loop() {
				cleanOutput(c.s)
			}
		})
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
