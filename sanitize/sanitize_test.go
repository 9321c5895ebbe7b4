package sanitize_test

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/voltmcp/voltmcp/sanitize"
)

func TestOutput(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"plain text\n\tindented    code\n", "plain text\n\tindented    code\n"},
		{"über ✓ 日本語 😀 ❤\ufe0f", "über ✓ 日本語 😀 ❤\ufe0f"},
		{"\x1b[1;31mbold red\x1b[0m", "bold red"},
		{"\x1b]8;;https://evil.example\x07link\x1b]8;;\x07", "link"},
		{"\x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\", "link"},
		{"\x1b]0;title\x1b\\after", "after"},
		{"\x1b(Bplain \x1b)0x \x1b#8y", "plain x y"},
		{"a\x1bMb \x1b7c\x1b8", "ab c"},
		{"\x1bP1$r\x1b\\dcs \x1b_apc\x07x \x1bXsos\x1b\\y \x1b^pm\x07z", "dcs x y z"},
		{"crlf\r\nline\rover", "crlf\nline\nover"},
		{"bell\x07 nul\x00 del\x7f", "bell nul del"},
		{"c1\u009b31mred and \u0085next \u009d8;;u\u009clink", "c1red and next link"},
		{"bidi \u202eesrever\u202c and \u2066isolate\u2069 \u061cx", "bidi esrever and isolate x"},
		{"zero\u200bwidth\u200d joiner\ufeff soft\u00adhyphen \u2060wj", "zerowidth joiner softhyphen wj"},
		{"tags \U000E0049\U000E0047\U000E004E hidden", "tags  hidden"},
		{"ann\ufff9o\ufffat\ufffb", "annot"},
		{"vs \ufe0f\ufe0f x\ufe0f\ufe0f", "vs  x\ufe0f"},
		{"bad \xff\xfe utf8 \x9b2J", "bad \ufffd utf8 \ufffd2J"},
		{"\x1b[", ""},
		{"\x1b", ""},
	} {
		got, r := sanitize.Output(tt.in)
		if got != tt.want {
			t.Errorf("Output(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if (got != tt.in) != (r.Removed() > 0) && !strings.Contains(tt.in, "\r") {
			t.Errorf("Output(%q) reports %+v", tt.in, r)
		}
	}
}

func TestTextAndOutputShareTheList(t *testing.T) {
	in := "\x1b(Bname \u202eevil\u202c tag\U000E0041 \u00adsoft \x1b]8;;u\x1b\\l"
	text, _ := sanitize.Text(in, 0)
	out, _ := sanitize.Output(in)
	if text != out || text != "name evil tag soft l" {
		t.Errorf("Text %q, Output %q", text, out)
	}
}

func TestTextClips(t *testing.T) {
	got, r := sanitize.Text("  hello   \x1b[1mworld\x1b[0m and more  ", 12)
	if got != "hello   wor…" || r.Clipped == 0 || r.Escapes != 1 {
		t.Errorf("Text = %q %+v", got, r)
	}
}

func TestDisplayIsOneLine(t *testing.T) {
	if got := sanitize.Display("a\nb\r\nc\u2028d\te"); got != "a b c d e" {
		t.Errorf("Display = %q", got)
	}
}

func TestNoCopyOfCleanText(t *testing.T) {
	s := strings.Repeat("clean line of output, ünïcödé ✓\n", 1000)
	if n := testing.AllocsPerRun(10, func() { sanitize.Output(s) }); n != 0 {
		t.Errorf("Output: %v allocations for clean text", n)
	}
	if n := testing.AllocsPerRun(10, func() { sanitize.Text("a plain description", 100) }); n != 0 {
		t.Errorf("Text: %v allocations for clean text", n)
	}
}

// checkClean fails when out holds anything the list removes.
func checkClean(t *testing.T, in, out, what string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("%s: invalid UTF-8 out of %q", what, in)
	}
	prevVisible := false
	for _, ru := range out {
		switch {
		case ru == '\n' || ru == '\t':
			prevVisible = false
		case ru < 0x20 || ru >= 0x7f && ru < 0xa0:
			t.Fatalf("%s: control %U in %q (from %q)", what, ru, out, in)
		case sanitize.Invisible(ru):
			t.Fatalf("%s: invisible %U in %q (from %q)", what, ru, out, in)
		case sanitize.IsVariationSelector(ru):
			if !prevVisible {
				t.Fatalf("%s: stray variation selector in %q (from %q)", what, out, in)
			}
			prevVisible = false
		default:
			prevVisible = !unicode.IsSpace(ru)
		}
	}
}

// withoutSpace drops every white-space character, which Text tidies and
// Output keeps.
func withoutSpace(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) || r == 0x2028 || r == 0x2029 || unicode.Is(unicode.Zs, r) {
			return -1
		}
		return r
	}, s)
}

// FuzzSanitize checks both cleaners against the one list: their output
// never holds ESC, a C0 or C1 control other than tab and newline, an
// invisible character or a stray variation selector; it is valid UTF-8;
// cleaning it again changes nothing; and, white space aside, Text and
// Output remove the same things.
func FuzzSanitize(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b[31mred\x1b]0;t\x07", "\x1b(Bx", "\u202e\u200b\U000E0041x\ufe0f\ufe0f",
		"a\xffb", "  \r\n\n\n\n  x  ", "\u009b1m\u009d\u009c", "\x1bP\x1b\\", "x \ufe0f", "\u00a0\ufe0f",
		"\x1b]8;;u\x07", "a\r\nb"} {
		f.Add(s, 0)
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, s string, maxChars int) {
		maxChars %= 1 << 16
		text, tr := sanitize.Text(s, maxChars)
		checkClean(t, s, text, "Text")
		if again, r2 := sanitize.Text(text, maxChars); again != text || r2.Changed() {
			t.Fatalf("Text not idempotent: %q then %q (%+v)", text, again, r2)
		}
		if maxChars > 0 && utf8.RuneCountInString(text) > maxChars {
			t.Fatalf("Text over %d characters: %q", maxChars, text)
		}
		out, or := sanitize.Output(s)
		checkClean(t, s, out, "Output")
		if again, r2 := sanitize.Output(out); again != out || r2.Changed() {
			t.Fatalf("Output not idempotent: %q then %q (%+v)", out, again, r2)
		}
		if out == s && or.Removed() > 0 {
			t.Fatalf("Output reports %+v for unchanged %q", or, s)
		}
		if full, _ := sanitize.Text(s, 0); withoutSpace(full) != withoutSpace(out) {
			t.Fatalf("Text and Output differ on %q: %q and %q", s, full, out)
		}
		if text != s && !tr.Changed() && !hasSpace(s) {
			t.Fatalf("Text changed %q to %q but reported nothing", s, text)
		}
	})
}

// TestInvisibleTable checks the bitmap against its definition, for every
// code point.
func TestInvisibleTable(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		want := r >= 0xa0 && (unicode.Is(unicode.Cf, r) || r == 0x034f || r == 0x115f || r == 0x1160 || r == 0x3164 || r == 0xffa0 ||
			r >= 0x180b && r <= 0x180f || r >= 0xe0000 && r <= 0xe007f || r >= 0xe0100 && r <= 0xe01ef)
		if got := sanitize.Invisible(r); got != want {
			t.Fatalf("Invisible(%U) = %v, want %v", r, got, want)
		}
	}
}

// hasSpace reports whether s has white space, which Text may tidy
// without counting it.
func hasSpace(s string) bool {
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.Is(unicode.Zs, r) || r == 0x2028 || r == 0x2029 {
			return true
		}
	}
	return false
}
