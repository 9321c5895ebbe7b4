// Package rpc serves voltmcp's management API: the spec's RPC commands
// (list_mcp_servers, connect_mcp_server, start_mcp_server_auth, ...), the
// mcp_events.v1 event stream, and voltmcp's own methods (pins, a tool
// call through the gateway), as JSON-RPC 2.0 with one object per line
// over any connection (see [Server.Serve]).
//
// It is a face above the engine: a method decodes its params strictly
// (an unknown field, a duplicate key, a key in the wrong case, a wrong
// type or trailing data is refused, naming the field), calls one method
// of [engine.Engine], and encodes the answer in the wire types of this
// package (McpServerSummary, McpRecentCallSummary, ...), which follow the
// spec field for field and add voltmcp's fields beside them. docs/rpc.md
// documents every method, and docs/rpc.schema.json the wire types.
package rpc
