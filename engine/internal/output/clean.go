package output

import (
	"encoding/json"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/voltmcp/voltmcp/sanitize"
)

// Clean removes from a server's output what a person reviewing a
// transcript would not see but a model would read, or what a terminal
// would act on: it is [sanitize.Output], the list every surface shares,
// which keeps the output's white space as it is (output is often code).
// It returns the text and how many characters or sequences it removed;
// text with nothing to remove is returned as is, without copying.
func Clean(s string) (string, int) {
	out, r := sanitize.Output(s)
	return out, r.Removed()
}

// CleanText cleans a text field of a server's that reaches a person or a
// model outside its metadata (an error message, a stderr tail, a
// serverInfo field) and clips it to maxChars characters (0 for no limit).
func CleanText(s string, maxChars int) string {
	out, _ := sanitize.Text(s, maxChars)
	return out
}

// StructuredClean reports whether a result's structured content holds
// nothing the sanitizer would remove: no escape, control, invisible
// character or invalid UTF-8, whether written as is or as a JSON \u
// escape, and no variation selector but one directly after a visible
// character. Structured content is passed to the model as the server
// sent it, so content that is not clean is left out (the text content,
// cleaned, stays). Raw JSON (the lean path's) is scanned as it is, without
// copying; other values are encoded first.
func StructuredClean(v any) bool {
	var b []byte
	switch x := v.(type) {
	case nil:
		return true
	case json.RawMessage:
		b = x
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			return false
		}
	}
	prevVisible := false
	ok := func(r rune) bool {
		switch {
		case r < 0x20 && r != '\t' && r != '\n' && r != '\r', r == 0x7f, r >= 0x80 && r < 0xa0, sanitize.Invisible(r):
			return false
		case sanitize.IsVariationSelector(r):
			if !prevVisible {
				return false
			}
			prevVisible = false
		default:
			prevVisible = r > ' ' && r != '"' && r != 0xa0
		}
		return true
	}
	for i := 0; i < len(b); {
		c := b[i]
		if c == '\\' && i+1 < len(b) {
			if b[i+1] != 'u' {
				prevVisible = true // an escaped quote, backslash, \n…: \n and \t are fine
				if b[i+1] == 'n' || b[i+1] == 't' || b[i+1] == 'r' {
					prevVisible = false
				}
				i += 2
				continue
			}
			r, n := jsonEscape(b[i:])
			if n == 0 || !ok(r) {
				return false
			}
			i += n
			continue
		}
		if c < utf8.RuneSelf {
			if !ok(rune(c)) {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 || !ok(r) {
			return false
		}
		i += n
	}
	return true
}

// jsonEscape decodes the \uXXXX escape (or surrogate pair of them) at
// the start of b, returning the rune and its length; 0 when malformed.
func jsonEscape(b []byte) (rune, int) {
	hex := func(b []byte) (rune, bool) {
		if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
			return 0, false
		}
		var r rune
		for _, c := range b[2:6] {
			switch {
			case '0' <= c && c <= '9':
				r = r<<4 | rune(c-'0')
			case 'a' <= c && c <= 'f':
				r = r<<4 | rune(c-'a'+10)
			case 'A' <= c && c <= 'F':
				r = r<<4 | rune(c-'A'+10)
			default:
				return 0, false
			}
		}
		return r, true
	}
	r, ok := hex(b)
	if !ok {
		return 0, 0
	}
	if utf16.IsSurrogate(r) {
		if r2, ok := hex(b[6:]); ok {
			if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
				return d, 12
			}
		}
		return utf8.RuneError, 0 // a lone surrogate decodes to U+FFFD: not what the server wrote
	}
	return r, 6
}
