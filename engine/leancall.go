package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// leanCall makes a tools/call on the session's stdio connection
// directly, without the SDK client's dispatch: one encoding of the
// request, and the answer decoded on the connection's reader, where
// then runs (see reply). progress is the call's progress token; empty
// asks for no progress. It reports false, without calling then, when
// the call must go through the SDK instead: the session is not stdio,
// or it speaks protocol 2026-07-28 or later (see upstreamProtocol).
// When the server answers that it needs input, then gets errNeedsSDK:
// the SDK's client runs that exchange, and the call is made again
// through it.
func (s *supervisor) leanCall(ctx context.Context, cs *mcp.ClientSession, tool string, args any, progress string, then func(yield func(), res *mcp.CallToolResult, err error)) bool {
	s.mu.Lock()
	line := s.line
	if s.session != cs {
		line = nil
	}
	s.mu.Unlock()
	if line == nil {
		return false
	}
	if ir := cs.InitializeResult(); ir == nil || ir.ProtocolVersion >= protocol20260728 {
		// Each request of 2026-07-28 carries the client's info and
		// capabilities in _meta, which the SDK's client writes.
		return false
	}
	if args == nil {
		args = map[string]any{}
	}
	var meta map[string]any
	if progress != "" {
		meta = map[string]any{"progressToken": progress}
	}
	params, err := encodeCallParams(tool, args, meta)
	if err != nil {
		then(readerYield(ctx), nil, fmt.Errorf("encoding the arguments of %s: %w", tool, err))
		return true
	}
	line.send(ctx, "tools/call", params, func(yield func(), raw json.RawMessage, err error) {
		if err != nil {
			then(yield, nil, err)
			return
		}
		// The connection's reader checked the line the result is part
		// of: it is valid JSON, and is not scanned again.
		res, err := decodeValidToolResult(raw)
		switch {
		case err != nil:
			then(yield, nil, fmt.Errorf("decoding the result of %s: %w", tool, err))
		case res.NeedsInput():
			then(yield, nil, errNeedsSDK)
		default:
			then(yield, res, nil)
		}
	})
	return true
}

// encodeCallParams encodes the params of a tools/call. Arguments given as
// JSON that encoding/json would copy as they are (compactRaw), with no
// _meta, the common case, are written by hand, to the same bytes.
func encodeCallParams(tool string, args any, meta map[string]any) ([]byte, error) {
	if raw, ok := args.(json.RawMessage); ok && meta == nil && compactRaw(raw) {
		b := make([]byte, 0, len(raw)+len(tool)+32)
		b = appendQuoted(append(b, `{"name":`...), tool)
		b = append(append(append(b, `,"arguments":`...), raw...), '}')
		return b, nil
	}
	return json.Marshal(struct {
		Name      string         `json:"name"`
		Arguments any            `json:"arguments"`
		Meta      map[string]any `json:"_meta,omitempty"`
	}{tool, args, meta})
}

// errNeedsSDK tells a lean call's caller to make the call again through
// the SDK's client.
var errNeedsSDK = errors.New("the call needs the SDK's client")

// leanResult is what decodeToolResult reads of a tools/call result.
type leanResult struct {
	Meta              mcp.Meta        `json:"_meta"`
	Content           []leanContent   `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
	InputRequests     json.RawMessage `json:"inputRequests"`
	RequestState      string          `json:"requestState"`
	ResultType        string          `json:"resultType"`
}

// leanContent is a content block, as far as text needs.
type leanContent struct {
	Type        string           `json:"type"`
	Text        string           `json:"text"`
	Meta        mcp.Meta         `json:"_meta"`
	Annotations *mcp.Annotations `json:"annotations"`
}

// decodeToolResult decodes a tools/call result. A result of text
// blocks, the common case, is decoded here, by hand when it is the
// plainest kind (fastDecodeToolResult), else with encoding/json; any
// other, with images, resources or a request for input, by the SDK,
// whose decoder costs a 32 KiB buffer a call. Both give the same
// result, but for structured content: this keeps it as the
// json.RawMessage it came as (equal JSON to what the SDK's decoded value
// encodes as, with its keys in the server's order and its numbers
// exact), so that it is not decoded and encoded again on its way
// through.
func decodeToolResult(raw json.RawMessage) (*mcp.CallToolResult, error) {
	if !json.Valid(raw) {
		return decodeToolResultJSON(raw) // which words the error
	}
	return decodeValidToolResult(raw)
}

// decodeValidToolResult is decodeToolResult for raw known to be valid
// JSON, such as a result read by a lineConn, which checks each line:
// the hand reading needs valid JSON, and a result can be megabytes.
func decodeValidToolResult(raw json.RawMessage) (*mcp.CallToolResult, error) {
	if res, ok := fastDecodeToolResult(raw); ok {
		return res, nil
	}
	return decodeToolResultJSON(raw)
}

// decodeToolResultJSON is decodeToolResult without the hand reading.
func decodeToolResultJSON(raw json.RawMessage) (*mcp.CallToolResult, error) {
	var w leanResult
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, err
	}
	plain := w.ResultType == "" || w.ResultType == "complete"
	plain = plain && len(w.InputRequests) == 0 && w.RequestState == ""
	for _, c := range w.Content {
		plain = plain && c.Type == "text"
	}
	if !plain {
		var res mcp.CallToolResult
		if err := json.Unmarshal(raw, &res); err != nil {
			return nil, err
		}
		return &res, nil
	}
	res := &mcp.CallToolResult{Meta: w.Meta, Content: make([]mcp.Content, len(w.Content)), IsError: w.IsError}
	if sc := w.StructuredContent; len(sc) > 0 && string(sc) != "null" {
		// Kept as the JSON it came as, unless it holds bytes that are
		// not UTF-8, which decoding replaces as the SDK's decoder does.
		if utf8.Valid(sc) {
			res.StructuredContent = sc
		} else if err := json.Unmarshal(sc, &res.StructuredContent); err != nil {
			return nil, err
		}
	}
	for i, c := range w.Content {
		res.Content[i] = &mcp.TextContent{Text: c.Text, Meta: c.Meta, Annotations: c.Annotations}
	}
	return res, nil
}

// fastDecodeToolResult reads the commonest result by hand: text blocks
// of only a type and a text, structured content, isError, and
// resultType "complete" if any, with keys in their exact names. It
// declines anything else (_meta, annotations, another block type, a
// request for input, a null where a value belongs, a key in another
// case), which decodeToolResultJSON then decodes; both give the same
// result. A text with a \u escape or bytes that are not UTF-8 is
// decoded by encoding/json, alone. raw must be valid JSON: a message's result
// is.
func fastDecodeToolResult(raw []byte) (*mcp.CallToolResult, bool) {
	var texts [][]byte
	var structured []byte
	isError := false
	ok := objectMembers(raw, func(key string, val []byte) bool {
		switch key {
		case "content":
			texts = texts[:0]
			return arrayElements(val, func(block []byte) bool {
				var text []byte
				isText := false
				if !objectMembers(block, func(k string, v []byte) bool {
					switch k {
					case "type":
						s, ok := plainString(v)
						isText = ok && s == "text"
						return isText
					case "text":
						text = v
						return v[0] == '"'
					}
					return !foldsTo(k, "type", "text", "_meta", "annotations") && k != "_meta" && k != "annotations"
				}) || !isText || text == nil {
					return false
				}
				texts = append(texts, text)
				return true
			})
		case "structuredContent":
			structured = val
			return true
		case "isError":
			isError = string(val) == "true"
			return isError || string(val) == "false"
		case "resultType":
			s, ok := plainString(val)
			return ok && s == "complete"
		case "_meta", "inputRequests", "requestState":
			return false
		}
		return !foldsTo(key, "_meta", "content", "structuredContent", "isError", "inputRequests", "requestState", "resultType")
	})
	if !ok {
		return nil, false
	}
	res := &mcp.CallToolResult{Content: make([]mcp.Content, len(texts)), IsError: isError}
	for i, t := range texts {
		s, ok := unquote(t)
		if !ok && json.Unmarshal(t, &s) != nil {
			return nil, false
		}
		res.Content[i] = &mcp.TextContent{Text: s}
	}
	if sc := structured; len(sc) > 0 && string(sc) != "null" {
		if !utf8.Valid(sc) {
			return nil, false
		}
		res.StructuredContent = json.RawMessage(sc)
	}
	return res, true
}

// protocol20260728 is the first protocol version whose requests carry
// the client's protocol version, info and capabilities in _meta.
const protocol20260728 = "2026-07-28"

// upstreamProtocol is the protocol version the engine asks servers for.
// Every server in use today speaks it, and it spares each request the
// client's info and capabilities, which under 2026-07-28 the server
// decodes again on every call (docs/benchmarks.md). A server that only
// speaks a later version answers with it, and the session uses that.
const upstreamProtocol = "2025-11-25"
