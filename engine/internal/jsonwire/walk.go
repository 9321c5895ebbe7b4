package jsonwire

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// DefaultMaxDepth is the nesting at which a [Walker] whose MaxDepth is 0
// stops.
const DefaultMaxDepth = 32

// Step is one step of a path into a JSON value: an object member's key,
// or an array element.
type Step struct {
	// Key is the member's key, raw, as written between its quotes
	// (decode it with [AppendUnescaped]); nil for an element.
	Key []byte
	// Elem is true for an array element.
	Elem bool
}

// Walker reads the object members of a JSON document without recursion,
// for a caller that wants a few members of an untrusted document without
// decoding all of it. Its buffers are reused from one walk to the next,
// so a Walker is for one goroutine at a time. The zero value, or nil, is
// ready to use.
type Walker struct {
	// MaxDepth is the number of open objects and arrays, the root's
	// included, at which a walk stops rather than open one more; 0 or
	// less is DefaultMaxDepth.
	MaxDepth int

	stack []bool // per open container: is it an object
	path  []Step
}

// Walk calls fn for each object member in data, in document order, with
// the path to the member's object (from the root, which has no step), the
// member's raw key and, when the value is a string, its raw contents
// (else nil; decode either with [AppendUnescaped]). A member whose value
// is an object or an array is reported before the members inside it.
// The root must be an object or an array; a document with any other root
// reports nothing.
//
// Walk never recurses: it keeps its own stack, and stops at MaxDepth
// levels of nesting, at the first syntax error it sees, or when fn
// returns false. Members seen before a stop have been reported; nothing
// else is. It checks the syntax only as far as it must to find the
// members: on a document that is not valid JSON it may report members
// [json.Unmarshal] would refuse, but on valid JSON what it reports is what
// encoding/json decodes at the same paths (FuzzWalk). The slices passed to
// fn point into data and into the Walker's buffers: fn must not keep the
// path after it returns.
func (w *Walker) Walk(data []byte, fn func(path []Step, key, str []byte) bool) {
	if w == nil {
		w = new(Walker)
	}
	maxDepth := w.MaxDepth
	if maxDepth <= 0 {
		maxDepth = DefaultMaxDepth
	}
	stack, path := w.stack[:0], w.path[:0]
	defer func() { w.stack, w.path = stack[:0], path[:0] }()
	// The root is not a member: it has a stack entry but no step, so
	// len(path) == len(stack)-1 throughout.
	i := SkipSpace(data, 0)
	if i >= len(data) || data[i] != '{' && data[i] != '[' {
		return
	}
	stack = append(stack, data[i] == '{')
	i++
	first := true // no member or element read yet in the open container
	for len(stack) > 0 {
		if i = SkipSpace(data, i); i >= len(data) {
			return
		}
		obj := stack[len(stack)-1]
		if c := data[i]; c == '}' && obj || c == ']' && !obj {
			i++
			stack = stack[:len(stack)-1]
			if len(path) > 0 {
				path = path[:len(path)-1]
			}
			first = false
			continue
		}
		if !first {
			if data[i] != ',' {
				return
			}
			if i = SkipSpace(data, i+1); i >= len(data) {
				return
			}
		}
		first = false
		var key []byte
		step := Step{Elem: true}
		if obj {
			var ok bool
			if key, i, ok = walkString(data, i); !ok {
				return
			}
			if i = SkipSpace(data, i); i >= len(data) || data[i] != ':' {
				return
			}
			if i = SkipSpace(data, i+1); i >= len(data) {
				return
			}
			step = Step{Key: key}
		}
		var str []byte
		switch data[i] {
		case '{', '[':
			if len(stack) >= maxDepth {
				return
			}
			parent := path
			stack = append(stack, data[i] == '{')
			path = append(path, step)
			i++
			first = true
			if obj && !fn(parent, key, nil) {
				return
			}
			continue
		case '"':
			var ok bool
			if str, i, ok = walkString(data, i); !ok {
				return
			}
		default:
			for i < len(data) && !isWalkDelim(data[i]) {
				i++
			}
			if i >= len(data) {
				return
			}
		}
		if obj && !fn(path, key, str) {
			return
		}
	}
}

// isWalkDelim reports whether c ends a number or a literal (true, false,
// null) in a walk.
func isWalkDelim(c byte) bool {
	return c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

// walkString reads the JSON string that starts at data[i], a quote: its
// raw contents, as written between the quotes, and the index after its
// closing quote; ok is false when data[i] is not a quote or the string
// does not end. It finds the end without decoding, so a backslash or a
// quote costs no more than another byte, and it does not check what is
// between the quotes.
func walkString(data []byte, i int) (raw []byte, next int, ok bool) {
	if i >= len(data) || data[i] != '"' {
		return nil, i, false
	}
	start := i + 1
	for j := start; j < len(data); {
		q := bytes.IndexByte(data[j:], '"')
		if q < 0 {
			break
		}
		// The first quote after j ends the string unless a backslash
		// before it escapes something: skip that and look again.
		if e := bytes.IndexByte(data[j:j+q], '\\'); e >= 0 {
			j += e + 2
			continue
		}
		return data[start : j+q], j + q + 1, true
	}
	return nil, len(data), false
}

// AppendUnescaped appends to dst the decoded contents of a JSON string
// given raw, as between its quotes (as [Walker.Walk] reports it), as
// [json.Unmarshal] decodes it: escapes decoded, and invalid UTF-8 replaced
// with U+FFFD. Contents without a backslash are not checked further: a
// control character, which JSON allows only escaped, is appended as it
// is. Other contents json.Unmarshal refuses append nothing.
func AppendUnescaped(dst, raw []byte) []byte {
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return append(dst, raw...)
	}
	var s string
	quoted := make([]byte, 0, len(raw)+2)
	quoted = append(append(append(quoted, '"'), raw...), '"')
	if json.Unmarshal(quoted, &s) != nil {
		return dst
	}
	return append(dst, s...)
}
