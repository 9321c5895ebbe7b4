package rpc

import (
	"context"
	"time"
)

// logParams are read_mcp_server_log's params: the server, and how many
// of its last records (zero: the engine's default).
type logParams struct {
	ID    string `json:"id" rpc:"required"`
	Limit int    `json:"limit"`
}

// McpServerLog is the answer of read_mcp_server_log: the last records of
// a server's log, oldest first, and whether older ones were left out.
type McpServerLog struct {
	ID        string         `json:"id"`
	Records   []McpLogRecord `json:"records"`
	Truncated bool           `json:"truncated"`
}

// McpLogRecord is one record of a server's log: what a stdio server
// wrote to stderr (kind "stderr"), an error of its transport ("error"),
// or a note of voltmcp's ("note"). Text was scrubbed of the server's
// secrets when it was written; it is a server's text, to be sanitized
// before it is shown.
type McpLogRecord struct {
	Time string `json:"time"`
	Kind string `json:"kind"`
	Text string `json:"text"`
}

func (c *connection) serverLog(_ context.Context, p *logParams) (any, *Error) {
	if p.Limit < 0 {
		return nil, errorf(CodeInvalidParams, "field %q: want a count of 0 or more, got %d", "limit", p.Limit)
	}
	recs, more, err := c.s.eng.ServerLog(p.ID, p.Limit)
	if err != nil {
		return nil, serverError(p.ID, err)
	}
	out := McpServerLog{ID: p.ID, Records: make([]McpLogRecord, len(recs)), Truncated: more}
	for i, r := range recs {
		out.Records[i] = McpLogRecord{Time: r.Time.UTC().Format(time.RFC3339Nano), Kind: r.Kind, Text: r.Text}
	}
	return out, nil
}
