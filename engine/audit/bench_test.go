package audit_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/voltmcp/voltmcp/engine/audit"
	"github.com/voltmcp/voltmcp/policies"
)

// BenchmarkAppend measures one append of a typical call record, without
// and with fsync, and one append of a record like those the gateway
// writes for a proxied call, redacted by the default redact policy.
func BenchmarkAppend(b *testing.B) {
	for _, tc := range []struct {
		name   string
		sync   bool
		record audit.Record
		redact bool
	}{
		{"nosync", false, callRecord(1), false},
		{"fsync", true, callRecord(1), false},
		{"gateway", false, gatewayRecord(), true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			opts := &audit.Options{Sync: tc.sync}
			if tc.redact {
				opts.Redact = defaultRedactor(b).Redact
			}
			l, _ := openLog(b, opts)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := l.Append(ctx, tc.record); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAppendAll measures writing eight gateway records, as the
// engine's audit backlog writes the records of the calls answered in
// its last 10 ms: one Append each, and one AppendAll. The log lets its
// lock go after each append, as it has by the next backlog.
func BenchmarkAppendAll(b *testing.B) {
	recs := make([]audit.Record, 8)
	for i := range recs {
		recs[i] = gatewayRecord()
	}
	ctx := context.Background()
	b.Run("append", func(b *testing.B) {
		l, _ := openLog(b, &audit.Options{Redact: defaultRedactor(b).Redact})
		b.ReportAllocs()
		for b.Loop() {
			for _, r := range recs {
				if err := l.Append(ctx, r); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("appendall", func(b *testing.B) {
		l, _ := openLog(b, &audit.Options{Redact: defaultRedactor(b).Redact})
		b.ReportAllocs()
		for b.Loop() {
			if err := l.AppendAll(ctx, recs); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// defaultRedactor is the redactor of the built-in policies, with one
// secret env var.
func defaultRedactor(b *testing.B) *policies.Redactor {
	b.Helper()
	ctx := context.Background()
	pol, err := policies.Load(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	red, err := pol.Redactor(ctx, policies.RedactInput{EnvNames: []string{"GITHUB_TOKEN"},
		LookupEnv: func(string) (string, bool) { return "ghp_" + strings.Repeat("x", 36), true }})
	if err != nil {
		b.Fatal(err)
	}
	return red
}

// gatewayRecord is shaped like the record the engine writes for a tool
// call through the gateway (engine.callRecord, with the fields that
// engine.record and finishRecord fill in).
func gatewayRecord() audit.Record {
	return audit.Record{
		Kind: audit.KindCall, Workspace: "/home/user/src/project", Session: "c0ffee0123456789", Surface: "serve",
		Server: "github", Tool: "create_issue", Risk: "write", Status: "ok",
		DurationMS: 42, ResultBytes: 1834, ResultSHA256: strings.Repeat("ab", 32),
		Args:     audit.SummarizeArgs(json.RawMessage(`{"owner":"voltmcp","repo":"voltmcp","title":"Crash on start","body":"It crashes.","labels":["bug"]}`)),
		Decision: &audit.Decision{Allowed: true, Reasons: []string{"tool allowed by default"}},
		Detail: map[string]any{
			"risk_reason": "name starts with create_", "pin_state": "pinned", "pin_change": "", "quarantined": false,
			"server_scope": "user", "transport": "stdio", "command": "npx",
			"args": []string{"-y", "@modelcontextprotocol/server-github"},
			"url":  "", "include_tools": []string(nil), "exclude_tools": []string{"delete_*"},
			"tool_hash":   strings.Repeat("0f", 32),
			"annotations": json.RawMessage(`{"title":"Create issue","readOnlyHint":false,"destructiveHint":false,"openWorldHint":true}`),
		},
	}
}

// BenchmarkVerify100k verifies a log of 100,000 call records (about 42 MB
// in three files).
func BenchmarkVerify100k(b *testing.B) {
	l, path := openLog(b, nil)
	appendN(b, l, 0, 100_000)
	l.Close()
	b.ReportAllocs()
	for b.Loop() {
		rep, err := audit.Verify(path)
		if err != nil || !rep.Intact || rep.Records != 100_000 {
			b.Fatalf("%v %v %d", err, rep.Intact, rep.Records)
		}
	}
}
