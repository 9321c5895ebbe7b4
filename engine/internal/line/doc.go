// Package line is the newline-delimited JSON-RPC connection the engine
// speaks on both of its stdio hops: to the agent that runs `voltmcp
// serve`, and to each stdio server. [Transport] is an mcp.Transport, a
// drop-in for the go-sdk's IOTransport with the same wire behaviour
// (but that JSON-RPC batches are refused: MCP removed them in
// 2025-06-18), that reads each message once, a line at a time, from a
// read buffer reused across messages; the go-sdk's decoder allocates a
// fresh 32 KiB buffer for each of its three decoding passes, and on a
// small machine garbage is latency (RATIONALE.md).
//
// Beyond what the go-sdk sees, a [Conn] offers two things to the
// engine's fast path: a [Tap] that sees each inbound message first and
// may answer it itself, and calls of the engine's own on a client
// connection ([Conn.Send]) whose answers are handed to a continuation
// on the connection's reader. Both run work on the reader, under the
// rule of engine/internal/turn: the work yields the reader before it
// blocks, and another goroutine (a lane) reads on meanwhile.
//
// The package frames, decodes and routes messages; it must not decide
// what a message means beyond that: what the tap answers, and how, is
// the engine's. It imports the standard library, the go-sdk's jsonrpc
// and mcp packages, and the engine's jsonwire and turn.
package line
