// Package conformance runs the official MCP conformance suite
// (@modelcontextprotocol/conformance, pinned in internal/npmpeers) against
// voltmcp: in client mode against the engine, through the adapter command
// in client/, and in server mode against voltmcp serve --http. It holds
// only tests and that adapter. docs/conformance.md records the
// results and how to reproduce them.
package conformance
