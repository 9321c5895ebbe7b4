// Package wasm is voltmcp's plugin host: it runs WebAssembly modules that
// rate a tool's risk (classify) and shape a tool's output before the model
// reads it (shape), in a wazero runtime without cgo. It also embeds the
// built-in module, a Go guest built from builtin/guest, which does both.
// The ABI, version 1, is in abi.go and explained to plugin authors in
// docs/plugins.md.
//
// # Entry points
//
//   - [NewHost] makes a [Host] from [Options], whose zero value is ready to
//     use: [DefaultMemoryPages] of linear memory per instance,
//     [DefaultTimeout] per call, a pool of calls per module and an
//     in-memory compilation cache (set Options.CacheDir to keep compiled
//     code across processes).
//   - [Host.Load] checks a module (read from disk with [ReadModule]) and
//     returns a [Module]; [Host.Builtin] returns the built-in one.
//   - [Module.Classify] and [Module.Shape] run one call; their error is a
//     [*Fault], which Options.OnFault also receives.
//   - [Chain] runs classifiers and shapers in order, the way the gateway
//     does; [Cap] is the hard output cap it applies last.
//
// # Guarantees
//
// A module runs sandboxed: it may import only WASI functions, and gets no
// files, environment, network or arguments; what it writes to stdout and
// stderr is kept (at most 4 KiB) for its fault. [Host.Load] refuses a
// module whose SHA-256 differs from its pin, whose imports, exports or
// signatures do not match the ABI, whose ABI marker is of another version,
// or whose memory exceeds the page limit, all without compiling it or
// running any of its code.
//
// Every call is bounded: by Options.Timeout whatever the guest's code looks
// like (Load puts a deadline check at the entry of every function, besides
// wazero's at loop back-edges), by the memory page limit, and by
// [MaxClassifyOutput] and [MaxShapeOutput] on what it returns. A call that
// faults (trap, deadline, memory, malformed or oversized answer) closes its
// instance. An instance serves one server only, so no call sees what
// another server's output left in a guest.
//
// The chain fails closed and never fails: a classifier that faults is
// skipped, and when none answers the risk is [RiskUnknown]; a shaper that
// faults is skipped with a note; text is cut to [ShapeInputFactor] times
// the limits before shaping and capped by [Cap] after it, whatever the
// shapers returned. Text a guest returns for display is cleaned by package
// sanitize.
//
// # Imports
//
// Package wasm imports only the standard library, tetratelabs/wazero and
// the leaves sanitize and safefile. It never imports engine, cue or
// policies, nor the MCP SDK: the engine hands it plain values (see
// [ClassifyInput] and [ShapeInput]). internal/importrules enforces this;
// docs/architecture.md states the rules.
package wasm
