package engine

import (
	"strings"
	"unicode/utf8"
)

// cleanOutput removes from a server's output what a person reviewing a
// transcript would not see but a model would read, or what a terminal
// would act on: ANSI escape sequences, C0 and C1 control characters
// (keeping tab and newline; a carriage return becomes a newline), and
// invisible format characters (zero-width, bidi embeddings, overrides and
// isolates, the Unicode tags block, interlinear annotations, the byte
// order mark). Invalid UTF-8 becomes U+FFFD. Unlike the metadata
// sanitizer it keeps whitespace as it is: output is often code. It
// returns the text and how many characters or sequences it removed; text
// with nothing to remove is returned as is, without copying.
func cleanOutput(s string) (string, int) {
	i := firstUnclean(s)
	if i == len(s) {
		return s, 0
	}
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[:i])
	removed := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == 0x1b:
			i = skipEscape(s, i)
			removed++
			continue
		case c == '\r':
			if i+1 < len(s) && s[i+1] == '\n' {
				i++ // CRLF: keep the LF
				continue
			}
			b.WriteByte('\n')
			i++
			continue
		case c == '\t' || c == '\n':
			b.WriteByte(c)
			i++
			continue
		case c < 0x20 || c == 0x7f:
			removed++
			i++
			continue
		case c < utf8.RuneSelf:
			b.WriteByte(c)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteRune(utf8.RuneError)
			removed++
		case invisible(r):
			removed++
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String(), removed
}

// firstUnclean returns the index of the first byte cleanOutput would
// change, or len(s).
func firstUnclean(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if (c < 0x20 && c != '\t' && c != '\n') || c == 0x7f {
				return i
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || invisible(r) {
			return i
		}
		i += n
	}
	return len(s)
}

// invisible reports whether r is a C1 control or an invisible format
// character that can hide text from a reader.
func invisible(r rune) bool {
	switch {
	case r >= 0x80 && r <= 0x9f: // C1 controls, CSI among them
		return true
	case r == 0x00ad, r == 0x061c, r == 0x180e, r == 0xfeff:
		return true
	case r >= 0x200b && r <= 0x200f: // zero-width, LRM, RLM
		return true
	case r >= 0x202a && r <= 0x202e: // bidi embeddings and overrides
		return true
	case r >= 0x2060 && r <= 0x206f: // word joiner, invisible operators, isolates
		return true
	case r >= 0xfff9 && r <= 0xfffb: // interlinear annotations
		return true
	case r >= 0xe0000 && r <= 0xe007f: // tags
		return true
	}
	return false
}

// skipEscape returns the index after the escape sequence starting at
// s[i] (an ESC): CSI (ESC [ … final byte), OSC, DCS, SOS, PM and APC
// (ESC ] … up to BEL or ESC \), or a two-character escape.
func skipEscape(s string, i int) int {
	i++ // ESC
	if i >= len(s) {
		return i
	}
	switch s[i] {
	case '[':
		i++
		for i < len(s) {
			c := s[i]
			i++
			if c >= 0x40 && c <= 0x7e {
				return i
			}
			if c < 0x20 || c > 0x7e {
				return i - 1 // malformed: stop before the odd byte
			}
		}
		return i
	case ']', 'P', 'X', '^', '_':
		i++
		for i < len(s) {
			if s[i] == 0x07 {
				return i + 1
			}
			if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\' {
				return i + 2
			}
			i++
		}
		return i
	}
	return i + 1
}
