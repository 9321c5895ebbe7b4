// Package conformance runs the official MCP conformance suite
// (@modelcontextprotocol/conformance, pinned in internal/npmpeers) against
// voltmcp. It holds only a test, and the adapter command in client/ that
// the suite drives in client mode. docs/conformance.md records the
// results and how to reproduce them.
package conformance
