package bound

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/voltmcp/voltmcp/engine/internal/jsonwire"
	"github.com/voltmcp/voltmcp/sanitize"
)

// Schema bounds a tool's input (or output) schema from an untrusted
// server and returns it compact, with every string cleaned:
//
//   - a schema over l.MaxSchemaBytes, deeper than l.MaxSchemaDepth (the
//     root object being level 1), not valid JSON, not a JSON object, or
//     with a key twice in one object (which parsers resolve differently)
//     is an error saying why, and the caller drops the tool with that
//     reason;
//   - the strings of "description" and "$comment" are cleaned and clipped
//     like a description, those of "title" like a title (see
//     [SanitizeText]); every other string, keys included, loses escape
//     sequences, control and invisible characters but is otherwise kept
//     as written, since a model must send it back exactly;
//   - each "enum" keeps its first l.MaxEnumValues values;
//   - "$ref", "$dynamicRef" and "$recursiveRef" are kept as written and
//     counted, never followed, so a reference cycle costs nothing.
//
// The walk is iterative: nothing in it recurses on the schema's nesting.
// An empty raw is returned as is. Zero fields of l are defaults.
func Schema(raw json.RawMessage, l Limits) (json.RawMessage, Report, error) {
	l = l.norm()
	var r Report
	if len(raw) == 0 {
		return raw, r, nil
	}
	out, err := boundJSON(raw, l, &r, true)
	if err != nil {
		return nil, r, err
	}
	return out, r, nil
}

// Keys whose string values are prose for people and models.
const (
	keyDescription = "description"
	keyComment     = "$comment"
	keyTitle       = "title"
	keyEnum        = "enum"
)

// frame is one open object or array of boundJSON.
type frame struct {
	obj     bool
	wantKey bool                // an object expecting a key (or its end)
	key     string              // the key whose value is being read
	n       int                 // members or elements seen
	keys    map[string]struct{} // keys seen, for duplicates
	enum    bool                // an array that is an "enum" value
	skip    bool                // clipped: read, not written
}

// boundJSON copies the JSON object raw compactly, within l, cleaning
// strings; in a schema (schema set), enums are clipped and references
// counted. Each string is written as encoding/json writes it without
// escaping HTML (jsonwire.AppendQuotedNoHTML: the bound is checked on
// the schema's own size), each number as it came.
func boundJSON(raw []byte, l Limits, r *Report, schema bool) (json.RawMessage, error) {
	if len(raw) > l.MaxSchemaBytes {
		return nil, fmt.Errorf("%d bytes, over the limit of %d", len(raw), l.MaxSchemaBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	out := make([]byte, 0, len(raw))
	var stack []frame
	done := false // the root value is complete
	enumClipped := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("not valid JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
		}
		if done {
			return nil, errors.New("not valid JSON: more than one value")
		}
		if len(stack) == 0 {
			if d, ok := tok.(json.Delim); !ok || d != '{' {
				return nil, errors.New("not a JSON object")
			}
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			f := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if !f.skip {
				out = append(out, byte(d))
			}
			if f.enum && f.n > l.MaxEnumValues {
				r.EnumValues += f.n - l.MaxEnumValues
				enumClipped++
			}
			if len(stack) == 0 {
				done = true
			} else if top := &stack[len(stack)-1]; top.obj {
				top.wantKey = true
			}
			continue
		}
		var top *frame
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		if top != nil && top.obj && top.wantKey {
			key := stripHidden(tok.(string), r) // the decoder only gives strings here
			if top.keys == nil {
				top.keys = make(map[string]struct{}, 8)
			}
			if _, dup := top.keys[key]; dup {
				return nil, fmt.Errorf("key %q appears twice in one object", clipKey(key))
			}
			top.keys[key] = struct{}{}
			if !top.skip {
				if top.n > 0 {
					out = append(out, ',')
				}
				out = jsonwire.AppendQuotedNoHTML(out, key)
				out = append(out, ':')
			}
			top.n++
			top.key, top.wantKey = key, false
			if schema && (key == "$ref" || key == "$dynamicRef" || key == "$recursiveRef") {
				r.Refs++
			}
			continue
		}
		// A value: the root, an array element or a member's value.
		skip := false
		if top != nil {
			if !top.obj {
				skip = top.skip || top.enum && top.n >= l.MaxEnumValues
				if !skip && top.n > 0 {
					out = append(out, ',')
				}
				top.n++
			} else {
				skip = top.skip
				top.wantKey = true
			}
		}
		switch v := tok.(type) {
		case json.Delim: // '{' or '['
			if len(stack)+1 > l.MaxSchemaDepth {
				return nil, fmt.Errorf("nested deeper than %d levels", l.MaxSchemaDepth)
			}
			f := frame{obj: v == '{', wantKey: v == '{', skip: skip}
			if top != nil {
				top.wantKey = false // restored when this value closes
				f.enum = schema && v == '[' && top.obj && top.key == keyEnum
			}
			stack = append(stack, f)
			if !skip {
				out = append(out, byte(v))
			}
		case string:
			if skip {
				continue
			}
			if top != nil && top.obj {
				switch top.key {
				case keyDescription, keyComment:
					s, rr := SanitizeText(v, l.MaxDescriptionChars)
					r.Add(rr)
					out = jsonwire.AppendQuotedNoHTML(out, s)
					continue
				case keyTitle:
					s, rr := SanitizeText(v, l.MaxTitleChars)
					r.Add(rr)
					out = jsonwire.AppendQuotedNoHTML(out, s)
					continue
				}
			}
			out = jsonwire.AppendQuotedNoHTML(out, stripHidden(v, r))
		case json.Number:
			// A number no float64 holds is valid JSON that encoding/json
			// (and the agent's parser, as Infinity) cannot take back.
			if _, err := strconv.ParseFloat(string(v), 64); err != nil {
				return nil, fmt.Errorf("not valid JSON: a number out of range (%d digits)", len(v))
			}
			if !skip {
				out = append(out, v...)
			}
		case bool:
			if !skip {
				if v {
					out = append(out, "true"...)
				} else {
					out = append(out, "false"...)
				}
			}
		case nil:
			if !skip {
				out = append(out, "null"...)
			}
		}
		if _, open := tok.(json.Delim); top == nil && !open {
			done = true // a scalar root; rejected above, kept for safety
		}
	}
	if !done {
		return nil, errors.New("not valid JSON: unexpected end")
	}
	if enumClipped > 0 {
		r.note(fmt.Sprintf("clipped %d enums to %d values", enumClipped, l.MaxEnumValues))
	}
	if len(out) > l.MaxSchemaBytes {
		return nil, fmt.Errorf("%d bytes once cleaned, over the limit of %d", len(out), l.MaxSchemaBytes)
	}
	return out, nil
}

// clipKey shortens a key for an error message.
func clipKey(s string) string {
	out, _ := SanitizeText(s, 64)
	return out
}

// stripHidden removes escape sequences, control characters other than
// tab and newline, and invisible characters from s, and counts them in r;
// it keeps everything else, white space included, as written (a carriage
// return becomes a newline). It is [sanitize.Output].
func stripHidden(s string, r *Report) string {
	out, sr := sanitize.Output(s)
	r.Escapes += sr.Escapes
	r.Controls += sr.Controls
	r.Invisible += sr.Invisible
	r.InvalidUTF8 += sr.InvalidUTF8
	return out
}
