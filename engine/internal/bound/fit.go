package bound

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/voltmcp/voltmcp/engine/internal/jsonwire"
)

// Fitted says what [FitSchema] did to a schema.
type Fitted struct {
	// Bytes is the size of the schema it was given.
	Bytes int
	// Levels is how many levels of subschemas were kept whole, the root
	// schema being level 1, when deeper ones were summarized; 0 when
	// nothing was cut this way.
	Levels int
	// Members is how many members of the root schema (a property of its
	// "properties" counting as one) were left out because even the root
	// alone did not fit; 0 when none was.
	Members int
}

// Cut reports whether the schema was changed.
func (f Fitted) Cut() bool { return f.Levels > 0 || f.Members > 0 }

// minFit is the smallest bound FitSchema honours: an empty object.
const minFit = len("{}")

// FitSchema returns schema within max bytes of compact JSON, always a
// JSON object, and what it cut. A schema that fits is returned as it is.
// A larger one keeps its shallowest levels of subschemas whole, as many
// as fit, and each subschema below them becomes a summary,
//
//	{"type":"string","description":"… cut: 1234 bytes<note>"}
//
// (its type kept when it has a short one), unless the summary would be
// no smaller. A subschema is a value of "properties", "$defs",
// "items", "anyOf" and the other keywords that hold schemas; the other
// keywords of a schema kept ("required", "enum", "default", ...) stay as
// they are. When even the root with every subschema summarized is too
// large, the root keeps its members in order, and the properties of its
// "properties" in order, while they fit, and says in "$comment" how much
// was cut. A schema that is not a JSON object, or not valid JSON, becomes
// such a summary. A max below 2 is taken as 2: the result is never
// larger, and always valid JSON.
//
// The schema is read once into a tree; the tree is walked recursively,
// so schema should be one that [Schema] bounded in depth.
func FitSchema(schema json.RawMessage, max int, note string) (json.RawMessage, Fitted) {
	max = maxInt(max, minFit)
	f := Fitted{Bytes: len(schema)}
	if len(schema) <= max && json.Valid(schema) && len(bytes.TrimSpace(schema)) > 0 && bytes.TrimSpace(schema)[0] == '{' {
		return schema, f
	}
	root, err := parseTree(schema)
	if err != nil || root.kind != '{' {
		f.Members = 1
		return summaryWithin(nil, len(schema), note, max), f
	}
	if root.size <= max {
		return root.render(nil, 1, 0, note), f // a compact form of it fits
	}
	// The most levels that fit: a level where they fit and one more
	// does not, found by bisection (keeping all of them does not fit).
	if lo, hi := 1, root.levels(1)+1; root.sized(1, lo, note) <= max {
		for hi-lo > 1 {
			if mid := (lo + hi) / 2; root.sized(1, mid, note) <= max {
				lo = mid
			} else {
				hi = mid
			}
		}
		f.Levels = lo
		return root.render(nil, 1, lo, note), f
	}
	out, left := root.greedy(max, note)
	f.Levels, f.Members = 1, left
	return out, f
}

// maxInt is the larger of a and b.
func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// tree is one JSON value of a schema read by parseTree, with its compact
// size.
type tree struct {
	kind byte   // '{', '[', or 0 for a scalar
	raw  []byte // a scalar's compact JSON
	keys [][]byte
	vals []*tree
	size int // bytes of its compact JSON
}

// parseTree reads one JSON value into a tree, without recursion.
func parseTree(raw []byte) (*tree, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var stack []*tree
	var root *tree
	var key []byte
	wantKey := false
	add := func(t *tree) {
		if len(stack) == 0 {
			root = t
			return
		}
		top := stack[len(stack)-1]
		if top.kind == '{' {
			top.keys = append(top.keys, key)
		}
		top.vals = append(top.vals, t)
	}
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if root != nil && len(stack) == 0 {
			return nil, errors.New("more than one value")
		}
		if len(stack) > 0 && stack[len(stack)-1].kind == '{' && wantKey {
			if d, ok := tok.(json.Delim); !ok || d != '}' {
				key = jsonwire.AppendQuotedNoHTML(nil, tok.(string))
				wantKey = false
				continue
			}
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				t := &tree{kind: byte(v)}
				add(t)
				stack = append(stack, t)
				wantKey = v == '{'
				continue
			default:
				t := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				t.size = t.childSize()
				wantKey = len(stack) > 0 && stack[len(stack)-1].kind == '{'
				continue
			}
		case string:
			add(&tree{raw: jsonwire.AppendQuotedNoHTML(nil, v)})
		case json.Number:
			add(&tree{raw: []byte(v)})
		case bool:
			add(&tree{raw: []byte(strconv.FormatBool(v))})
		case nil:
			add(&tree{raw: []byte("null")})
		}
		if l := len(stack); l > 0 {
			t := stack[l-1].vals[len(stack[l-1].vals)-1]
			t.size = len(t.raw)
			wantKey = stack[l-1].kind == '{'
		}
	}
	if root == nil || len(stack) > 0 {
		return nil, errors.New("unexpected end")
	}
	if root.kind == 0 {
		root.size = len(root.raw)
	}
	return root, nil
}

// childSize is the compact size of an object or array from its members'.
func (t *tree) childSize() int {
	n := 2 + maxInt(len(t.vals)-1, 0)
	for i, v := range t.vals {
		n += v.size
		if t.kind == '{' {
			n += len(t.keys[i]) + 1
		}
	}
	return n
}

// How a schema keyword holds subschemas.
const (
	holdsNone   = iota
	holdsSchema // the value is a schema
	holdsMap    // the value is an object of schemas
	holdsList   // the value is an array of schemas
)

// holds says how the schema keyword key (quoted, as in the tree) holds
// subschemas.
func holds(key []byte, val *tree) int {
	switch string(key) {
	case `"properties"`, `"patternProperties"`, `"$defs"`, `"definitions"`, `"dependentSchemas"`:
		return holdsMap
	case `"allOf"`, `"anyOf"`, `"oneOf"`, `"prefixItems"`:
		return holdsList
	case `"items"`:
		if val.kind == '[' {
			return holdsList
		}
		return holdsSchema
	case `"additionalProperties"`, `"additionalItems"`, `"not"`, `"if"`, `"then"`, `"else"`, `"contains"`,
		`"propertyNames"`, `"unevaluatedItems"`, `"unevaluatedProperties"`, `"contentSchema"`:
		return holdsSchema
	}
	return holdsNone
}

// subschemas calls fn with each subschema of the schema t.
func (t *tree) subschemas(fn func(s *tree)) {
	if t.kind != '{' {
		return
	}
	for i, v := range t.vals {
		switch holds(t.keys[i], v) {
		case holdsSchema:
			fn(v)
		case holdsMap, holdsList:
			if v.kind != 0 {
				for _, s := range v.vals {
					fn(s)
				}
			}
		}
	}
}

// levels is the deepest level of subschemas in t, t being at level.
func (t *tree) levels(level int) int {
	deepest := level
	t.subschemas(func(s *tree) { deepest = maxInt(deepest, s.levels(level+1)) })
	return deepest
}

// stub is the summary of a cut subschema t: its type when short, and a
// description of the cut.
func (t *tree) stub(dst []byte, note string) []byte {
	dst = append(dst, '{')
	if t.kind == '{' {
		for i, k := range t.keys {
			if string(k) == `"type"` && t.vals[i].size <= 64 {
				dst = append(dst, `"type":`...)
				dst = t.vals[i].render(dst, 0, 0, "")
				dst = append(dst, ',')
				break
			}
		}
	}
	dst = append(dst, `"description":`...)
	dst = jsonwire.AppendQuotedNoHTML(dst, cutNote(t.size, note))
	return append(dst, '}')
}

// cutNote is the text that says size bytes were cut.
func cutNote(size int, note string) string { return fmt.Sprintf("… cut: %d bytes%s", size, note) }

// sized is the size of render(nil, level, levels, note) without
// rendering it.
func (t *tree) sized(level, levels int, note string) int {
	if levels > 0 && level > levels && t.kind == '{' {
		if n := len(t.stub(nil, note)); n < t.size {
			return n
		}
		return t.size
	}
	if t.kind != '{' || levels == 0 {
		return t.size
	}
	n := 2 + maxInt(len(t.vals)-1, 0)
	for i, v := range t.vals {
		n += len(t.keys[i]) + 1
		switch holds(t.keys[i], v) {
		case holdsSchema:
			n += v.sized(level+1, levels, note)
		case holdsMap:
			n += v.sizedMembers(level+1, levels, note)
		case holdsList:
			n += v.sizedMembers(level+1, levels, note)
		default:
			n += v.size
		}
	}
	return n
}

// sizedMembers is sized for an object or array of subschemas at level.
func (t *tree) sizedMembers(level, levels int, note string) int {
	if t.kind == 0 {
		return t.size
	}
	n := 2 + maxInt(len(t.vals)-1, 0)
	for i, s := range t.vals {
		if t.kind == '{' {
			n += len(t.keys[i]) + 1
		}
		n += s.sized(level, levels, note)
	}
	return n
}

// render appends t's compact JSON to dst, t being a schema at level, with
// the subschemas below levels summarized (levels 0: none is). A tree
// rendered as data has level 0.
func (t *tree) render(dst []byte, level, levels int, note string) []byte {
	if level > 0 && levels > 0 && level > levels && t.kind == '{' {
		if s := t.stub(nil, note); len(s) < t.size {
			return append(dst, s...)
		}
		return t.render(dst, 0, 0, "")
	}
	switch t.kind {
	case 0:
		return append(dst, t.raw...)
	case '[':
		dst = append(dst, '[')
		for i, v := range t.vals {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = v.render(dst, 0, 0, "")
		}
		return append(dst, ']')
	}
	dst = append(dst, '{')
	for i := range t.vals {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(append(dst, t.keys[i]...), ':')
		dst = t.member(dst, i, level, levels, note)
	}
	return append(dst, '}')
}

// member renders the value of t's member i, t being a schema at level
// (0: data).
func (t *tree) member(dst []byte, i, level, levels int, note string) []byte {
	v := t.vals[i]
	if level == 0 {
		return v.render(dst, 0, 0, "")
	}
	switch holds(t.keys[i], v) {
	case holdsSchema:
		return v.render(dst, level+1, levels, note)
	case holdsMap, holdsList:
		if v.kind == 0 {
			return v.render(dst, 0, 0, "")
		}
		open, end := byte('{'), byte('}')
		if v.kind == '[' {
			open, end = '[', ']'
		}
		dst = append(dst, open)
		for j, s := range v.vals {
			if j > 0 {
				dst = append(dst, ',')
			}
			if v.kind == '{' {
				dst = append(append(dst, v.keys[j]...), ':')
			}
			dst = s.render(dst, level+1, levels, note)
		}
		return append(dst, end)
	}
	return v.render(dst, 0, 0, "")
}

// greedy renders the root t within max: a "$comment" saying what was
// cut, then its members in order, each subschema summarized, and the
// properties of "properties" one by one, while they fit. It returns how
// many members (and properties) it left out.
func (t *tree) greedy(max int, note string) (json.RawMessage, int) {
	comment := func(left int) []byte {
		return jsonwire.AppendQuotedNoHTML([]byte(`"$comment":`), cutNote(t.size, fmt.Sprintf("%s; %d members left out", note, left)))
	}
	total := len(t.vals)
	for i, v := range t.vals {
		if string(t.keys[i]) == `"properties"` && v.kind == '{' {
			total += len(v.vals) - 1
		}
	}
	// The room the comment takes at most: it is written last, with the
	// final count, which is at most total.
	room := max - 2 - len(comment(total))
	if room < 0 {
		return summaryWithin(t, t.size, note, max), total
	}
	var body []byte
	left := 0
	fitsN := func(n int) bool { // a part of n bytes, after a comma when body has some
		if len(body) > 0 {
			n++
		}
		return len(body)+n <= room-1 // -1: the comma before the comment
	}
	fits := func(part []byte) bool { return fitsN(len(part)) }
	put := func(part []byte) {
		if len(body) > 0 {
			body = append(body, ',')
		}
		body = append(body, part...)
	}
	for i, v := range t.vals {
		if string(t.keys[i]) == `"$comment"` {
			left++
			continue
		}
		head := append(append([]byte(nil), t.keys[i]...), ':')
		if string(t.keys[i]) == `"properties"` && v.kind == '{' {
			// As many properties as fit, each summarized if need be.
			props := []byte{'{'}
			for j, s := range v.vals {
				p := append(append([]byte(nil), v.keys[j]...), ':')
				p = s.render(p, 2, 1, note)
				comma := 0
				if len(props) > 1 {
					comma = 1
				}
				if !fitsN(len(head) + len(props) + comma + len(p) + 1) {
					left++
					continue
				}
				if comma == 1 {
					props = append(props, ',')
				}
				props = append(props, p...)
			}
			if part := append(append(head, props...), '}'); fits(part) {
				put(part)
			} else {
				left++
			}
			continue
		}
		part := t.member(head, i, 1, 1, note)
		if !fits(part) {
			left++
			continue
		}
		put(part)
	}
	out := append([]byte{'{'}, body...)
	if len(body) > 0 {
		out = append(out, ',')
	}
	out = append(append(out, comment(left)...), '}')
	return out, left
}

// summaryWithin is the summary of a schema of size bytes that is not
// kept (t, when it is an object, for its type), within max: the stub,
// else an empty object.
func summaryWithin(t *tree, size int, note string, max int) json.RawMessage {
	if t == nil {
		t = &tree{}
	}
	s := (&tree{kind: t.kind, keys: t.keys, vals: t.vals, size: size}).stub(nil, note)
	if len(s) <= max {
		return s
	}
	s = (&tree{size: size}).stub(nil, "")
	if len(s) <= max {
		return s
	}
	return json.RawMessage("{}")
}
