package jsonwire

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolResultJSON is what decodeToolResultJSON reads of a tools/call
// result.
type toolResultJSON struct {
	Meta              mcp.Meta          `json:"_meta"`
	Content           []textContentJSON `json:"content"`
	StructuredContent json.RawMessage   `json:"structuredContent"`
	IsError           bool              `json:"isError"`
	InputRequests     json.RawMessage   `json:"inputRequests"`
	RequestState      string            `json:"requestState"`
	ResultType        string            `json:"resultType"`
}

// textContentJSON is a content block, as far as text needs.
type textContentJSON struct {
	Type        string           `json:"type"`
	Text        string           `json:"text"`
	Meta        mcp.Meta         `json:"_meta"`
	Annotations *mcp.Annotations `json:"annotations"`
}

// DecodeToolResult decodes a tools/call result. A result of text
// blocks, the common case, is decoded here, by hand when it is the
// plainest kind (fastDecodeToolResult), else with encoding/json; any
// other, with images, resources or a request for input, by the go-sdk,
// whose decoder costs a 32 KiB buffer a call. Both give the same
// result, but for structured content: this keeps it as the
// json.RawMessage it came as (equal JSON to what the go-sdk's decoded
// value encodes as, with its keys in the server's order and its numbers
// exact), so that it is not decoded and encoded again on its way
// through.
func DecodeToolResult(raw json.RawMessage) (*mcp.CallToolResult, error) {
	if !json.Valid(raw) {
		return decodeToolResultJSON(raw) // which words the error
	}
	return DecodeValidToolResult(raw)
}

// DecodeValidToolResult is [DecodeToolResult] for raw known to be valid
// JSON, such as a result read off a connection that checks each message:
// the hand reading needs valid JSON, and a result can be megabytes.
func DecodeValidToolResult(raw json.RawMessage) (*mcp.CallToolResult, error) {
	if res, ok := fastDecodeToolResult(raw); ok {
		return res, nil
	}
	return decodeToolResultJSON(raw)
}

// decodeToolResultJSON is DecodeToolResult without the hand reading.
func decodeToolResultJSON(raw json.RawMessage) (*mcp.CallToolResult, error) {
	var w toolResultJSON
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
		// not UTF-8, which decoding replaces as the go-sdk's decoder
		// does.
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
// decoded by encoding/json, alone. raw must be valid JSON: a message's
// result is.
func fastDecodeToolResult(raw []byte) (*mcp.CallToolResult, bool) {
	var texts [][]byte
	var structured []byte
	isError := false
	ok := ObjectMembers(raw, func(key string, val []byte) bool {
		switch key {
		case "content":
			texts = texts[:0]
			return ArrayElements(val, func(block []byte) bool {
				var text []byte
				isText := false
				if !ObjectMembers(block, func(k string, v []byte) bool {
					switch k {
					case "type":
						s, ok := PlainString(v)
						isText = ok && s == "text"
						return isText
					case "text":
						text = v
						return v[0] == '"'
					}
					return !FoldsTo(k, "type", "text", "_meta", "annotations") && k != "_meta" && k != "annotations"
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
			s, ok := PlainString(val)
			return ok && s == "complete"
		case "_meta", "inputRequests", "requestState":
			return false
		}
		return !FoldsTo(key, "_meta", "content", "structuredContent", "isError", "inputRequests", "requestState", "resultType")
	})
	if !ok {
		return nil, false
	}
	res := &mcp.CallToolResult{Content: make([]mcp.Content, len(texts)), IsError: isError}
	for i, t := range texts {
		s, ok := Unquote(t)
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
