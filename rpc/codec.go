package rpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// The JSON-RPC 2.0 error codes the server answers with. The first five
// are the protocol's; the others are voltmcp's, in the range JSON-RPC
// leaves to servers.
const (
	CodeParseError     = -32700 // the line is not JSON
	CodeInvalidRequest = -32600 // not a JSON-RPC 2.0 request, or over the line limit
	CodeMethodNotFound = -32601 // no such method
	CodeInvalidParams  = -32602 // params that do not decode, named by field
	CodeInternalError  = -32603 // a bug: the answer could not be encoded
	// CodeFailed is a method that ran and failed: the engine's error,
	// scrubbed as the engine scrubs every error.
	CodeFailed = -32000
	// CodeUnknownServer is an id that names no configured server.
	CodeUnknownServer = -32001
	// CodeNotAvailable is a method this server cannot run: not built
	// yet, or not wired by the process that runs the server. The
	// message says which and why.
	CodeNotAvailable = -32002
	// CodeRefused is a request of a remote client that the
	// voltmcp.remote policy refused (Options.Remote); the message gives
	// the policy's reasons.
	CodeRefused = -32003
)

// Error is a JSON-RPC error object. A method's failure is an *Error
// whose Message says what failed and, where it applies, names the
// field, server or limit.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("rpc error %d: %s", e.Code, e.Message) }

func errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// request is one decoded JSON-RPC request. ID is the raw id (a string,
// a number or null); hasID is false for a notification.
type request struct {
	ID     json.RawMessage
	hasID  bool
	Method string
	Params json.RawMessage
}

// envelopeFields are the members a request may have.
var envelopeFields = [...]string{"jsonrpc", "id", "method", "params"}

// decodeRequest decodes one line as a JSON-RPC 2.0 request. The error,
// when not nil, is the answer to send; the request's id is kept in req
// when it could be read, so that the answer carries it.
func decodeRequest(line []byte) (req request, rerr *Error) {
	if trimmed := trimSpace(line); len(trimmed) > 0 && json.Valid(trimmed) {
		// The line is one JSON value and nothing else, the common case:
		// the stream decoder, which finds where a value ends, is for the
		// others.
		return decodeEnvelope(trimmed)
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		if errors.Is(err, io.EOF) {
			return req, errorf(CodeInvalidRequest, "empty request")
		}
		return req, errorf(CodeParseError, "invalid JSON: %v", err)
	}
	end := dec.InputOffset()
	if i := bytes.IndexFunc(line[end:], notSpace); i >= 0 {
		// The id of the first value is still answered with.
		req, _ = decodeEnvelope(raw)
		return req, errorf(CodeInvalidParams, "trailing data after the request object at byte %d", end+int64(i))
	}
	return decodeEnvelope(raw)
}

func notSpace(r rune) bool { return r != ' ' && r != '\t' && r != '\r' && r != '\n' }

// decodeEnvelope checks the request object: exactly the members of
// JSON-RPC 2.0, each once and spelled as the protocol spells them.
func decodeEnvelope(raw json.RawMessage) (req request, rerr *Error) {
	return decodeEnvelopeScan(raw, true)
}

// decodeEnvelopeScan is decodeEnvelope; scan false reads the members
// with encoding/json alone, as decodeEnvelope does when objectMembers
// declines (a test compares the two).
func decodeEnvelopeScan(raw json.RawMessage, scan bool) (req request, rerr *Error) {
	if len(raw) == 0 || raw[0] != '{' {
		if len(raw) > 0 && raw[0] == '[' {
			return req, errorf(CodeInvalidRequest, "batch requests are not supported: send one request object per line")
		}
		return req, errorf(CodeInvalidRequest, "a request is a JSON object")
	}
	var keys []string
	var vals [][]byte
	scanned := false
	if scan {
		keys, vals, scanned = objectMembers(raw)
	}
	var members map[string]json.RawMessage
	if scanned {
		members = make(map[string]json.RawMessage, len(keys))
		for i, k := range keys {
			members[k] = vals[i] // the last of a duplicate, as encoding/json
		}
	} else if err := json.Unmarshal(raw, &members); err != nil {
		return req, errorf(CodeParseError, "invalid JSON: %v", err)
	}
	// The id first, so that every later error carries it.
	if id, ok := members["id"]; ok {
		switch {
		case string(id) == "null", id[0] == '"', id[0] == '-', id[0] >= '0' && id[0] <= '9':
			req.ID, req.hasID = id, true
		default:
			return req, errorf(CodeInvalidRequest, "id must be a string, a number or null")
		}
	}
	lookup := func(key string) (string, bool) {
		for _, f := range envelopeFields {
			if f == key {
				return f, true
			}
		}
		for _, f := range envelopeFields {
			if strings.EqualFold(f, key) {
				return f, false
			}
		}
		return "", false
	}
	var err *Error
	if scanned {
		seen := make(map[string]bool, len(keys))
		for _, k := range keys {
			if err = checkKey(seen, "", k, lookup); err != nil {
				break
			}
		}
	} else {
		err = checkKeys(raw, "", lookup)
	}
	if err != nil {
		err.Code = CodeInvalidRequest
		return req, err
	}
	var version string
	if v, ok := members["jsonrpc"]; !ok || json.Unmarshal(v, &version) != nil || version != "2.0" {
		return req, errorf(CodeInvalidRequest, `"jsonrpc" must be "2.0"`)
	}
	m, ok := members["method"]
	if !ok || json.Unmarshal(m, &req.Method) != nil || req.Method == "" {
		return req, errorf(CodeInvalidRequest, `"method" must be a non-empty string`)
	}
	req.Params = members["params"]
	return req, nil
}

// checkKeys reads the object raw (whose validity is known) and refuses a
// duplicate key, and a key that lookup does not know: lookup returns the
// field's spelling and whether key is it exactly; a known spelling with
// false is a key in the wrong case.
func checkKeys(raw json.RawMessage, path string, lookup func(string) (string, bool)) *Error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return errorf(CodeParseError, "invalid JSON: %v", err)
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return errorf(CodeParseError, "invalid JSON: %v", err)
		}
		if err := checkKey(seen, path, t.(string), lookup); err != nil {
			return err
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return errorf(CodeParseError, "invalid JSON: %v", err)
		}
	}
	return nil
}

// checkKey checks one key of an object at path, given the keys seen
// before it.
func checkKey(seen map[string]bool, path, key string, lookup func(string) (string, bool)) *Error {
	name := join(path, key)
	if seen[key] {
		return errorf(CodeInvalidParams, "duplicate key %q", name)
	}
	seen[key] = true
	want, exact := lookup(key)
	switch {
	case want != "" && !exact:
		return errorf(CodeInvalidParams, "key %q is in the wrong case: the field is %q", name, join(path, want))
	case want == "":
		return errorf(CodeInvalidParams, "unknown field %q", name)
	}
	return nil
}

// objectMembers lists the members of raw, a JSON object that is valid
// JSON, in order, each value as its bytes in raw, without decoding them:
// the envelope of a request read in one pass. It reports false, and
// decodeEnvelope decodes with encoding/json, when a key holds an escape
// (which encoding/json would unquote) or raw is not an object.
func objectMembers(raw []byte) (keys []string, vals [][]byte, ok bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, nil, false
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return nil, nil, true
	}
	for i < len(raw) {
		if raw[i] != '"' {
			return nil, nil, false
		}
		end := i + 1
		for end < len(raw) && raw[end] != '"' {
			if raw[end] == '\\' || raw[end] < 0x20 || raw[end] >= 0x80 {
				return nil, nil, false // an escape, or a byte encoding/json may replace
			}
			end++
		}
		if end >= len(raw) {
			return nil, nil, false
		}
		key := string(raw[i+1 : end])
		i = skipSpace(raw, end+1)
		if i >= len(raw) || raw[i] != ':' {
			return nil, nil, false
		}
		start := skipSpace(raw, i+1)
		stop, ok := valueEnd(raw, start)
		if !ok {
			return nil, nil, false
		}
		keys, vals = append(keys, key), append(vals, raw[start:stop])
		i = skipSpace(raw, stop)
		if i >= len(raw) {
			return nil, nil, false
		}
		switch raw[i] {
		case ',':
			i = skipSpace(raw, i+1)
		case '}':
			return keys, vals, true
		default:
			return nil, nil, false
		}
	}
	return nil, nil, false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && !notSpace(rune(b[i])) {
		i++
	}
	return i
}

// valueEnd returns where the JSON value that starts at i in b (valid
// JSON) ends.
func valueEnd(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	depth := 0
	for j := i; j < len(b); j++ {
		switch c := b[j]; c {
		case '"':
			j++
			for j < len(b) && b[j] != '"' {
				if b[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(b) {
				return 0, false
			}
			if depth == 0 {
				return j + 1, true
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return j, true // the end of the enclosing object
			}
			depth--
			if depth == 0 {
				return j + 1, true
			}
		case ',':
			if depth == 0 {
				return j, true
			}
		case ' ', '\t', '\r', '\n':
			if depth == 0 {
				return j, true
			}
		}
	}
	if depth == 0 {
		return len(b), true
	}
	return 0, false
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// decodeParams decodes a request's params into dst, a pointer to a
// params struct, strictly: the params are an object (or absent, or
// null, for a method whose params are all optional); every key is one of
// the struct's json names, spelled exactly, once; every value has the
// field's JSON type; the fields tagged rpc:"required" are present.
// Nested structs are checked the same way; a map or an any field (a
// tool's arguments) takes any keys, each once. Every method decodes its
// params through it. The error names the field, as "params.FIELD".
func decodeParams(raw json.RawMessage, dst any) *Error {
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	if raw[0] != '{' {
		return errorf(CodeInvalidParams, "params must be an object of named fields")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := walk(dec, reflect.TypeOf(dst).Elem(), "params"); err != nil {
		return err
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return errorf(CodeInvalidParams, "field %q: want %s, got a JSON %s", "params."+te.Field, te.Type, te.Value)
		}
		return errorf(CodeInvalidParams, "params: %v", err)
	}
	return nil
}

// fieldSet is the json names of a struct's fields, and those required.
type fieldSet struct {
	types    map[string]reflect.Type
	required []string
}

func fieldsOf(t reflect.Type) fieldSet {
	fs := fieldSet{types: map[string]reflect.Type{}}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fs.types[name] = f.Type
		if f.Tag.Get("rpc") == "required" {
			fs.required = append(fs.required, name)
		}
	}
	return fs
}

var rawMessageType = reflect.TypeOf(json.RawMessage(nil))

// walk reads one value from dec and checks it against t.
func walk(dec *json.Decoder, t reflect.Type, path string) *Error {
	tok, err := dec.Token()
	if err != nil {
		return errorf(CodeParseError, "invalid JSON at %s: %v", path, err)
	}
	for t.Kind() == reflect.Pointer {
		if tok == nil {
			return nil
		}
		t = t.Elem()
	}
	if t == rawMessageType || t.Kind() == reflect.Interface {
		return walkAny(dec, tok, path)
	}
	switch t.Kind() {
	case reflect.Struct:
		if tok != json.Delim('{') {
			return wrongType(path, "an object", tok)
		}
		fs := fieldsOf(t)
		seen := map[string]bool{}
		err := members(dec, path, func(key, name string) *Error {
			seen[key] = true
			ft, ok := fs.types[key]
			if !ok {
				for f := range fs.types {
					if strings.EqualFold(f, key) {
						return errorf(CodeInvalidParams, "key %q is in the wrong case: the field is %q", name, join(path, f))
					}
				}
				return errorf(CodeInvalidParams, "unknown field %q", name)
			}
			return walk(dec, ft, name)
		})
		if err != nil {
			return err
		}
		for _, r := range fs.required {
			if !seen[r] {
				return errorf(CodeInvalidParams, "missing field %q", join(path, r))
			}
		}
		return nil
	case reflect.Map:
		if tok == nil {
			return nil
		}
		if tok != json.Delim('{') {
			return wrongType(path, "an object", tok)
		}
		return members(dec, path, func(_, name string) *Error {
			return walk(dec, t.Elem(), name)
		})
	case reflect.Slice:
		if tok == nil {
			return nil
		}
		if tok != json.Delim('[') {
			return wrongType(path, "an array", tok)
		}
		return elements(dec, path, func(name string) *Error {
			return walk(dec, t.Elem(), name)
		})
	case reflect.String:
		if _, ok := tok.(string); !ok {
			return wrongType(path, "a string", tok)
		}
	case reflect.Bool:
		if _, ok := tok.(bool); !ok {
			return wrongType(path, "a boolean", tok)
		}
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint64, reflect.Uint32, reflect.Uint:
		n, ok := tok.(json.Number)
		if !ok {
			return wrongType(path, "an integer", tok)
		}
		if _, err := n.Int64(); err != nil {
			return errorf(CodeInvalidParams, "field %q: want an integer, got %s", path, clip(n.String()))
		}
	case reflect.Float64, reflect.Float32:
		if _, ok := tok.(json.Number); !ok {
			return wrongType(path, "a number", tok)
		}
	default:
		return errorf(CodeInternalError, "field %q: the params type has a %s, which the decoder does not know", path, t.Kind())
	}
	return nil
}

// walkAny reads the rest of a value whose first token is tok, of any
// type, refusing duplicate keys in its objects.
func walkAny(dec *json.Decoder, tok json.Token, path string) *Error {
	value := func(name string) *Error {
		vt, err := dec.Token()
		if err != nil {
			return errorf(CodeParseError, "invalid JSON at %s: %v", name, err)
		}
		return walkAny(dec, vt, name)
	}
	switch tok {
	case json.Delim('{'):
		return members(dec, path, func(_, name string) *Error { return value(name) })
	case json.Delim('['):
		return elements(dec, path, value)
	}
	return nil
}

// members reads the members of an object whose '{' has been read, up to
// and with its '}', refusing a duplicate key; for each it calls value,
// which reads the member's value, with the key and the key's path.
func members(dec *json.Decoder, path string, value func(key, name string) *Error) *Error {
	seen := map[string]bool{}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return errorf(CodeParseError, "invalid JSON at %s: %v", path, err)
		}
		key := kt.(string)
		name := join(path, key)
		if seen[key] {
			return errorf(CodeInvalidParams, "duplicate key %q", name)
		}
		seen[key] = true
		if err := value(key, name); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return errorf(CodeParseError, "invalid JSON at %s: %v", path, err)
	}
	return nil
}

// elements reads the elements of an array whose '[' has been read, up to
// and with its ']'; for each it calls value, which reads the element,
// with the element's path.
func elements(dec *json.Decoder, path string, value func(name string) *Error) *Error {
	for i := 0; dec.More(); i++ {
		if err := value(fmt.Sprintf("%s[%d]", path, i)); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return errorf(CodeParseError, "invalid JSON at %s: %v", path, err)
	}
	return nil
}

func wrongType(path, want string, tok json.Token) *Error {
	return errorf(CodeInvalidParams, "field %q: want %s, got %s", path, want, describe(tok))
}

func describe(tok json.Token) string {
	switch v := tok.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case json.Delim:
		if v == '{' {
			return "an object"
		}
		return "an array"
	}
	return "a value"
}

func clip(s string) string {
	if len(s) > 32 {
		return s[:32] + "..."
	}
	return s
}
