package jsonwire

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// AppendQuoted appends s as a JSON string, byte for byte as json.Marshal
// encodes a string: <, > and & and control characters as \u00XX (but
// \b, \f, \n, \r and \t), bytes that are not UTF-8 as \ufffd, and U+2028
// and U+2029 escaped. It is the quoting of everything the engine writes
// where encoding/json would (a call's answer, a tools/call's params).
func AppendQuoted(b []byte, s string) []byte { return appendString(b, s, true) }

// AppendQuotedNoHTML is [AppendQuoted] without the escaping of <, > and
// &: byte for byte what a json.Encoder with SetEscapeHTML(false) writes
// for s. It is the quoting of a value the engine keeps and measures
// rather than hands to encoding/json, such as a bounded schema
// (engine/internal/bound): there the three characters stay as written,
// so a schema's size, which its bound is checked against, is that of
// what the server sent, and an encoder that writes the value out again
// escapes them anyway.
func AppendQuotedNoHTML(b []byte, s string) []byte { return appendString(b, s, false) }

// appendString is encoding/json's string encoding; html escapes <, >
// and &.
func appendString(b []byte, s string, html bool) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && (!html || c != '<' && c != '>' && c != '&') {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// CompactRaw reports whether json.Marshal copies raw unchanged when it
// encodes it as a json.RawMessage: raw is valid JSON with no space
// outside its strings (which it would remove) and, inside them, none of
// <, > and &, U+2028 and U+2029 (which it would escape). Raw JSON that
// is compact in this sense may be written by hand as it is.
func CompactRaw(raw []byte) bool {
	if len(raw) == 0 || !json.Valid(raw) {
		return false
	}
	in := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if in {
			switch c {
			case '\\':
				i++ // the escaped byte, or the u of \uXXXX
			case '"':
				in = false
			case '<', '>', '&':
				return false
			case 0xE2:
				if i+2 < len(raw) && raw[i+1] == 0x80 && raw[i+2]&^1 == 0xA8 {
					return false
				}
			}
			continue
		}
		switch c {
		case '"':
			in = true
		case ' ', '\t', '\n', '\r':
			return false
		}
	}
	return true
}

// RoundTripString is s as a JSON round trip (json.Marshal, then
// json.Unmarshal) gives it back: every byte that is not valid UTF-8
// replaced by U+FFFD, the rest as it is. s itself is returned when it is
// valid UTF-8.
func RoundTripString(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// IsNumber reports whether s is a JSON number: the test json.Marshal
// applies to a json.Number it encodes (it refuses one that fails it,
// and writes an empty one as 0).
func IsNumber(s string) bool {
	s = strings.TrimPrefix(s, "-")
	switch {
	case s == "":
		return false
	case s[0] == '0':
		s = s[1:]
	case '1' <= s[0] && s[0] <= '9':
		s = strings.TrimLeft(s[1:], "0123456789")
	default:
		return false
	}
	if len(s) >= 2 && s[0] == '.' && '0' <= s[1] && s[1] <= '9' {
		s = strings.TrimLeft(s[2:], "0123456789")
	}
	if len(s) >= 2 && (s[0] == 'e' || s[0] == 'E') {
		s = s[1:]
		if s[0] == '+' || s[0] == '-' {
			s = s[1:]
			if s == "" {
				return false
			}
		}
		s = strings.TrimLeft(s, "0123456789")
	}
	return s == ""
}
