package jsonwire

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// ObjectMembers calls fn with each member of the JSON object in data,
// which must be valid JSON, in order, and reports whether data is an
// object whose keys have no escapes and are valid UTF-8, and fn
// returned true for each. A key without escapes is its own decoding:
// fn gets the key encoding/json would, and the member's value as it
// is written (no space around it).
func ObjectMembers(data []byte, fn func(key string, val []byte) bool) bool {
	i := SkipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i = SkipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return true
	}
	for i < len(data) {
		end := skipValue(data, i) // the key
		key := data[i+1 : end-1]
		if bytes.IndexByte(key, '\\') >= 0 || !utf8.Valid(key) {
			return false
		}
		i = SkipSpace(data, end)
		i = SkipSpace(data, i+1) // past ':'
		end = skipValue(data, i)
		if !fn(string(key), data[i:end]) {
			return false
		}
		i = SkipSpace(data, end)
		if i >= len(data) || data[i] == '}' {
			return true
		}
		i = SkipSpace(data, i+1) // past ','
	}
	return false
}

// ArrayElements calls fn with each element of the JSON array in data,
// which must be valid JSON, in order, and reports whether data is an
// array and fn returned true for each.
func ArrayElements(data []byte, fn func(val []byte) bool) bool {
	i := SkipSpace(data, 0)
	if i >= len(data) || data[i] != '[' {
		return false
	}
	i = SkipSpace(data, i+1)
	if i < len(data) && data[i] == ']' {
		return true
	}
	for i < len(data) {
		end := skipValue(data, i)
		if !fn(data[i:end]) {
			return false
		}
		i = SkipSpace(data, end)
		if i >= len(data) || data[i] == ']' {
			return true
		}
		i = SkipSpace(data, i+1) // past ','
	}
	return false
}

// IsSpace reports whether c is white space JSON allows between tokens.
func IsSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// SkipSpace returns the index of the first byte at or after i that is
// not JSON white space.
func SkipSpace(data []byte, i int) int {
	for i < len(data) && IsSpace(data[i]) {
		i++
	}
	return i
}

// TrimSpace trims the white space JSON allows around a value.
func TrimSpace(b []byte) []byte {
	for len(b) > 0 && IsSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && IsSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// skipValue returns the index just past the JSON value that starts at
// data[i], in valid JSON.
func skipValue(data []byte, i int) int {
	depth := 0
	for i < len(data) {
		switch c := data[i]; {
		case c == '"':
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
			i++
			if depth == 0 {
				return i
			}
		case c == '{' || c == '[':
			depth++
			i++
		case c == '}' || c == ']':
			if depth == 0 {
				return i // the end of a scalar
			}
			depth--
			i++
			if depth == 0 {
				return i
			}
		case depth == 0 && (c == ',' || c == ':' || IsSpace(c)):
			return i
		default:
			i++
		}
	}
	return i
}

// PlainString returns the JSON string val without its quotes when it
// holds no escape and is valid UTF-8: then it is its own decoding. It
// reports false for anything else, a value that is not a string
// included.
func PlainString(val []byte) (string, bool) {
	if len(val) < 2 || val[0] != '"' {
		return "", false
	}
	s := val[1 : len(val)-1]
	if bytes.IndexByte(s, '\\') >= 0 || !utf8.Valid(s) {
		return "", false
	}
	return string(s), true
}

// Unquote decodes the JSON string val, a valid one, when it is valid
// UTF-8 and its escapes are only the one-letter ones (\" \\ \/ \b \f \n
// \r \t): then the result is what encoding/json decodes. It reports
// false for anything else (a \u escape, bytes that are not UTF-8), which
// the caller leaves to encoding/json.
func Unquote(val []byte) (string, bool) {
	if s, ok := PlainString(val); ok {
		return s, true
	}
	// Not plain: not a string, not UTF-8, or escaped.
	if len(val) < 2 || val[0] != '"' || !utf8.Valid(val) {
		return "", false
	}
	s := val[1 : len(val)-1]
	first := bytes.IndexByte(s, '\\')
	var b strings.Builder
	b.Grow(len(s))
	b.Write(s[:first])
	for i := first; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case '"', '\\', '/':
			b.WriteByte(s[i])
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		default:
			return "", false
		}
	}
	return b.String(), true
}

// FoldsTo reports whether key is one of names in another case:
// encoding/json would take it for that name. A decoder that reads only
// exact names declines such a key.
func FoldsTo(key string, names ...string) bool {
	for _, n := range names {
		if key != n && strings.EqualFold(key, n) {
			return true
		}
	}
	return false
}
