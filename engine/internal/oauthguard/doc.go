// Package oauthguard checks what the OAuth client of an MCP server
// (discovery, registration, the token requests and refreshes) may reach
// and what it may read: its [Guard] is the http.RoundTripper under the
// go-sdk's OAuth handler, and holds what the MCP authorization spec asks
// of a client for the URLs an MCP server and its authorization server
// name:
//
//   - Before each request: the URL is https, or plain http to a loopback
//     address when the server's auth says allowInsecureLoopback; its host
//     is not a literal private, link-local, loopback (without that
//     setting) or otherwise reserved address ([Policy.CheckURL]).
//   - At each connect: the address the dialer actually connects to, after
//     DNS and on every redirect, is refused the same way, so a name that
//     resolves, or is rebound, to 169.254.169.254 gets nowhere.
//   - Each answer is read before the SDK sees it: metadata names only
//     URLs that pass CheckURL, and an authorization server lists S256 in
//     code_challenge_methods_supported; a registration answer has our
//     redirect URI and a bounded client_id and client_secret; an error
//     answer is cut down to its error code, so that no error on these
//     paths quotes what a server sent.
//   - Authorization server metadata names as its issuer the URL it was
//     fetched for (RFC 8414 §3.3). Its device_authorization_endpoint,
//     which the SDK's metadata type lacks, is kept for the device grant
//     ([Guard.DeviceEndpoint]).
//   - A pre-registered client (clientId, clientSecret) goes only to the
//     authorization server it was issued by: auth.issuer, or without it
//     one at the origin of the server's url. The protected resource
//     metadata naming another one is refused, and so is any request for
//     another one's metadata, before the client's credentials could be
//     sent ([Policy.CheckIssuer]).
//
// The user's own URLs (the server's url and a configured
// resourceMetadataUrl) are exempt from the address checks, not from the
// scheme: the rules are about URLs a server tells us.
//
// The package checks; it does not authorize. The authorization flow (the
// go-sdk's OAuth handler, the user's consent, the token store) is package
// engine/internal/oauth's, which builds a [Policy] from a server's
// resolved auth config and gives it to [New]. The package must not import the engine, cue, policies or
// wasm, and no error it returns may quote what a server sent beyond an
// origin and a valid OAuth error code.
package oauthguard
