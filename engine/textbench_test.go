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
