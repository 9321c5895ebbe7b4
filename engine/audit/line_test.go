package audit

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// jsonLine is what appendLine must equal: encoding/json's line for r,
// with detail as its Detail when not nil (Log.encodeLine).
func jsonLine(t testing.TB, r Record, detail []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	var v any = r
	if detail != nil {
		r.Detail = nil
		v = struct {
			Record
			Detail json.RawMessage `json:"detail"`
		}{r, detail}
	}
	if err := enc.Encode(v); err != nil {
		t.Fatalf("encoding/json: %v", err)
	}
	return buf.Bytes()
}

// checkLine holds appendLine to encoding/json for r, with and without
// an encoded detail, and reports whether appendLine wrote the record.
func checkLine(t testing.TB, r Record) bool {
	t.Helper()
	wrote := false
	for _, detail := range [][]byte{nil, []byte(`{"a":"<b>&\u2028","n":1}`)} {
		got, ok := appendLine([]byte("kept"), &r, detail)
		if !ok {
			if string(got) != "kept" {
				t.Fatalf("appendLine refused %+v but appended %q", r, got)
			}
			continue
		}
		wrote = true
		if want := jsonLine(t, r, detail); !bytes.Equal(got[len("kept"):], want) {
			t.Fatalf("appendLine(%+v, %q):\n got %q\nwant %q", r, detail, got[len("kept"):], want)
		}
	}
	return wrote
}

// TestAppendLine holds the hand-written line to encoding/json for records
// of every shape the log writes: an intent, a full call record, empty
// and set optional members, escapes, invalid UTF-8, HTML characters,
// times with and without fractions and zones, and records it must leave
// to encoding/json (a Detail not encoded yet, a time out of range).
func TestAppendLine(t *testing.T) {
	at := time.Date(2026, 12, 7, 16, 30, 0, 123456789, time.UTC)
	tests := []struct {
		name  string
		r     Record
		wrote bool
	}{
		{"empty", Record{}, true},
		{"intent", Record{Seq: 7, Prev: strings.Repeat("ab", 32), Time: at, Kind: KindCallIntent, Surface: "serve",
			Server: "mcptest", Tool: "echo", Risk: "unknown", Decision: &Decision{Allowed: true}}, true},
		{"call", Record{Seq: 8, Prev: "00ff", Time: at.Truncate(time.Second), Kind: KindCall, Workspace: "ws", Session: "s1",
			Surface: "cli", Server: "github", Tool: "create_issue", Resource: "file:///a", Prompt: "p", Risk: "write",
			Status: "completed", DurationMS: -3, ResultBytes: 1 << 40, ResultSHA256: "sha", Truncated: true, CacheID: "c1",
			Args:     map[string]string{"repo": "string(15)", "": "", "b\"<>&": "a\xffb", "\u2028": "\t\n\x00\x1f"},
			Decision: &Decision{Allowed: false, Reasons: []string{"denied", "", "é \\ /"}}, Reason: "why", Intent: 7}, true},
		{"empty args and reasons", Record{Kind: KindCall, Args: map[string]string{}, Decision: &Decision{Reasons: []string{}},
			Detail: map[string]any{}}, true},
		{"zone", Record{Time: time.Date(2026, 1, 2, 3, 4, 5, 600, time.FixedZone("x", -(5*3600+30*60))), Kind: "k"}, true},
		{"detail to encode", Record{Kind: KindCall, Detail: map[string]any{"a": 1}}, true}, // with an encoded detail only
		{"year out of range", Record{Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, false},
		{"zone with seconds", Record{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("s", 61))}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if wrote := checkLine(t, tt.r); wrote != tt.wrote {
				t.Fatalf("appendLine wrote the record: %v, want %v", wrote, tt.wrote)
			}
		})
	}
}

// FuzzAppendLine holds the hand-written line to encoding/json for
// arbitrary strings, numbers and times.
// Run it with: go test ./engine/audit -run '^$' -fuzz FuzzAppendLine -fuzztime 60s
func FuzzAppendLine(f *testing.F) {
	f.Add("call", "srv", "tool", "k", "v", "reason <&>", int64(1), int64(0), int64(1733500000123456789), int32(0), true, uint8(3))
	f.Add("\xff\u2028", "", "\x00", "", "", "", int64(-1), int64(1<<62), int64(-1<<63), int32(3600), false, uint8(0))
	f.Fuzz(func(t *testing.T, kind, server, tool, key, val, reason string, seq, n, unixNano int64, zone int32, allowed bool, mask uint8) {
		r := Record{Seq: seq, Prev: val, Time: time.Unix(0, unixNano).In(time.FixedZone("z", int(zone))), Kind: kind,
			Server: server, Tool: tool, Risk: reason, Status: key, DurationMS: n, ResultBytes: -n, CacheID: kind,
			Truncated: allowed, Reason: reason, Intent: n}
		if mask&1 != 0 {
			r.Args = map[string]string{key: val, val: key, reason: ""}
		}
		if mask&2 != 0 {
			r.Decision = &Decision{Allowed: allowed, Reasons: []string{reason, key}}
		}
		if mask&4 != 0 {
			r.Workspace, r.Session, r.Surface, r.Resource, r.Prompt, r.ResultSHA256 = key, val, kind, server, tool, reason
		}
		checkLine(t, r)
	})
}
