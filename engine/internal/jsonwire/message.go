package jsonwire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Envelope is a JSON-RPC message as sent: a request, a notification or
// a response. json.Unmarshal into an Envelope, then [Envelope.Message],
// reads a message as the go-sdk's jsonrpc.DecodeMessage does;
// [Envelope.FastDecode] reads the usual one without reflection.
type Envelope struct {
	Version string          `json:"jsonrpc"`
	ID      any             `json:"id"`
	Method  *string         `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *jsonrpc.Error  `json:"error"`
}

// MaxDepth is how deep a JSON-RPC message may nest: the limit of
// encoding/json, which decodes every message on a stdio connection. A
// deeper one ends the connection with [ErrTooDeep]. (The go-sdk decodes
// what it parses itself, such as an HTTP response or a result it
// types, to [SDKDepth].)
const MaxDepth = 10000

// SDKDepth is the go-sdk's own nesting limit.
const SDKDepth = 1000

// ErrTooDeep means an inbound message nested deeper than [MaxDepth].
var ErrTooDeep = fmt.Errorf("message nests deeper than %d levels of JSON (maxJSONDepth)", MaxDepth)

// ErrBatch refuses a JSON-RPC batch.
var ErrBatch = errors.New("JSON-RPC batches are not supported (MCP removed them in protocol 2025-06-18)")

// WireError words a failure of encoding/json to decode a message: a
// batch is [ErrBatch], a message nested too deep [ErrTooDeep], anything
// else wrapped as the go-sdk words it.
func WireError(err error) error {
	if te := (*json.UnmarshalTypeError)(nil); errors.As(err, &te) && te.Value == "array" && te.Field == "" {
		return ErrBatch
	}
	if se := (*json.SyntaxError)(nil); errors.As(err, &se) && strings.HasSuffix(se.Error(), "exceeded max depth") {
		return ErrTooDeep
	}
	return fmt.Errorf("unmarshaling jsonrpc message: %w", err)
}

// NestDepth reports whether err says a message nested too deep, and
// the limit it passed: [MaxDepth] ([ErrTooDeep]), or the go-sdk's
// ([SDKDepth]).
func NestDepth(err error) (int, bool) {
	if errors.Is(err, ErrTooDeep) {
		return MaxDepth, true
	}
	if strings.Contains(err.Error(), "exceeded maximum nesting depth of "+strconv.Itoa(SDKDepth)) {
		return SDKDepth, true
	}
	return 0, false
}

// Message checks the envelope and makes the message, as the go-sdk's
// jsonrpc.DecodeMessage does.
func (w *Envelope) Message() (jsonrpc.Message, error) {
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

// DecodeMessage decodes one message from data, a valid JSON value that
// the message keeps (its params or result are slices of it). The
// envelope of the usual message is read without reflection
// ([Envelope.FastDecode]); any other is decoded by encoding/json, and
// both give the same message or the same error.
func DecodeMessage(data []byte) (jsonrpc.Message, error) {
	var w Envelope
	if !w.FastDecode(data) {
		w = Envelope{}
		if err := json.Unmarshal(data, &w); err != nil {
			return nil, WireError(err)
		}
	}
	return w.Message()
}

// FastDecode reads an envelope whose members are the usual ones, with
// the usual values, into w, and reports whether it did; what it reads is
// what json.Unmarshal reads. It declines whatever it might read
// differently from encoding/json: a key with an escape, a key that
// differs from a field's name only in case (which encoding/json
// matches), a null, an error member, an id that is not a plain string or
// number, and strings with escapes or bytes that are not UTF-8. data
// must be valid JSON.
func (w *Envelope) FastDecode(data []byte) bool {
	return ObjectMembers(data, func(key string, val []byte) bool {
		switch key {
		case "jsonrpc":
			s, ok := PlainString(val)
			w.Version = s
			return ok
		case "id":
			switch val[0] {
			case '"':
				s, ok := PlainString(val)
				w.ID = s
				return ok
			case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
				f, err := strconv.ParseFloat(string(val), 64)
				w.ID = f
				return err == nil
			}
			return false
		case "method":
			s, ok := PlainString(val)
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
		return !FoldsTo(key, "jsonrpc", "id", "method", "params", "result", "error")
	})
}

// AppendResponse appends one JSON-RPC response to b: the result, JSON
// already encoded, or, when jerr is not nil, the error. It is byte for
// byte what the go-sdk's jsonrpc.EncodeMessage writes for the same
// response (which escapes no HTML), given a compact result (see
// [CompactRaw]) and an id that is a number or a string, as the go-sdk
// makes them.
func AppendResponse(b []byte, id jsonrpc.ID, result []byte, jerr *jsonrpc.Error) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	switch v := id.Raw().(type) {
	case int64:
		b = strconv.AppendInt(b, v, 10)
	case string:
		b = AppendQuotedNoHTML(b, v)
	default:
		b = append(b, "null"...)
	}
	if jerr != nil {
		b = append(b, `,"error":`...)
		b = appendError(b, jerr)
	} else {
		b = append(b, `,"result":`...)
		b = append(b, result...)
	}
	return append(b, '}')
}

// appendError appends jerr as the go-sdk encodes it.
func appendError(b []byte, jerr *jsonrpc.Error) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(jerr) != nil {
		return append(b, "null"...) // cannot happen: its data is valid JSON
	}
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}

// AppendRequest appends one JSON-RPC request to b, with params already
// encoded: byte for byte what the go-sdk's jsonrpc.EncodeMessage writes
// for a request with a string id, given compact params (see
// [CompactRaw]).
func AppendRequest(b []byte, id, method string, params []byte) []byte {
	b = AppendQuotedNoHTML(append(b, `{"jsonrpc":"2.0","id":`...), id)
	if method != "" {
		// The go-sdk leaves an empty method out; the engine never sends one.
		b = AppendQuotedNoHTML(append(b, `,"method":`...), method)
	}
	b = append(append(b, `,"params":`...), params...)
	return append(b, '}')
}
