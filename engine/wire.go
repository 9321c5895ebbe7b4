package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// lineReader is the state of reading a connection: whichever goroutine
// holds it is the connection's reader (lineConn.lane).
//
// It reads MCP's framing, one message a line, a line at a time: a line
// that is exactly one JSON value is checked with json.Valid and its
// envelope read without reflection (decodeLine). Anything else (a value
// spread over lines, two on one line, a message whose newline has not
// come when the peer stops writing) switches the connection for good to
// encoding/json's stream decoder, which reads all of those as the SDK's
// transport does. Both ways bound a message by max.
type lineReader struct {
	src io.Reader
	max int // bytes of one message; <= 0 means no bound

	buf  []byte // read but not yet consumed: buf[off:]
	off  int
	seen int   // bytes of buf[off:] already searched for a newline
	err  error // the read error that ends the stream, once buf is drained

	// dec, once set, reads the rest of the stream (slow mode).
	dec *json.Decoder
	lim *frameLimit
}

// Bounds of lineReader's buffer.
const (
	lineReadSize = 8 << 10  // the least it asks the source for
	lineKeepBuf  = 64 << 10 // a larger buffer is dropped once empty
)

func newLineReader(src io.Reader, max int) *lineReader {
	return &lineReader{src: src, max: max}
}

// message returns the next message, io.EOF at a clean end of stream, or
// the error that ends the stream.
func (r *lineReader) message() (jsonrpc.Message, error) {
	for r.dec == nil {
		rest := r.buf[r.off:]
		if i := bytes.IndexByte(rest[r.seen:], '\n'); i >= 0 {
			i += r.seen
			r.seen = 0
			line := trimJSONSpace(rest[:i])
			if len(line) == 0 {
				r.off += i + 1
				continue
			}
			if r.max > 0 && len(line) > r.max {
				return nil, errMessageTooLarge
			}
			if !json.Valid(line) {
				break // the decoder reads it, and says what is wrong
			}
			r.off += i + 1
			return decodeLine(bytes.Clone(line))
		}
		// A long line comes in many reads: each is searched once.
		r.seen = len(rest)
		if r.max > 0 && len(rest) > r.max {
			return nil, errMessageTooLarge
		}
		if r.err != nil {
			if len(trimJSONSpace(rest)) == 0 {
				return nil, r.err
			}
			break // a last message without its newline
		}
		if t := trimJSONSpace(rest); len(t) > 0 {
			// What came has no newline yet. When it may end a whole
			// message, the peer may be waiting for an answer to a
			// message it sent without one: the decoder reads it
			// without waiting for more.
			if c := t[len(t)-1]; c == '}' || c == ']' || c == '"' || c == 'e' || c == 'l' {
				break
			}
		}
		r.fill()
	}
	if r.dec == nil {
		r.slow()
	}
	return r.decode()
}

// fill reads more into the buffer, first moving what is left of it to
// its start.
func (r *lineReader) fill() {
	rest := len(r.buf) - r.off
	switch {
	case rest == 0 && cap(r.buf) > lineKeepBuf:
		r.buf = nil
	case r.off > 0:
		r.buf = r.buf[:copy(r.buf, r.buf[r.off:])]
	}
	r.off = 0
	if cap(r.buf)-len(r.buf) < lineReadSize {
		r.buf = append(r.buf, make([]byte, max(lineReadSize, cap(r.buf)))...)[:len(r.buf)]
	}
	n, err := r.src.Read(r.buf[len(r.buf):cap(r.buf)])
	r.buf = r.buf[:len(r.buf)+n]
	if err != nil {
		r.err = err
	}
}

// slow hands the rest of the stream, what is buffered first, to
// encoding/json's decoder.
func (r *lineReader) slow() {
	src := io.Reader(bytes.NewReader(bytes.Clone(r.buf[r.off:])))
	if r.err != nil {
		src = io.MultiReader(src, errReader{r.err})
	} else {
		src = io.MultiReader(src, r.src)
	}
	r.buf, r.off = nil, 0
	if r.max > 0 {
		r.lim = &frameLimit{r: src, n: r.max}
		src = r.lim
	}
	r.dec = json.NewDecoder(src)
}

// errReader returns err.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// decode reads the next message with the decoder.
func (r *lineReader) decode() (jsonrpc.Message, error) {
	var w wireMessage
	err := r.dec.Decode(&w)
	if r.lim != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) && r.lim.hit {
			return nil, errMessageTooLarge
		}
		r.lim.reset(r.dec.Buffered())
	}
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		return nil, wireError(err)
	}
	return w.message()
}

// trimJSONSpace trims the whitespace JSON allows around a value.
func trimJSONSpace(b []byte) []byte {
	for len(b) > 0 && isJSONSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isJSONSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// wireMessage is a JSON-RPC message as sent: a request, a notification
// or a response.
type wireMessage struct {
	Version string          `json:"jsonrpc"`
	ID      any             `json:"id"`
	Method  *string         `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *jsonrpc.Error  `json:"error"`
}

// maxJSONDepth is how deep a JSON-RPC message may nest: the limit of
// encoding/json, which decodes every message on a stdio connection. A
// deeper one ends the connection with errTooDeep. (The go-sdk decodes
// what it parses itself, such as an HTTP response or a result it
// types, to sdkJSONDepth.)
const maxJSONDepth = 10000

// sdkJSONDepth is the go-sdk's own nesting limit.
const sdkJSONDepth = 1000

// errTooDeep means an inbound message nested deeper than maxJSONDepth.
var errTooDeep = fmt.Errorf("message nests deeper than %d levels of JSON (maxJSONDepth)", maxJSONDepth)

// wireError words a failure to decode a message.
func wireError(err error) error {
	if te := (*json.UnmarshalTypeError)(nil); errors.As(err, &te) && te.Value == "array" && te.Field == "" {
		return errBatch
	}
	if se := (*json.SyntaxError)(nil); errors.As(err, &se) && strings.HasSuffix(se.Error(), "exceeded max depth") {
		return errTooDeep
	}
	return fmt.Errorf("unmarshaling jsonrpc message: %w", err)
}

// nestDepth reports whether err says a message nested too deep, and
// the limit it passed: maxJSONDepth (errTooDeep), or the go-sdk's.
func nestDepth(err error) (int, bool) {
	if errors.Is(err, errTooDeep) {
		return maxJSONDepth, true
	}
	if strings.Contains(err.Error(), "exceeded maximum nesting depth of "+strconv.Itoa(sdkJSONDepth)) {
		return sdkJSONDepth, true
	}
	return 0, false
}

// message checks the envelope and makes the message.
func (w *wireMessage) message() (jsonrpc.Message, error) {
	if w.Version != "2.0" {
		return nil, fmt.Errorf("invalid message version tag %q; expected %q", w.Version, "2.0")
	}
	id, err := jsonrpc.MakeID(w.ID)
	if err != nil {
		return nil, err
	}
	if w.Method != nil {
		return &jsonrpc.Request{ID: id, Method: *w.Method, Params: w.Params}, nil
	}
	if !id.IsValid() {
		return nil, errors.New("JSON RPC invalid request: a response without an id")
	}
	resp := &jsonrpc.Response{ID: id, Result: w.Result}
	if w.Error != nil {
		resp.Error = w.Error
	}
	return resp, nil
}

// decodeLine decodes one message from data, a valid JSON value that the
// message keeps (its params or result are slices of it). The envelope of
// the usual message is read without reflection; any other is decoded by
// encoding/json, and both give the same message or the same error.
func decodeLine(data []byte) (jsonrpc.Message, error) {
	var w wireMessage
	if !w.fastDecode(data) {
		w = wireMessage{}
		if err := json.Unmarshal(data, &w); err != nil {
			return nil, wireError(err)
		}
	}
	return w.message()
}

// fastDecode reads an envelope whose members are the usual ones, with
// the usual values, into w, and reports whether it did. It declines
// whatever it might read differently from encoding/json: a key with an
// escape, a key that differs from a field's name only in case (which
// encoding/json matches), a null, an error member, an id that is not a
// plain string or number, and strings with escapes or bytes that are
// not UTF-8. data must be valid JSON.
func (w *wireMessage) fastDecode(data []byte) bool {
	return objectMembers(data, func(key string, val []byte) bool {
		switch key {
		case "jsonrpc":
			s, ok := plainString(val)
			w.Version = s
			return ok
		case "id":
			switch val[0] {
			case '"':
				s, ok := plainString(val)
				w.ID = s
				return ok
			case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
				f, err := strconv.ParseFloat(string(val), 64)
				w.ID = f
				return err == nil
			}
			return false
		case "method":
			s, ok := plainString(val)
			w.Method = &s
			return ok
		case "params":
			w.Params = val
			return val[0] != 'n'
		case "result":
			w.Result = val
			return val[0] != 'n'
		case "error":
			return false
		}
		return !foldsTo(key, "jsonrpc", "id", "method", "params", "result", "error")
	})
}

// objectMembers calls fn with each member of the JSON object in data,
// which must be valid JSON, in order, and reports whether data is an
// object whose keys have no escapes and fn returned true for each.
func objectMembers(data []byte, fn func(key string, val []byte) bool) bool {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return true
	}
	for i < len(data) {
		end := skipValue(data, i) // the key
		key := data[i+1 : end-1]
		if bytes.IndexByte(key, '\\') >= 0 || !utf8.Valid(key) {
			return false
		}
		i = skipSpace(data, end)
		i = skipSpace(data, i+1) // past ':'
		end = skipValue(data, i)
		if !fn(string(key), data[i:end]) {
			return false
		}
		i = skipSpace(data, end)
		if i >= len(data) || data[i] == '}' {
			return true
		}
		i = skipSpace(data, i+1) // past ','
	}
	return false
}

// arrayElements calls fn with each element of the JSON array in data,
// which must be valid JSON, in order, and reports whether data is an
// array and fn returned true for each.
func arrayElements(data []byte, fn func(val []byte) bool) bool {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '[' {
		return false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == ']' {
		return true
	}
	for i < len(data) {
		end := skipValue(data, i)
		if !fn(data[i:end]) {
			return false
		}
		i = skipSpace(data, end)
		if i >= len(data) || data[i] == ']' {
			return true
		}
		i = skipSpace(data, i+1) // past ','
	}
	return false
}

// skipSpace returns the index of the first byte at or after i that is
// not JSON whitespace.
func skipSpace(data []byte, i int) int {
	for i < len(data) && isJSONSpace(data[i]) {
		i++
	}
	return i
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
		case depth == 0 && (c == ',' || c == ':' || isJSONSpace(c)):
			return i
		default:
			i++
		}
	}
	return i
}

// plainString returns the JSON string val without its quotes when it
// holds no escape and is valid UTF-8: then it is its own decoding.
func plainString(val []byte) (string, bool) {
	if len(val) < 2 || val[0] != '"' {
		return "", false
	}
	s := val[1 : len(val)-1]
	if bytes.IndexByte(s, '\\') >= 0 || !utf8.Valid(s) {
		return "", false
	}
	return string(s), true
}

// unquote decodes the JSON string val, a valid one, when it is valid
// UTF-8 and its escapes are only the one-letter ones (\" \\ \/ \b \f \n
// \r \t): then the result is what encoding/json decodes. It reports
// false for anything else (a \u escape, bytes that are not UTF-8), which
// the caller leaves to encoding/json.
func unquote(val []byte) (string, bool) {
	if s, ok := plainString(val); ok {
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

// foldsTo reports whether key is one of names in another case:
// encoding/json would take it for that name.
func foldsTo(key string, names ...string) bool {
	for _, n := range names {
		if key != n && strings.EqualFold(key, n) {
			return true
		}
	}
	return false
}
