// Package ui is `voltmcp ui`: the full-screen MCP server manager of a
// terminal, on Bubble Tea, Bubbles and Lip Gloss.
//
// It is a face above the management RPC, not above the engine: every
// thing it shows or does is one JSON-RPC method of docs/rpc.md, made
// through a [Client] (the user's daemon, or an engine of the same process
// served over a pipe: the same wire either way), and its state follows the
// mcp_events.v1 stream ([Events]) instead of polling. The answers decode
// into this package's own types, written from the wire's
// (docs/rpc.schema.json, checked by TestTypesAreTheWireTypes), so the
// package imports neither the engine nor package rpc.
//
// Every string a server gave (a name, a title, an error, a description, a
// schema) passes through package sanitize before it is drawn, so that no
// escape sequence, bidi override or invisible character of a server
// reaches the terminal.
//
// The model is one [tea.Model] with one view per screen (the server list,
// a server's tools, the help); a later screen (auth, held pin changes,
// logs) is one more view beside them.
package ui
