package engine

import (
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/voltmcp/voltmcp/engine/internal/line"
	"github.com/voltmcp/voltmcp/engine/internal/tasks"
)

// taskTap reads each tool's execution.taskSupport from the raw
// tools/list responses of a stdio server's connection, which the go-sdk
// decodes into a Tool that has no such field. It is a [line.Tap] that
// consumes nothing: it notes the ids of the tools/list requests the
// go-sdk writes, and reads the responses to them before the go-sdk gets
// them, into its [tasks.Listings], so that what a listing's page said
// is there when the page returns (Take). An HTTP server's responses are
// read into a Listings of their own by its [transport.HeaderTransport].
type taskTap struct{ l *tasks.Listings }

// Outbound notes a tools/list request.
func (t taskTap) Outbound(msg jsonrpc.Message) { t.l.Request(msg) }

// Inbound reads the task support of the tools a response to a tools/list
// request lists, and leaves the response to the go-sdk.
func (t taskTap) Inbound(_ *line.Conn, msg jsonrpc.Message) (bool, func(func())) {
	t.l.Response(msg)
	return false, nil
}

// Drain has nothing to wait for: the tap writes nothing.
func (t taskTap) Drain() {}
