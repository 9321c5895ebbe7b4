package output

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCleanOutput(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"plain text\n\tindented    code\n", "plain text\n\tindented    code\n"},
		{"über ✓ 日本語 😀", "über ✓ 日本語 😀"},
		{"\x1b[1;31mbold red\x1b[0m", "bold red"},
		{"\x1b]8;;https://evil.example\x07link\x1b]8;;\x07", "link"},
		{"\x1b]0;title\x1b\\after", "after"},
		{"a\x1bMb", "ab"},
		{"crlf\r\nline\rover", "crlf\nline\nover"},
		{"bell\x07 nul\x00 del\x7f", "bell nul del"},
		{"c1\u009b31m and \u0085next", "c1 and next"},
		{"bidi \u202eesrever\u202c and \u2066isolate\u2069", "bidi esrever and isolate"},
		{"zero\u200bwidth\u200d joiner\ufeff", "zerowidth joiner"},
		{"tags \U000E0049\U000E0047\U000E004E hidden", "tags  hidden"},
		{"bad \xff\xfe utf8", "bad \ufffd utf8"},
		{"\x1b(Bcharset \x1b)0switch", "charset switch"},
		{"soft\u00adhyphen \u061cmark \u180emongolian", "softhyphen mark mongolian"},
		{"\x1b[", ""},
	} {
		got, n := Clean(tt.in)
		if got != tt.want {
			t.Errorf("Clean(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if n > 0 && got == tt.in {
			t.Errorf("Clean(%q) reports %d removed", tt.in, n)
		}
	}
}

func TestCleanOutputDoesNotCopyCleanText(t *testing.T) {
	s := strings.Repeat("clean line of output\n", 1000)
	if n := testing.AllocsPerRun(10, func() { Clean(s) }); n != 0 {
		t.Errorf("%v allocations for clean text", n)
	}
}

func TestStructuredClean(t *testing.T) {
	for _, tt := range []struct {
		v    any
		want bool
	}{
		{json.RawMessage(`{"a":"plain","n":[1,2,{"b":"über ❤\ufe0f"}]}`), true},
		{json.RawMessage(`{"a":"tab\tand\nnewline \\\\u202e is text"}`), true},
		{json.RawMessage(`{"a":"❤\ufe0f"}`), true},
		{json.RawMessage(`{"a":"\u202eevil"}`), false},
		{json.RawMessage("{\"a\":\"\u202eevil\"}"), false},
		{json.RawMessage(`{"a":"\u001b[31m"}`), false},
		{json.RawMessage(`{"a":"\udb40\udc41 tag"}`), false},
		{json.RawMessage(`{"a":"\ufe0f\ufe0f"}`), false},
		{json.RawMessage("{\"a\":\"\xff\"}"), false},
		{map[string]any{"a": "zero\u200bwidth"}, false},
		{map[string]any{"a": "fine"}, true},
		{nil, true},
	} {
		if got := StructuredClean(tt.v); got != tt.want {
			t.Errorf("StructuredClean(%v) = %v, want %v", tt.v, got, tt.want)
		}
	}
}

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
				Clean(c.s)
			}
		})
	}
}
