package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"time"
	"unicode/utf8"
)

// The kinds of record voltmcp writes. Kind is a plain string so that a
// newer writer's kinds still read back; these are the ones known today.
const (
	KindCall         = "call"          // a tool call through the gateway
	KindReadResource = "read_resource" // a resource read
	KindGetPrompt    = "get_prompt"    // a prompt fetched
	KindTrust        = "trust"         // a project trust decision
	KindPinChange    = "pin_change"    // a tool's pinned metadata changed
	KindApprove      = "approve"       // a pending change or server approved
	KindConfigChange = "config_change" // a config file written by voltmcp
	KindPluginFault  = "plugin_fault"  // a wasm plugin trapped, timed out or misbehaved
	KindPolicyError  = "policy_error"  // a policy failed to decide (and so denied)
)

// MaxLineBytes bounds one line of the log, newline excluded. Append
// shrinks a record that would exceed it (see Append), and readers report a
// longer line as corrupt without holding it in memory.
const MaxLineBytes = 1 << 20

// Record is one audit event. Seq and Prev belong to the log: Append sets
// them and ignores what the caller put there. Every other field is the
// caller's, and every field but Kind may be left empty.
type Record struct {
	// Seq numbers records from 1, across rotated files.
	Seq int64 `json:"seq"`
	// Prev is the hex SHA-256 of the previous record's line, without its
	// newline; empty for the first record of a log.
	Prev string `json:"prev"`
	// Time is when the event happened, written in UTC with nanoseconds
	// (RFC 3339). A zero Time becomes the time of the append.
	Time time.Time `json:"time"`
	// Kind says what happened: one of the Kind constants.
	Kind string `json:"kind"`

	Workspace string `json:"workspace,omitempty"`
	Session   string `json:"session,omitempty"`
	// Surface is the caller: serve, cli, rpc, tui, ...
	Surface  string `json:"surface,omitempty"`
	Server   string `json:"server,omitempty"`
	Tool     string `json:"tool,omitempty"`
	Resource string `json:"resource,omitempty"`
	Prompt   string `json:"prompt,omitempty"`
	// Risk is the risk class: read, write, destructive or unknown.
	Risk string `json:"risk,omitempty"`
	// Status is the outcome in the spec's status vocabulary (ok, error,
	// denied, timeout, cancelled, ...).
	Status     string `json:"status,omitempty"`
	DurationMS int64  `json:"duration_ms,omitempty"`
	// ResultBytes and ResultSHA256 identify the full result without
	// holding it.
	ResultBytes  int64  `json:"result_bytes,omitempty"`
	ResultSHA256 string `json:"result_sha256,omitempty"`
	// Truncated says the caller saw a clipped result; CacheID names the
	// sidecar holding the full one.
	Truncated bool   `json:"truncated,omitempty"`
	CacheID   string `json:"cache_id,omitempty"`
	// Args describes the arguments without their values, as
	// SummarizeArgs makes it.
	Args map[string]string `json:"args,omitempty"`
	// Decision is the policy's verdict, when a policy was asked.
	Decision *Decision `json:"decision,omitempty"`
	// Detail carries what a kind needs beyond the fields above. It is
	// written as JSON, so it reads back as plain maps, slices, strings,
	// json.Number, booleans and nil.
	Detail map[string]any `json:"detail,omitempty"`
}

// Decision is a policy's verdict on an event.
type Decision struct {
	Allowed bool     `json:"allowed"`
	Reasons []string `json:"reasons,omitempty"`
}

// DefaultPath is where voltmcp keeps the active audit file for an agent
// directory: <agentDir>/audit/audit.jsonl.
func DefaultPath(agentDir string) string {
	return filepath.Join(agentDir, "audit", "audit.jsonl")
}

// Limits of SummarizeArgs.
const (
	maxSummaryKeys   = 64
	maxSummaryKeyLen = 64
	// moreKey is the Args key that counts the keys left out.
	moreKey = "…"
)

// SummarizeArgs describes the arguments of a call without their values:
// each top-level key of a JSON object maps to its type, with a length for
// strings (in characters), arrays and objects — "string(12)", "number",
// "bool", "null", "array(3)", "object(2)". Arguments that are not an object
// are described under the key "(args)"; bytes that are not JSON become
// "invalid JSON (N bytes)". At most 64 keys are kept, in sorted order, each
// clipped to 64 bytes; the key "…" then counts the rest. Empty or null
// arguments give nil. Keys are still the caller's text: Append passes them
// through Options.Redact like every other string.
func SummarizeArgs(raw json.RawMessage) map[string]string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return map[string]string{"(args)": fmt.Sprintf("invalid JSON (%d bytes)", len(raw))}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return map[string]string{"(args)": describe(v)}
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make(map[string]string, min(len(keys), maxSummaryKeys+1))
	for i, k := range keys {
		if i == maxSummaryKeys {
			out[moreKey] = fmt.Sprintf("%d more keys", len(keys)-i)
			break
		}
		out[clip(k, maxSummaryKeyLen)] = describe(obj[k])
	}
	return out
}

// describe names a decoded JSON value's type and size.
func describe(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("string(%d)", utf8.RuneCountInString(x))
	case json.Number:
		return "number"
	case bool:
		return "bool"
	case nil:
		return "null"
	case []any:
		return fmt.Sprintf("array(%d)", len(x))
	case map[string]any:
		return fmt.Sprintf("object(%d)", len(x))
	}
	return fmt.Sprintf("%T", v)
}

// clip shortens s to at most n bytes on a rune boundary, marking the cut
// with "…".
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// prepare returns the record as Append writes it, minus Seq and Prev:
// time set and in UTC, Detail reduced to plain JSON values, and every
// string passed through redact.
func prepare(r Record, now func() time.Time, redact func(string) string) Record {
	if r.Time.IsZero() {
		r.Time = now()
	}
	r.Time = r.Time.UTC()
	if r.Detail != nil {
		r.Detail = plainDetail(r.Detail)
	}
	if redact == nil {
		return r
	}
	for _, s := range []*string{&r.Kind, &r.Workspace, &r.Session, &r.Surface, &r.Server, &r.Tool,
		&r.Resource, &r.Prompt, &r.Risk, &r.Status, &r.ResultSHA256, &r.CacheID} {
		*s = redact(*s)
	}
	if r.Args != nil {
		args := make(map[string]string, len(r.Args))
		for k, v := range r.Args {
			args[redact(k)] = redact(v)
		}
		r.Args = args
	}
	if r.Decision != nil {
		d := Decision{Allowed: r.Decision.Allowed}
		for _, s := range r.Decision.Reasons {
			d.Reasons = append(d.Reasons, redact(s))
		}
		r.Decision = &d
	}
	if r.Detail != nil {
		r.Detail = redactValue(r.Detail, redact).(map[string]any)
	}
	return r
}

// plainDetail turns a caller's Detail into the plain values it reads back
// as, so that redaction reaches strings inside the caller's own types too.
// A Detail that cannot be encoded is replaced by a note saying so.
func plainDetail(d map[string]any) map[string]any {
	b, err := json.Marshal(d)
	if err != nil {
		return map[string]any{"detail_error": "the detail could not be encoded as JSON"}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out map[string]any
	if err := dec.Decode(&out); err != nil {
		return map[string]any{"detail_error": "the detail could not be encoded as JSON"}
	}
	return out
}

// redactValue applies redact to every string and map key in a plain JSON
// value. Numbers stay as they are.
func redactValue(v any, redact func(string) string) any {
	switch x := v.(type) {
	case string:
		return redact(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[redact(k)] = redactValue(e, redact)
		}
		return out
	case []any:
		for i := range x {
			x[i] = redactValue(x[i], redact)
		}
		return x
	}
	return v
}

// Limits that shrink applies to a record too large for one line.
const (
	shrinkString  = 1 << 10
	shrinkArgs    = maxSummaryKeys
	shrinkReasons = 32
)

// shrink cuts a record whose line would exceed MaxLineBytes down to a
// bounded size: every string clipped, Args and the reasons cut short, and
// Detail replaced by a note of what happened. The audit event itself is
// worth more than its full text.
func shrink(r Record, size int) Record {
	for _, s := range []*string{&r.Kind, &r.Workspace, &r.Session, &r.Surface, &r.Server, &r.Tool,
		&r.Resource, &r.Prompt, &r.Risk, &r.Status, &r.ResultSHA256, &r.CacheID} {
		*s = clip(*s, shrinkString)
	}
	if len(r.Args) > 0 {
		keys := make([]string, 0, len(r.Args))
		for k := range r.Args {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		args := map[string]string{}
		for i, k := range keys {
			if i == shrinkArgs {
				args[moreKey] = fmt.Sprintf("%d more keys", len(keys)-i)
				break
			}
			args[clip(k, maxSummaryKeyLen)] = clip(r.Args[k], shrinkString)
		}
		r.Args = args
	}
	if r.Decision != nil {
		d := Decision{Allowed: r.Decision.Allowed}
		for i, s := range r.Decision.Reasons {
			if i == shrinkReasons {
				d.Reasons = append(d.Reasons, fmt.Sprintf("%d more reasons", len(r.Decision.Reasons)-i))
				break
			}
			d.Reasons = append(d.Reasons, clip(s, shrinkString))
		}
		r.Decision = &d
	}
	r.Detail = map[string]any{"shrunk": fmt.Sprintf("the record was %d bytes, over the %d-byte line limit; strings were clipped and the detail dropped", size, MaxLineBytes)}
	return r
}
