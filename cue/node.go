package cue

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// jsonKind is the JSON type of a node.
type jsonKind uint8

// The JSON kinds a node can hold.
const (
	kindNull jsonKind = iota
	kindBool
	kindNumber
	kindString
	kindObject
	kindArray
)

// String returns the JSON name of the kind, as used in diagnostics.
func (k jsonKind) String() string {
	switch k {
	case kindNull:
		return "null"
	case kindBool:
		return "boolean"
	case kindNumber:
		return "number"
	case kindString:
		return "string"
	case kindObject:
		return "object"
	case kindArray:
		return "array"
	}
	return "unknown"
}

// node is one JSON value read from a config file, with the place it came
// from. The loader keeps the tree it parsed so that every diagnostic and
// every merged value can name its file, line, column and field path.
type node struct {
	kind   jsonKind
	str    string // kindString: the decoded string; kindNumber: the literal
	bool   bool
	fields []field // kindObject, in file order
	items  []*node // kindArray

	src  *source // the file the value came from; nil for synthesized values
	off  int     // byte offset of the value's first byte
	path string  // the field path in its own file, e.g. servers.github.args[1]
	bad  bool    // failed validation: left out of the merge
	errs bool    // something inside failed validation and was pruned
}

// field is one member of a JSON object.
type field struct {
	key    string
	keyOff int
	value  *node
}

// get returns the value of the named field, or nil.
func (n *node) get(key string) *node {
	if n == nil || n.kind != kindObject {
		return nil
	}
	for i := range n.fields {
		if n.fields[i].key == key {
			return n.fields[i].value
		}
	}
	return nil
}

// fieldIndex returns the index of the named field, or -1.
func (n *node) fieldIndex(key string) int {
	for i := range n.fields {
		if n.fields[i].key == key {
			return i
		}
	}
	return -1
}

// set replaces the value of the named field or appends it.
func (n *node) set(key string, v *node) {
	if i := n.fieldIndex(key); i >= 0 {
		n.fields[i].value = v
		return
	}
	n.fields = append(n.fields, field{key: key, keyOff: -1, value: v})
}

// del removes the named field if present.
func (n *node) del(key string) {
	if i := n.fieldIndex(key); i >= 0 {
		n.fields = append(n.fields[:i], n.fields[i+1:]...)
	}
}

// clone returns a deep copy of n that shares sources.
func (n *node) clone() *node {
	if n == nil {
		return nil
	}
	c := *n
	if n.fields != nil {
		c.fields = make([]field, len(n.fields))
		for i, f := range n.fields {
			c.fields[i] = field{key: f.key, keyOff: f.keyOff, value: f.value.clone()}
		}
	}
	if n.items != nil {
		c.items = make([]*node, len(n.items))
		for i, it := range n.items {
			c.items[i] = it.clone()
		}
	}
	return &c
}

// strs returns the string items of an array node.
func (n *node) strs() []string {
	if n == nil || n.kind != kindArray {
		return nil
	}
	out := make([]string, 0, len(n.items))
	for _, it := range n.items {
		if it.kind == kindString {
			out = append(out, it.str)
		}
	}
	return out
}

// pos reports the file position of the value.
func (n *node) pos() Position {
	if n == nil || n.src == nil {
		return Position{}
	}
	return n.src.position(n.off)
}

// keyPos reports the position of a field's key, which is where a reader
// looks for the field.
func (n *node) keyPos(key string) Position {
	if n == nil || n.src == nil {
		return Position{}
	}
	if i := n.fieldIndex(key); i >= 0 && n.fields[i].keyOff >= 0 {
		return n.src.position(n.fields[i].keyOff)
	}
	return n.src.position(n.off)
}

// prune removes fields whose values failed validation, and arrays that
// hold such a value, so the merge sees only valid data. It reports
// whether anything was removed.
func (n *node) prune() bool {
	removed := false
	switch n.kind {
	case kindObject:
		kept := n.fields[:0]
		for _, f := range n.fields {
			if f.value.bad {
				removed = true
				continue
			}
			if f.value.prune() {
				removed = true
				if f.value.bad {
					continue
				}
			}
			kept = append(kept, f)
		}
		n.fields = kept
		n.errs = n.errs || removed
	case kindArray:
		for _, it := range n.items {
			if it.bad || it.prune() {
				n.bad = true
				return true
			}
		}
	}
	return removed
}

// appendJSON writes n as compact JSON.
func (n *node) appendJSON(b []byte) []byte { return n.appendJSONSep(b, ":", ",") }

// appendJSONSep is appendJSON with colon after each key and comma
// between items.
func (n *node) appendJSONSep(b []byte, colon, comma string) []byte {
	switch n.kind {
	case kindNull:
		return append(b, "null"...)
	case kindBool:
		return strconv.AppendBool(b, n.bool)
	case kindNumber:
		return append(b, n.str...)
	case kindString:
		return appendQuoted(b, n.str)
	case kindArray:
		b = append(b, '[')
		for i, it := range n.items {
			if i > 0 {
				b = append(b, comma...)
			}
			b = it.appendJSONSep(b, colon, comma)
		}
		return append(b, ']')
	default:
		b = append(b, '{')
		for i, f := range n.fields {
			if i > 0 {
				b = append(b, comma...)
			}
			b = appendQuoted(b, f.key)
			b = append(b, colon...)
			b = f.value.appendJSONSep(b, colon, comma)
		}
		return append(b, '}')
	}
}

// layout is how a JSON file's text is laid out, which a rewrite keeps:
// a user's or another client's file changes only where the edit does.
type layout struct {
	indent  string // the white space of one level of nesting
	oneLine bool   // the whole value on one line, without indentation
	spaced  bool   // with oneLine: a space after each colon and comma
	crlf    bool   // lines end in CR LF
	final   bool   // the text ends with a line end
}

// layoutOf reads the layout of data, a file's JSON text; nil (a file to
// create) lays out with two spaces and LF line ends, ending with one. The
// indent is the leading white space of the first line that has any:
// the first line inside the top-level value is one level deep.
func layoutOf(data []byte) layout {
	if data == nil {
		return layout{indent: "  ", final: true}
	}
	body := bytes.TrimRight(data, " \t\r\n")
	l := layout{final: bytes.IndexByte(data[len(body):], '\n') >= 0}
	nl := bytes.IndexByte(body, '\n')
	if nl < 0 {
		l.oneLine = true
		l.spaced = bytes.Contains(body, []byte(`": `))
		l.crlf = bytes.Contains(data[len(body):], []byte("\r\n"))
		return l
	}
	l.crlf = nl > 0 && body[nl-1] == '\r'
	for line := range bytes.SplitSeq(body[nl+1:], []byte("\n")) {
		text := bytes.TrimLeft(line, " \t")
		if len(bytes.TrimSpace(text)) == 0 {
			continue
		}
		l.indent = string(line[:len(line)-len(text)])
		break
	}
	return l
}

// render writes n as JSON laid out as l says, keeping field order.
func (n *node) render(l layout) []byte {
	var out bytes.Buffer
	if l.oneLine {
		colon, comma := ":", ","
		if l.spaced {
			colon, comma = ": ", ", "
		}
		out.Write(n.appendJSONSep(nil, colon, comma))
	} else if err := json.Indent(&out, n.appendJSON(nil), "", l.indent); err != nil {
		// appendJSON always produces valid JSON; reaching here is a bug.
		panic("cue: internal error: invalid JSON from node: " + err.Error())
	}
	if l.final {
		out.WriteByte('\n')
	}
	if !l.crlf {
		return out.Bytes()
	}
	// A JSON string holds no raw line end, so every LF ends a line.
	return bytes.ReplaceAll(out.Bytes(), []byte("\n"), []byte("\r\n"))
}

func appendQuoted(b []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // encoding a string cannot fail
	return append(b, bytes.TrimRight(buf.Bytes(), "\n")...)
}

// JoinPath extends a field path with an object key, in the form that
// Diagnostic.Path and Config.Sources use: keys that are not plain
// identifiers are quoted, as in servers.github.env["MY.VAR"].
func JoinPath(parent, key string) string { return childPath(parent, key) }

// childPath is JoinPath.
func childPath(parent, key string) string {
	if isPlainKey(key) {
		if parent == "" {
			return key
		}
		return parent + "." + key
	}
	return parent + "[" + strconv.Quote(key) + "]"
}

// indexPath extends a field path with an array index.
func indexPath(parent string, i int) string {
	return parent + "[" + strconv.Itoa(i) + "]"
}

func isPlainKey(key string) bool {
	if key == "" {
		return false
	}
	for i, r := range key {
		switch {
		case r == '_' || r == '-' || r == '$':
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return !strings.HasPrefix(key, "-")
}
