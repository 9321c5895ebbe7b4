//go:build wasip1

package main

import (
	"errors"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// kind is the kind of a JSON value.
type kind uint8

const (
	kNull kind = iota
	kBool
	kNum
	kStr
	kArr
	kObj
)

// value is a parsed JSON value. Strings hold their decoded text; numbers
// hold their literal.
type value struct {
	k    kind
	b    bool
	s    string
	arr  []*value
	keys []string
	vals []*value
}

// get returns the member key of an object, or nil.
func (v *value) get(key string) *value {
	if v == nil || v.k != kObj {
		return nil
	}
	for i, k := range v.keys {
		if k == key {
			return v.vals[i]
		}
	}
	return nil
}

// str returns a string value's text, or "".
func (v *value) str() string {
	if v == nil || v.k != kStr {
		return ""
	}
	return v.s
}

const maxDepth = 256

var errSyntax = errors.New("invalid JSON")

// parser is a small recursive-descent JSON parser.
type parser struct {
	b   []byte
	i   int
	err error
}

func parse(b []byte) (*value, error) {
	p := &parser{b: b}
	v := p.value(0)
	p.ws()
	if p.err == nil && p.i != len(p.b) {
		p.err = errSyntax
	}
	return v, p.err
}

func (p *parser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) fail() *value {
	if p.err == nil {
		p.err = errSyntax
	}
	return nil
}

func (p *parser) lit(s string) bool {
	if len(p.b)-p.i >= len(s) && string(p.b[p.i:p.i+len(s)]) == s {
		p.i += len(s)
		return true
	}
	return false
}

func (p *parser) value(depth int) *value {
	if depth > maxDepth {
		return p.fail()
	}
	p.ws()
	if p.i >= len(p.b) {
		return p.fail()
	}
	switch c := p.b[p.i]; {
	case c == '{':
		p.i++
		v := &value{k: kObj}
		p.ws()
		if p.i < len(p.b) && p.b[p.i] == '}' {
			p.i++
			return v
		}
		for p.err == nil {
			p.ws()
			if p.i >= len(p.b) || p.b[p.i] != '"' {
				return p.fail()
			}
			k := p.string()
			p.ws()
			if p.i >= len(p.b) || p.b[p.i] != ':' {
				return p.fail()
			}
			p.i++
			v.keys = append(v.keys, k)
			v.vals = append(v.vals, p.value(depth+1))
			p.ws()
			if p.i >= len(p.b) {
				return p.fail()
			}
			if p.b[p.i] == '}' {
				p.i++
				return v
			}
			if p.b[p.i] != ',' {
				return p.fail()
			}
			p.i++
		}
		return nil
	case c == '[':
		p.i++
		v := &value{k: kArr}
		p.ws()
		if p.i < len(p.b) && p.b[p.i] == ']' {
			p.i++
			return v
		}
		for p.err == nil {
			v.arr = append(v.arr, p.value(depth+1))
			p.ws()
			if p.i >= len(p.b) {
				return p.fail()
			}
			if p.b[p.i] == ']' {
				p.i++
				return v
			}
			if p.b[p.i] != ',' {
				return p.fail()
			}
			p.i++
		}
		return nil
	case c == '"':
		return &value{k: kStr, s: p.string()}
	case c == 't' && p.lit("true"):
		return &value{k: kBool, b: true}
	case c == 'f' && p.lit("false"):
		return &value{k: kBool}
	case c == 'n' && p.lit("null"):
		return &value{k: kNull}
	case c == '-' || (c >= '0' && c <= '9'):
		start := p.i
		p.i++
		for p.i < len(p.b) {
			c := p.b[p.i]
			if (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-' {
				p.i++
				continue
			}
			break
		}
		return &value{k: kNum, s: string(p.b[start:p.i])}
	}
	return p.fail()
}

// string decodes a string literal; p.b[p.i] is its opening quote.
func (p *parser) string() string {
	p.i++
	start := p.i
	for p.i < len(p.b) && p.b[p.i] != '"' && p.b[p.i] != '\\' && p.b[p.i] >= 0x20 {
		p.i++
	}
	if p.i < len(p.b) && p.b[p.i] == '"' {
		s := string(p.b[start:p.i])
		p.i++
		return s
	}
	buf := append([]byte(nil), p.b[start:p.i]...)
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			return string(buf)
		case c < 0x20:
			p.fail()
			return ""
		case c != '\\':
			buf = append(buf, c)
			p.i++
			continue
		}
		if p.i+1 >= len(p.b) {
			break
		}
		e := p.b[p.i+1]
		p.i += 2
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r := p.hex4()
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if p.i+1 < len(p.b) && p.b[p.i] == '\\' && p.b[p.i+1] == 'u' {
					p.i += 2
					r2 = p.hex4()
				}
				r = utf16.DecodeRune(r, r2)
			}
			buf = utf8.AppendRune(buf, r)
		default:
			p.fail()
			return ""
		}
	}
	p.fail()
	return ""
}

func (p *parser) hex4() rune {
	if p.i+4 > len(p.b) {
		p.fail()
		return utf8.RuneError
	}
	n, err := strconv.ParseUint(string(p.b[p.i:p.i+4]), 16, 32)
	if err != nil {
		p.fail()
		return utf8.RuneError
	}
	p.i += 4
	return rune(n)
}

// appendString appends s as a JSON string literal. Invalid UTF-8 becomes
// U+FFFD.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r != utf8.RuneError || size != 1 {
				i += size
				continue
			}
			b = append(b, s[start:i]...)
			b = append(b, "\ufffd"...)
			i++
			start = i
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\t':
			b = append(b, '\\', 't')
		case '\r':
			b = append(b, '\\', 'r')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		i++
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendValue appends v as compact JSON.
func appendValue(b []byte, v *value) []byte {
	switch v.k {
	case kNull:
		return append(b, "null"...)
	case kBool:
		if v.b {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case kNum:
		return append(b, v.s...)
	case kStr:
		return appendString(b, v.s)
	case kArr:
		b = append(b, '[')
		for i, e := range v.arr {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendValue(b, e)
		}
		return append(b, ']')
	}
	b = append(b, '{')
	for i, k := range v.keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		b = appendValue(b, v.vals[i])
	}
	return append(b, '}')
}
