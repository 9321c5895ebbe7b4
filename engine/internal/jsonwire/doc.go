// Package jsonwire holds every JSON reader and writer the engine writes
// by hand instead of calling encoding/json: the fast decoding of a
// JSON-RPC message's envelope, of a tools/call's params and of a
// server's tools/call result, and the hand writing of a call's answer,
// of a tools/call's params, of a JSON-RPC response and request, and of
// JSON strings. Each sits beside the encoding/json (or go-sdk) code it
// must equal, and a differential fuzzer checks the two against each
// other: whatever the hand version reads or writes, the standard one
// reads or writes the same; the hand version may decline an input,
// which its caller then gives to encoding/json.
//
// The hand versions exist because they are cheaper on the path of every
// proxied call (RATIONALE.md): no reflection, fewer allocations.
// They read only valid JSON (the caller checks it first, once) and
// decline whatever they might read differently from encoding/json:
// escapes in keys, keys that differ from a field's name only in case,
// nulls, and strings that are not plain.
//
// The package must not hold policy: it knows the wire forms of MCP and
// JSON-RPC, not what the engine does with them. It imports only the
// standard library and the MCP go-sdk.
package jsonwire
