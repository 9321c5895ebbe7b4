// Package policies evaluates voltmcp's security decisions as Rego policies.
//
// Five decision areas each live in one Rego package with one entrypoint,
// decision: voltmcp.trust (may a project's MCP config load?),
// voltmcp.tools (is a tool exposed, and may it be called?), voltmcp.remote
// (may a caller run an RPC or daemon command?), voltmcp.redact (what is
// secret?) and voltmcp.media (may an image or audio clip of an answer
// reach the agent as it is?). The default policies are embedded (see the rego directory) and
// reproduce the gateway's built-in rules. Security teams extend them with
// their own files: deny, hide and allow rules for users, deny-only rules for
// projects.
//
// Load parses and compiles everything once and prepares one query per area.
// Decisions are typed, carry the reasons and the file:line of the rules that
// produced them, are memoized by input, and fail closed: any error, timeout
// or malformed result is a deny (or "untrusted") naming the policy file and
// the error, never an allow.
//
// A tools input has one flat form for a log of calls, ToolInput.Record,
// which ToolInputRecord.Input reads back: the engine's audit log records
// each call's input with it, and Replay decides recorded calls again on
// what it reads.
//
// Policies imports only OPA, redact, safefile and the standard library; it
// never imports the engine, so it exchanges plain Go values and JSON with
// it.
package policies
