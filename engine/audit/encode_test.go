package audit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/engine/audit"
)

// goldenInner is a caller's own type inside a Detail.
type goldenInner struct {
	Token string            `json:"token"`
	N     int               `json:"n"`
	Env   map[string]string `json:"env,omitempty"`
	Skip  string            `json:"-"`
	Opt   string            `json:"opt,omitempty"`
}

// goldenString is a named string type: not one of the plain JSON types.
type goldenString string

// goldenRedact is a deterministic stand-in for the policies redactor.
func goldenRedact(s string) string {
	return strings.ReplaceAll(s, "sk-SECRET", "[R]")
}

// goldenRecords are records of every shape Append has to reduce to plain
// JSON: Go integers and floats, json.Number, nested maps and slices, a
// struct, a pointer, raw JSON, nil, invalid UTF-8, HTML characters,
// secrets in keys and values, and details that cannot be encoded.
func goldenRecords() []audit.Record {
	call := audit.Record{
		Kind: audit.KindCall, Workspace: "ws", Session: "s1", Surface: "serve",
		Server: "github", Tool: "create_issue", Risk: "write", Status: "ok",
		DurationMS: 12, ResultBytes: 1234, ResultSHA256: strings.Repeat("ab", 32),
		Truncated: true, CacheID: "c1",
		Args:     map[string]string{"repo": "string(15)", "sk-SECRET": "string(3)", "": ""},
		Decision: &audit.Decision{Allowed: true, Reasons: []string{"allowed", "token sk-SECRET", ""}},
		Detail: map[string]any{
			"str":           "plain <b>&amp;</b> \u2028 \u2029 \t\n\"q\" \\ text",
			"secret":        "token sk-SECRET here",
			"sk-SECRET":     "key redacted",
			"empty":         "",
			"bad_utf8":      "a\xffb\xc3(\xed\xa0\x80z",
			"bad\xfekey":    "v",
			"bool":          true,
			"false":         false,
			"nil":           nil,
			"int":           42,
			"int_neg":       -7,
			"int8":          int8(-8),
			"int16":         int16(1600),
			"int32":         int32(-32),
			"int64":         int64(1 << 62),
			"uint":          uint(7),
			"uint8":         uint8(255),
			"uint16":        uint16(65535),
			"uint32":        uint32(1 << 31),
			"uint64":        uint64(math.MaxUint64),
			"uintptr":       uintptr(9),
			"float64":       1.5,
			"float64_int":   3.0,
			"float64_big":   1e21,
			"float64_small": 1e-7,
			"float64_neg0":  math.Copysign(0, -1),
			"float64_pi":    math.Pi,
			"float32":       float32(0.1),
			"float32_big":   float32(1e22),
			"number":        json.Number("12.50e3"),
			"number_int":    json.Number("-0"),
			"number_empty":  json.Number(""),
			"list": []any{"x", "sk-SECRET", 1, json.Number("2"), 2.5, nil, true,
				[]any{"deep", []any{}}, map[string]any{"k": "v", "sk-SECRET": []any{"sk-SECRET"}},
				goldenInner{Token: "sk-SECRET"}, []string{"in", "list"}},
			"strings":     []string{"a", "token sk-SECRET", ""},
			"strings_nil": []string(nil),
			"string_map":  map[string]string{"k": "v", "sk-SECRET": "sk-SECRET", "bad\xff": "x\xff"},
			"map_nil":     map[string]any(nil),
			"list_nil":    []any(nil),
			"empty_map":   map[string]any{},
			"empty_list":  []any{},
			"nested":      map[string]any{"a": map[string]any{"b": []any{1, "two", map[string]any{}}}},
			"struct": goldenInner{Token: "sk-SECRET", N: 3, Env: map[string]string{"sk-SECRET": "1"},
				Skip: "skipped", Opt: ""},
			"ptr":     &goldenInner{Token: "p"},
			"ptr_nil": (*goldenInner)(nil),
			"raw":     json.RawMessage(` {"readOnlyHint": true, "n": 1.0, "s": "sk-SECRET", "a": [1, {"b": null}]} `),
			"bytes":   []byte("hi"),
			"time":    time.Date(2026, 5, 1, 12, 0, 0, 5, time.FixedZone("x", 3600)),
			"named":   goldenString("named"),
			"ints":    []int{1, 2},
			"any_map": map[string]int{"one": 1},
		},
	}
	return []audit.Record{
		call,
		{Kind: audit.KindTrust, Status: "trusted", Detail: map[string]any{"project": "/p", "files": []string{"a sha256:00"}}},
		{Kind: audit.KindPluginFault, Detail: map[string]any{}},
		{Kind: audit.KindPluginFault, Detail: map[string]any{"nan": math.NaN()}},
		{Kind: audit.KindPluginFault, Detail: map[string]any{"inf": []any{math.Inf(1)}}},
		{Kind: audit.KindPluginFault, Detail: map[string]any{"ok": "x", "bad": json.Number("1x")}},
		{Kind: audit.KindPluginFault, Detail: map[string]any{"ch": make(chan int)}},
		{Kind: audit.KindPluginFault, Detail: map[string]any{"raw": json.RawMessage(`{"a":`)}},
		{Kind: audit.KindPluginFault, Detail: map[string]any{"raw": json.RawMessage(nil)}},
		{Kind: audit.KindConfigChange, Time: time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("y", -7200)),
			Detail: map[string]any{"change": "set_enabled", "enabled": false, "layer": "user"}},
	}
}

// TestEncodingIsPinned appends goldenRecords to an empty log and compares
// the file with testdata/golden.jsonl byte for byte: the encoding, and so
// the hash chain, must never change for the same input, whatever path
// Append takes to it.
func TestEncodingIsPinned(t *testing.T) {
	t.Parallel()
	l, path := openLog(t, &audit.Options{Redact: goldenRedact, Now: fixedClock()})
	for _, r := range goldenRecords() {
		if err := l.Append(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	golden, err := os.ReadFile(filepath.Join("testdata", "golden.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	got, want := strings.Split(string(b), "\n"), strings.Split(string(golden), "\n")
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Errorf("line %d:\n got %s\nwant %s", i+1, g, w)
		}
	}
	mustIntact(t, verify(t, path), int64(len(goldenRecords())))
}

// TestAppendLeavesTheCallerDetailAlone checks that Append neither
// redacts nor otherwise changes the maps and slices the caller passed in
// Detail: callers may reuse them.
func TestAppendLeavesTheCallerDetailAlone(t *testing.T) {
	t.Parallel()
	l, _ := openLog(t, &audit.Options{Redact: goldenRedact})
	mk := func() map[string]any {
		return map[string]any{
			"list":    []any{"sk-SECRET", 1, []any{"sk-SECRET"}, map[string]any{"sk-SECRET": "sk-SECRET"}},
			"strings": []string{"sk-SECRET"},
			"map":     map[string]string{"sk-SECRET": "sk-SECRET"},
			"nested":  map[string]any{"sk-SECRET": []any{"sk-SECRET", goldenInner{Token: "sk-SECRET"}}},
			"struct":  &goldenInner{Token: "sk-SECRET", Env: map[string]string{"sk-SECRET": "sk-SECRET"}},
			"raw":     json.RawMessage(`["sk-SECRET"]`),
		}
	}
	d := mk()
	if err := l.Append(context.Background(), audit.Record{Kind: audit.KindCall, Detail: d}); err != nil {
		t.Fatal(err)
	}
	if want := mk(); !reflect.DeepEqual(d, want) {
		t.Errorf("Append changed the caller's detail:\n got %#v\nwant %#v", d, want)
	}
}

// TestKeyedDetailWritesTheSameLines checks that a Detail given with a
// DetailKey, encoded once and reused, writes the lines the same records
// write without one, the golden ones included, redacted alike.
func TestKeyedDetailWritesTheSameLines(t *testing.T) {
	t.Parallel()
	keyed, keyedPath := openLog(t, &audit.Options{Redact: goldenRedact, Now: fixedClock()})
	plain, plainPath := openLog(t, &audit.Options{Redact: goldenRedact, Now: fixedClock()})
	for round := range 2 {
		for i, r := range goldenRecords() {
			if err := plain.Append(context.Background(), r); err != nil {
				t.Fatal(err)
			}
			r.DetailKey = fmt.Sprint("k", i)
			if err := keyed.Append(context.Background(), r); err != nil {
				t.Fatal(err)
			}
		}
		if round == 0 {
			// The first round alone is the golden file.
			b, _ := os.ReadFile(keyedPath)
			golden, err := os.ReadFile(filepath.Join("testdata", "golden.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != string(golden) {
				t.Errorf("keyed details:\n%s\nwant the golden file:\n%s", b, golden)
			}
		}
	}
	a, _ := os.ReadFile(keyedPath)
	b, _ := os.ReadFile(plainPath)
	if string(a) != string(b) {
		t.Errorf("with keys:\n%s\nwithout:\n%s", a, b)
	}
	if strings.Contains(string(a), "sk-SECRET") {
		t.Errorf("a secret reached the log:\n%s", a)
	}
	mustIntact(t, verify(t, keyedPath), int64(2*len(goldenRecords())))
}
