package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/voltmcp/voltmcp/engine/internal/jsonwire"
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
	// KindCallIntent is a call about to be made, written before it is
	// (a call of risk write, destructive or unknown is made only once
	// its intent is in the log). The call's record names it in Intent;
	// Verify reports an intent that no record names.
	KindCallIntent = "call_intent"
	// KindAuditGap says that records were lost: the log could not be
	// written for a while. Its Detail holds "lost", the number of
	// records, "since" (RFC 3339) and "error", the first failure. Verify
	// reports it.
	KindAuditGap = "audit_gap"
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
	// Status is the outcome in the spec's status vocabulary; a call's is
	// completed, failed, denied, invalid or error.
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
	// Reason says why the event ended as it did when the decision's
	// reasons do not: a call refused before any policy decided (an
	// unknown server or tool, arguments that are not an object), or one
	// that failed on the way to the server.
	Reason string `json:"reason,omitempty"`
	// Intent, on a call record, is the seq of the call_intent record
	// written before the call was made: the record completes it.
	Intent int64 `json:"intent,omitempty"`
	// CallID, on a call record and its intent, is the call's id: the
	// callId of its events and the id of its recent call.
	CallID string `json:"call_id,omitempty"`
	// Detail carries what a kind needs beyond the fields above. It is
	// written as JSON, so it reads back as plain maps, slices, strings,
	// json.Number, booleans and nil.
	Detail map[string]any `json:"detail,omitempty"`
	// DetailKey, when set, names Detail: the caller promises that every
	// record it gives with this key has the same Detail. Append then
	// redacts and encodes that Detail once per key and reuses the bytes,
	// which are the same bytes either way. A caller whose redaction can
	// change (a new policy) uses new keys. It is not written.
	DetailKey string `json:"-"`
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
// string passed through redact. It does not change what r refers to (the
// caller's Args, Decision and Detail).
func prepare(r Record, now func() time.Time, redact func(string) string) Record {
	if r.Time.IsZero() {
		r.Time = now()
	}
	r.Time = r.Time.UTC()
	if r.Detail != nil {
		r.Detail = plainDetail(r.Detail, redact)
	}
	if redact == nil {
		return r
	}
	for _, s := range r.strings() {
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
	return r
}

// strings returns the record's own string fields (Prev, the log's
// hash, aside): the one list redaction and shrinking go through, which a
// test holds to every string field of Record.
func (r *Record) strings() []*string {
	return []*string{&r.Kind, &r.Workspace, &r.Session, &r.Surface, &r.Server, &r.Tool,
		&r.Resource, &r.Prompt, &r.Risk, &r.Status, &r.ResultSHA256, &r.CacheID, &r.Reason, &r.CallID}
}

// detailErrorKey and detailErrorText make the note that stands in for a
// Detail that cannot be encoded.
const (
	detailErrorKey  = "detail_error"
	detailErrorText = "the detail could not be encoded as JSON"
)

// plainDetail turns a caller's Detail into the plain values it reads back
// as — maps, slices, strings, json.Number, booleans and nil — with redact
// (when not nil) applied to every string and map key, so that redaction
// reaches strings inside the caller's own types too. The result shares no
// map or slice with d. A Detail that cannot be encoded is replaced by a
// note saying so.
//
// The result is what a JSON round trip of d (encoding/json, numbers
// decoded as json.Number) gives. Values that are plain already are copied
// directly; the round trip itself runs only for the values of other
// types (structs, pointers, floats, named types, ...), one value at a
// time.
func plainDetail(d map[string]any, redact func(string) string) map[string]any {
	v, ok := plainValue(d, redact)
	if !ok {
		v = redactValue(map[string]any{detailErrorKey: detailErrorText}, redact)
	}
	out, _ := v.(map[string]any)
	return out
}

// plainValue is plainDetail for one value: v as a JSON round trip gives
// it back, redacted, sharing nothing with v. It reports false when v
// cannot be encoded as JSON.
func plainValue(v any, redact func(string) string) (any, bool) {
	switch x := v.(type) {
	case nil:
		return nil, true
	case string:
		return plainString(x, redact), true
	case bool:
		return x, true
	case json.Number:
		// encoding/json writes an empty Number as 0 and refuses an
		// invalid one.
		if x == "" {
			return json.Number("0"), true
		}
		return x, jsonwire.IsNumber(string(x))
	case int:
		return json.Number(strconv.FormatInt(int64(x), 10)), true
	case int8:
		return json.Number(strconv.FormatInt(int64(x), 10)), true
	case int16:
		return json.Number(strconv.FormatInt(int64(x), 10)), true
	case int32:
		return json.Number(strconv.FormatInt(int64(x), 10)), true
	case int64:
		return json.Number(strconv.FormatInt(x, 10)), true
	case uint:
		return json.Number(strconv.FormatUint(uint64(x), 10)), true
	case uint8:
		return json.Number(strconv.FormatUint(uint64(x), 10)), true
	case uint16:
		return json.Number(strconv.FormatUint(uint64(x), 10)), true
	case uint32:
		return json.Number(strconv.FormatUint(uint64(x), 10)), true
	case uint64:
		return json.Number(strconv.FormatUint(x, 10)), true
	case map[string]any:
		if x == nil {
			return nil, true
		}
		if !validKeys(x) {
			// Keys that become equal once made valid UTF-8: the round
			// trip decides which value stays.
			return roundTrip(x, redact)
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			pe, ok := plainValue(e, redact)
			if !ok {
				return nil, false
			}
			out[plainString(k, redact)] = pe
		}
		return out, true
	case []any:
		if x == nil {
			return nil, true
		}
		out := make([]any, len(x))
		for i, e := range x {
			pe, ok := plainValue(e, redact)
			if !ok {
				return nil, false
			}
			out[i] = pe
		}
		return out, true
	case []string:
		if x == nil {
			return nil, true
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plainString(e, redact)
		}
		return out, true
	case map[string]string:
		if x == nil {
			return nil, true
		}
		if !validKeys(x) {
			return roundTrip(x, redact)
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[plainString(k, redact)] = plainString(e, redact)
		}
		return out, true
	case json.RawMessage:
		// Valid raw JSON decodes to what its encoding (the same JSON,
		// compacted) decodes to.
		if !json.Valid(x) {
			return roundTrip(x, redact)
		}
		out, ok := decodeValue(x)
		if !ok {
			return nil, false
		}
		return redactValue(out, redact), true
	}
	return roundTrip(v, redact)
}

// roundTrip encodes v as JSON and decodes it back into plain values, then
// redacts them. It reports false when v cannot be encoded.
func roundTrip(v any, redact func(string) string) (any, bool) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	out, ok := decodeValue(b)
	if !ok {
		return nil, false
	}
	return redactValue(out, redact), true
}

// decodeValue decodes one JSON value, numbers as json.Number.
func decodeValue(b []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, false
	}
	return out, true
}

// plainString is s as a JSON round trip gives it back (every byte that is
// not valid UTF-8 replaced by U+FFFD, as encoding/json does), redacted.
func plainString(s string, redact func(string) string) string {
	s = jsonwire.RoundTripString(s)
	if redact != nil {
		s = redact(s)
	}
	return s
}

// validKeys reports whether every key of m is valid UTF-8.
func validKeys[V any](m map[string]V) bool {
	for k := range m {
		if !utf8.ValidString(k) {
			return false
		}
	}
	return true
}

// redactValue applies redact to every string and map key in a plain JSON
// value that nothing else refers to: it changes slices in place. Numbers
// stay as they are. A nil redact leaves v as it is.
func redactValue(v any, redact func(string) string) any {
	if redact == nil {
		return v
	}
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
	for _, s := range r.strings() {
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
