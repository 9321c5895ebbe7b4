package jsonwire

import (
	"encoding/json"
	"strconv"
)

// CallAnswer is the result of a call through the gateway's mcp tool as
// the engine answers it: a tools/call result whose one text block is
// Text and whose structured content is Data. Its wire form is that of
// the engine's own types (GatewayResult and CallResult in package
// engine), which a test there checks field for field.
type CallAnswer struct {
	Text    string
	IsError bool
	// Complete adds "resultType": "complete", as the go-sdk's server
	// does for a client of protocol 2026-07-28 or later.
	Complete bool
	Data     CallData
}

// CallData is the structured content of a [CallAnswer].
type CallData struct {
	Server  string `json:"server"`
	Tool    string `json:"tool"`
	Status  string `json:"status"`
	Risk    string `json:"risk"`
	Content string `json:"content"`
	// Structured is the server's structured content, JSON; nil means
	// none.
	Structured json.RawMessage `json:"structuredContent,omitempty"`
	Truncation *Truncation     `json:"truncation,omitempty"`
	Cache      *CacheRef       `json:"cache,omitempty"`
	// Media is not written by hand: AppendCallAnswer declines a CallData
	// that has any.
	Media []MediaItem `json:"media,omitempty"`
	Notes []string    `json:"notes,omitempty"`
}

// MediaItem is one entry of [CallData.Media], the engine's MediaItem.
type MediaItem struct {
	Kind     string    `json:"kind"`
	MIMEType string    `json:"mimeType"`
	Bytes    int       `json:"bytes"`
	Inline   bool      `json:"inline"`
	Reason   string    `json:"reason,omitempty"`
	Cache    *CacheRef `json:"cache,omitempty"`
}

// Truncation says how much of an output a [CallData] shows.
type Truncation struct {
	Truncated     bool `json:"truncated"`
	ReturnedBytes int  `json:"returnedBytes"`
	TotalBytes    int  `json:"totalBytes"`
	ReturnedLines int  `json:"returnedLines"`
	TotalLines    int  `json:"totalLines"`
}

// CacheRef points at a full output in the engine's output store.
type CacheRef struct {
	ID     string `json:"id"`
	Read   string `json:"read"`
	Offset int64  `json:"offset,omitempty"`
}

// callAnswerJSON is the wire form of a CallAnswer, in the go-sdk's field
// order of a CallToolResult.
type callAnswerJSON struct {
	Content           [1]textJSON `json:"content"`
	StructuredContent CallData    `json:"structuredContent"`
	IsError           bool        `json:"isError,omitempty"`
	ResultType        string      `json:"resultType,omitempty"`
}

type textJSON struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// marshalCallAnswer is what AppendCallAnswer must equal: encoding/json's
// encoding of a.
func marshalCallAnswer(a CallAnswer) ([]byte, error) {
	w := callAnswerJSON{Content: [1]textJSON{{Type: "text", Text: a.Text}}, StructuredContent: a.Data, IsError: a.IsError}
	if a.Complete {
		w.ResultType = "complete"
	}
	return json.Marshal(w)
}

// AppendCallAnswer appends the encoding of a to b, byte for byte as
// json.Marshal encodes it, sparing the answer encoding/json's
// reflection. It reports false, having appended nothing, when a's
// structured content is set but is not JSON that encoding/json would
// copy as it is ([CompactRaw]), or a has media items: the caller then
// leaves the whole answer to encoding/json.
func AppendCallAnswer(b []byte, a CallAnswer) ([]byte, bool) {
	d := &a.Data
	if (d.Structured != nil && !CompactRaw(d.Structured)) || len(d.Media) > 0 {
		return b, false
	}
	b = append(b, `{"content":[{"type":"text","text":`...)
	b = AppendQuoted(b, a.Text)
	b = append(b, `}],"structuredContent":{"server":`...)
	b = AppendQuoted(b, d.Server)
	b = append(b, `,"tool":`...)
	b = AppendQuoted(b, d.Tool)
	b = append(b, `,"status":`...)
	b = AppendQuoted(b, d.Status)
	b = append(b, `,"risk":`...)
	b = AppendQuoted(b, d.Risk)
	b = append(b, `,"content":`...)
	b = AppendQuoted(b, d.Content)
	if d.Structured != nil {
		b = append(b, `,"structuredContent":`...)
		b = append(b, d.Structured...)
	}
	if t := d.Truncation; t != nil {
		b = append(b, `,"truncation":{"truncated":`...)
		b = strconv.AppendBool(b, t.Truncated)
		b = append(b, `,"returnedBytes":`...)
		b = strconv.AppendInt(b, int64(t.ReturnedBytes), 10)
		b = append(b, `,"totalBytes":`...)
		b = strconv.AppendInt(b, int64(t.TotalBytes), 10)
		b = append(b, `,"returnedLines":`...)
		b = strconv.AppendInt(b, int64(t.ReturnedLines), 10)
		b = append(b, `,"totalLines":`...)
		b = strconv.AppendInt(b, int64(t.TotalLines), 10)
		b = append(b, '}')
	}
	if c := d.Cache; c != nil {
		b = append(b, `,"cache":{"id":`...)
		b = AppendQuoted(b, c.ID)
		b = append(b, `,"read":`...)
		b = AppendQuoted(b, c.Read)
		if c.Offset != 0 {
			b = append(b, `,"offset":`...)
			b = strconv.AppendInt(b, c.Offset, 10)
		}
		b = append(b, '}')
	}
	if len(d.Notes) > 0 {
		b = append(b, `,"notes":[`...)
		for i, n := range d.Notes {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendQuoted(b, n)
		}
		b = append(b, ']')
	}
	b = append(b, '}')
	if a.IsError {
		b = append(b, `,"isError":true`...)
	}
	if a.Complete {
		b = append(b, `,"resultType":"complete"`...)
	}
	return append(b, '}'), true
}
