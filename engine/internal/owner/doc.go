// Package owner guards the gateway's own HTTP surface (voltmcp serve
// --http): its [Handler] lets through only the requests that name a
// loopback host, come from no origin or a loopback one, and carry the
// bearer token of the user who started the server. The token is what
// keeps another user of the machine, who can reach a loopback port as
// well, from calling the servers with this user's credentials; the
// host and origin checks refuse DNS rebinding and other sites' pages.
//
// The package checks requests; it does not serve MCP, make the token
// or know the engine. It must not import the engine, cue, policies or
// wasm, and no answer it gives may echo what a request presented.
package owner
