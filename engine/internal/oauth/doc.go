// Package oauth is the OAuth client of an MCP server with auth type
// "oauth": the per-connection [Handler] the go-sdk's HTTP transport calls
// when a server answers 401 (or 403 insufficient_scope), the [State] a
// server keeps across its connections, and the token [Store].
//
// The go-sdk's authorization code handler does the protocol (protected
// resource and authorization server metadata, client registration, PKCE,
// the token exchange and refresh); [Handler] wraps it: it runs one
// authorization at a time per server, asks the user through an Authorize
// function its caller gives (and says "authorization required" without
// one), bounds the user's time, sends every request through an
// [oauthguard.Guard], scrubs every secret it learns from the text it
// returns, and tells its caller what happens through [Hooks].
//
// The device authorization grant (RFC 8628, [FlowDevice]), which the
// SDK lacks, is the handler's own: the same discovery and client
// registration, then golang.org/x/oauth2's DeviceAuth and
// DeviceAccessToken through the same guard; the user is shown the page
// and the code through a DeviceAuthorize function its caller gives, after
// the answer is checked ([DeviceCode]), and the token is stored as the
// authorization code flow's is. [FlowAuto] falls back to that flow when
// the authorization server offers no device grant.
//
// The [Store] is one file per server (<agent-dir>/mcp/auth/<id>.json,
// 0600, see [Path]) holding a [File]: the token, the URL it was issued
// for and the client it was issued to. A [TokenSource] hands out the
// stored token and refreshes it when it expires; a refresh holds the
// file's lock, so that gateways sharing an agent dir refresh one after
// the other and take each other's token rather than present a used
// refresh token.
//
// The package must not know the config, the Engine or its statuses and
// events: the caller resolves a server's auth config (environment
// references, settings) into [Options] and maps the hooks onto its own
// statuses and events. It must not import the engine, cue, policies or
// wasm; no error it returns may quote what a server sent beyond what
// [oauthguard] lets through, nor a secret it has seen.
package oauth
