package cue

import (
	"encoding/json"
	"fmt"
	"sort"
	"unicode/utf8"
)

// maxDepth bounds the nesting of a config file. Real configs are a handful
// of levels deep; the bound keeps a hostile file from exhausting the stack.
const maxDepth = 64

// Bounds on what one config file may hold, checked while it is parsed,
// before any of it reaches CUE: validating costs memory for every server
// and every value, so these keep a file under MaxFileSize from costing
// more than a few tens of megabytes, whatever its shape. A real config
// has a few dozen servers and a few thousand values.
const (
	// MaxServers is the most servers one file may define (in servers or
	// mcpServers).
	MaxServers = 1000
	// MaxValues is the most JSON values (objects, arrays, strings,
	// numbers, booleans and nulls, at any depth) one file may hold.
	MaxValues = 10000
	// maxPathBytes bounds the total length of the field paths of a
	// file's values (servers.x.args[0], ...): each value keeps its own,
	// so long keys nested deep, or long keys over many values, would
	// otherwise cost far more memory than the file's bytes.
	maxPathBytes = 4 << 20
)

// Position is a place in a config file. Line and Col are 1-based; Col
// counts bytes, as compilers do. Offset is the 0-based byte offset.
type Position struct {
	File   string `json:"file,omitempty"`
	Line   int    `json:"line,omitempty"`
	Col    int    `json:"col,omitempty"`
	Offset int    `json:"-"`
}

// source is one file the loader read.
type source struct {
	name  string // as shown to users
	layer Layer
	data  []byte
	lines []int // offsets of line starts
}

func newSource(name string, layer Layer, data []byte) *source {
	s := &source{name: name, layer: layer, data: data, lines: []int{0}}
	for i, c := range data {
		if c == '\n' {
			s.lines = append(s.lines, i+1)
		}
	}
	return s
}

func (s *source) position(off int) Position {
	if s == nil {
		return Position{}
	}
	if off < 0 {
		off = 0
	}
	if off > len(s.data) {
		off = len(s.data)
	}
	line := sort.Search(len(s.lines), func(i int) bool { return s.lines[i] > off }) - 1
	return Position{File: s.name, Line: line + 1, Col: off - s.lines[line] + 1, Offset: off}
}

// syntaxError is a JSON syntax error at a byte offset.
type syntaxError struct {
	off int
	msg string
}

func (e *syntaxError) Error() string { return fmt.Sprintf("offset %d: %s", e.off, e.msg) }

// limitError is a file over one of the bounds above, at the byte offset
// of the first value past it.
type limitError struct {
	off  int
	msg  string
	hint string
}

func (e *limitError) Error() string { return fmt.Sprintf("offset %d: %s", e.off, e.msg) }

// duplicateKey records a key that appears twice in one object. JSON
// parsers disagree on which copy wins, so a config that relies on either
// is ambiguous and reported.
type duplicateKey struct {
	path       string
	first, dup int
}

// parser reads JSON into a node tree with offsets. It is strict RFC 8259:
// no comments, no trailing commas, UTF-8 only.
type parser struct {
	src       *source
	data      []byte
	i         int
	dups      []duplicateKey
	values    int // values parsed so far
	pathBytes int // total length of their paths
	maxValues int // the bound on values: MaxValues, or maxClientValues
}

// parseJSON parses one JSON document. On a syntax error it returns the
// error with the byte offset of the offending byte.
func parseJSON(src *source) (*node, []duplicateKey, error) {
	return parseJSONMax(src, MaxValues)
}

// parseJSONMax is parseJSON with another bound on the number of values,
// for the files of other MCP clients (see maxClientValues).
func parseJSONMax(src *source, maxValues int) (*node, []duplicateKey, error) {
	p := &parser{src: src, data: src.data, maxValues: maxValues}
	if !utf8.Valid(p.data) {
		off := 0
		for off < len(p.data) {
			r, size := utf8.DecodeRune(p.data[off:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			off += size
		}
		return nil, nil, &syntaxError{off, "invalid UTF-8"}
	}
	// A byte-order mark is tolerated: some editors on Windows write one.
	if len(p.data) >= 3 && p.data[0] == 0xEF && p.data[1] == 0xBB && p.data[2] == 0xBF {
		p.i = 3
	}
	p.ws()
	n, err := p.value("", 0)
	if err != nil {
		return nil, nil, err
	}
	p.ws()
	if p.i < len(p.data) {
		return nil, nil, p.errf("unexpected %s after the top-level value", p.describe())
	}
	return n, p.dups, nil
}

func (p *parser) errf(format string, args ...any) error {
	return &syntaxError{p.i, fmt.Sprintf(format, args...)}
}

func (p *parser) describe() string {
	if p.i >= len(p.data) {
		return "end of file"
	}
	r, _ := utf8.DecodeRune(p.data[p.i:])
	return fmt.Sprintf("character %q", r)
}

func (p *parser) ws() {
	for p.i < len(p.data) {
		switch p.data[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) value(path string, depth int) (*node, error) {
	if depth > maxDepth {
		return nil, p.errf("nesting deeper than %d levels", maxDepth)
	}
	p.values++
	p.pathBytes += len(path)
	switch {
	case p.values > p.maxValues:
		return nil, &limitError{p.i, fmt.Sprintf("the file holds more than %d values; the limit is %d", p.maxValues, p.maxValues),
			"a real config holds a few thousand; split it, or find what bloated it"}
	case p.pathBytes > maxPathBytes:
		return nil, &limitError{p.i, fmt.Sprintf("the field paths of the file's values add up to more than %d bytes; the limit is %d", maxPathBytes, maxPathBytes),
			"shorten the keys, or nest less deeply"}
	}
	if p.i >= len(p.data) {
		return nil, p.errf("unexpected end of file, want a value")
	}
	n := &node{src: p.src, off: p.i, path: path}
	switch c := p.data[p.i]; {
	case c == '{':
		return n, p.object(n, depth)
	case c == '[':
		return n, p.array(n, depth)
	case c == '"':
		s, err := p.string()
		n.kind, n.str = kindString, s
		return n, err
	case c == '-' || (c >= '0' && c <= '9'):
		n.kind = kindNumber
		n.str, _ = p.number()
		if n.str == "" {
			return nil, p.errf("invalid number")
		}
		return n, nil
	case c == 't':
		n.kind, n.bool = kindBool, true
		return n, p.literal("true")
	case c == 'f':
		n.kind = kindBool
		return n, p.literal("false")
	case c == 'n':
		n.kind = kindNull
		return n, p.literal("null")
	default:
		return nil, p.errf("unexpected %s, want a value", p.describe())
	}
}

func (p *parser) literal(word string) error {
	if len(p.data)-p.i < len(word) || string(p.data[p.i:p.i+len(word)]) != word {
		return p.errf("unexpected %s, want a value", p.describe())
	}
	p.i += len(word)
	return nil
}

func (p *parser) object(n *node, depth int) error {
	n.kind = kindObject
	n.fields = []field{}
	p.i++ // {
	p.ws()
	if p.i < len(p.data) && p.data[p.i] == '}' {
		p.i++
		return nil
	}
	seen := map[string]int{}
	// The servers map of either dialect, at the top level.
	servers := depth == 1 && (n.path == "servers" || n.path == "mcpServers")
	for {
		p.ws()
		if p.i >= len(p.data) || p.data[p.i] != '"' {
			if p.i < len(p.data) && p.data[p.i] == '}' {
				return p.errf("trailing comma before '}'")
			}
			return p.errf("unexpected %s, want a string key", p.describe())
		}
		keyOff := p.i
		key, err := p.string()
		if err != nil {
			return err
		}
		if _, dup := seen[key]; servers && !dup && len(seen) == MaxServers {
			return &limitError{keyOff, fmt.Sprintf("%s defines more than %d servers; the limit is %d a file", n.path, MaxServers, MaxServers),
				"split the servers across files, or find what generated them"}
		}
		p.ws()
		if p.i >= len(p.data) || p.data[p.i] != ':' {
			return p.errf("unexpected %s, want ':' after key", p.describe())
		}
		p.i++
		p.ws()
		v, err := p.value(childPath(n.path, key), depth+1)
		if err != nil {
			return err
		}
		if first, ok := seen[key]; ok {
			p.dups = append(p.dups, duplicateKey{path: childPath(n.path, key), first: first, dup: keyOff})
			n.fields[n.fieldIndex(key)] = field{key: key, keyOff: keyOff, value: v}
		} else {
			seen[key] = keyOff
			n.fields = append(n.fields, field{key: key, keyOff: keyOff, value: v})
		}
		p.ws()
		if p.i >= len(p.data) {
			return p.errf("unexpected end of file, want ',' or '}'")
		}
		switch p.data[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return nil
		default:
			return p.errf("unexpected %s, want ',' or '}'", p.describe())
		}
	}
}

func (p *parser) array(n *node, depth int) error {
	n.kind = kindArray
	n.items = []*node{}
	p.i++ // [
	p.ws()
	if p.i < len(p.data) && p.data[p.i] == ']' {
		p.i++
		return nil
	}
	for {
		p.ws()
		if p.i < len(p.data) && p.data[p.i] == ']' {
			return p.errf("trailing comma before ']'")
		}
		v, err := p.value(indexPath(n.path, len(n.items)), depth+1)
		if err != nil {
			return err
		}
		n.items = append(n.items, v)
		p.ws()
		if p.i >= len(p.data) {
			return p.errf("unexpected end of file, want ',' or ']'")
		}
		switch p.data[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return nil
		default:
			return p.errf("unexpected %s, want ',' or ']'", p.describe())
		}
	}
}

// string reads a JSON string starting at the opening quote.
func (p *parser) string() (string, error) {
	start := p.i
	p.i++
	escaped := false
	for p.i < len(p.data) {
		c := p.data[p.i]
		switch {
		case c == '"':
			p.i++
			raw := p.data[start:p.i]
			if !escaped {
				return string(raw[1 : len(raw)-1]), nil
			}
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return "", &syntaxError{start, "invalid string escape"}
			}
			return s, nil
		case c == '\\':
			escaped = true
			p.i++
			if p.i >= len(p.data) {
				return "", p.errf("unexpected end of file in string")
			}
			switch p.data[p.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.i++
			case 'u':
				p.i++
				for k := 0; k < 4; k++ {
					if p.i >= len(p.data) || !isHex(p.data[p.i]) {
						return "", p.errf("invalid \\u escape in string")
					}
					p.i++
				}
			default:
				return "", p.errf("invalid escape '\\%c' in string", p.data[p.i])
			}
		case c < 0x20:
			return "", p.errf("control character %#02x in string", c)
		default:
			p.i++
		}
	}
	return "", &syntaxError{start, "unterminated string"}
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// number reads a JSON number and returns its literal text, or "" when the
// text at the cursor is not a valid number.
func (p *parser) number() (string, bool) {
	start := p.i
	digits := func() int {
		n := 0
		for p.i < len(p.data) && p.data[p.i] >= '0' && p.data[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.data[p.i] == '-' {
		p.i++
	}
	if p.i < len(p.data) && p.data[p.i] == '0' {
		p.i++
	} else if digits() == 0 {
		return "", false
	}
	if p.i < len(p.data) && p.data[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return "", false
		}
	}
	if p.i < len(p.data) && (p.data[p.i] == 'e' || p.data[p.i] == 'E') {
		p.i++
		if p.i < len(p.data) && (p.data[p.i] == '+' || p.data[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return "", false
		}
	}
	return string(p.data[start:p.i]), true
}
