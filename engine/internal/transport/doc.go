// Package transport is how the engine reaches an upstream MCP server,
// below the MCP protocol: it starts and stops the process of a stdio
// server and everything that process starts, and carries the requests
// of an HTTP server to its configured origin and nowhere else.
//
// For stdio servers it holds [Stdio], the go-sdk transport that starts
// the server and speaks to it a message a line; [Start] and [Process] (a
// process group of the server's own, the stop sequence the MCP spec
// describes, run marks and, on Linux, the reaper that kills what a
// server started even after the gateway died: [Runs]); [ResolveCommand];
// and [ChildEnv], the restricted environment a server gets. A [Ring]
// keeps the last bytes of a server's stderr, and gives its tail or last
// line for an error.
//
// For HTTP servers it holds [HeaderTransport], which adds the configured
// headers and refuses every request to another [Origin] than the
// configured URL's, bounds each message of a response, passes on only
// the first endpoint event of a legacy SSE stream, bounds the requests
// the server sends the client on every event stream with the bound of a
// stdio connection (line.PeerRequests: see peerGate), and fails a response
// that carries the gateway's own [InstanceHeader] ([SelfError]), and
// reads each tool's task support from the answers to tools/list requests
// as the SDK reads them ([HeaderTransport.Listings]); [HTTPClient], which
// refuses redirects to another origin; and [ConnectHTTP], the Streamable
// HTTP to SSE fallback.
//
// A [Scrubber] removes resolved secret values from the text an engine
// shows. [Explain] words an error that ended a connection so that it
// names the server, the operation and the cause: an exit status and
// stderr tail, a reset, the last HTTP status, a message nested too deep.
//
// The package must not know the config, the Engine or MCP beyond the
// go-sdk's transports: what a server's config says (its env entries, its
// headers and auth, which transport it names) is resolved by the caller
// and given as plain values and functions. It must not import the
// engine, cue, policies or wasm. Linking it makes any program a reaper
// when started as one (see reaper_linux.go); with any other environment
// that does nothing.
package transport
