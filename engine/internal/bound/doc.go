// Package bound keeps what an untrusted MCP server sends within limits
// before any of it is stored, shown to a person or given to a model. It
// validates tool names, cleans text of escape sequences and invisible
// characters, bounds input schemas without ever following a $ref, and
// trims an oversized tool list to a stable subset ([Tools]), reporting
// everything it dropped or changed. A [Listing] applies the same limits
// to one discovery of a server, page by page: its tools across pages,
// its resources, resource templates and prompts, with the items dropped
// or cleaned listed for a person. [Limits] says how much, from the
// defaults, a config and the VOLTMCP_MAX_* environment ([FromEnv]).
//
// Every function is pure: no I/O, no global state. The package works on
// its own small types ([Tool], [Resource], [Prompt], ...), which the
// engine converts its metadata to and from; it must not import the
// engine, cue, policies or wasm, nor know where the metadata goes (the
// cache, the search index, a model).
package bound
