// Package tasks reads each tool's task support (the execution.taskSupport
// of MCP's Tool, "forbidden", "optional" or "required") from the raw
// answers to a session's tools/list requests: the go-sdk decodes a
// listing into a Tool that has no such field, so the engine reads it off
// the wire beside the go-sdk, on a stdio server's connection (a tap of
// engine/internal/line) and on an HTTP server's responses (a tee of
// engine/internal/transport). Both hand the raw messages to one
// [Listings], and both read a listing with [Read].
//
// Everything here reads untrusted bytes and fails closed: a message that
// is not a listing's answer, or a malformed one, gives no task support,
// and never an error. The package holds no I/O and imports only the
// standard library and the go-sdk's jsonrpc package.
package tasks
