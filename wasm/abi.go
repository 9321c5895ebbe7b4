package wasm

import "encoding/json"

// This file is the plugin ABI, version 1: the names a module exports, their
// signatures, and the JSON documents that cross the boundary. docs/plugins.md
// explains it to plugin authors; a change here is a change to that document.
//
// A call goes like this. The host asks the guest for a buffer with
// ExportAlloc, writes the UTF-8 JSON input into it, and calls ExportClassify
// or ExportShape with the buffer's pointer and length. The guest answers with
// one u64: the pointer of its UTF-8 JSON output in the high 32 bits and the
// output's length in the low 32 bits. The host copies the output and then
// releases both buffers with ExportFree. The guest may assume calls on one
// instance never overlap.

// ABIVersion is the version of the ABI this host speaks.
const ABIVersion = 1

// Export names. Allocator names carry a prefix so they cannot clash with
// the malloc and free of a guest's C library.
const (
	// ExportABIMarker is the ABI version marker: a function taking and
	// returning nothing, which the host never calls. Its name alone says the
	// module targets ABI version 1, so checking it runs no guest code. A
	// module exporting a marker of another version (voltmcp_abi_v2, ...)
	// is refused by name.
	ExportABIMarker = "voltmcp_abi_v1"

	// ExportAlloc is (size i32) -> (ptr i32): it returns a buffer of at
	// least size bytes in the exported memory, or 0 when it cannot.
	ExportAlloc = "voltmcp_alloc"

	// ExportFree is (ptr i32, size i32) -> (): it releases a buffer that
	// ExportAlloc returned or that classify or shape returned as output.
	ExportFree = "voltmcp_free"

	// ExportClassify is (ptr i32, len i32) -> (packed i64): it reads a
	// ClassifyInput document and returns a Classification document.
	ExportClassify = "classify"

	// ExportShape is (ptr i32, len i32) -> (packed i64): it reads a
	// ShapeInput document and returns a Shaped document.
	ExportShape = "shape"

	// ExportMemory is the linear memory the buffers live in.
	ExportMemory = "memory"

	// ExportInitialize, when exported, is called once when an instance
	// starts (the "reactor" convention of WASI toolchains). Its signature
	// must be () -> ().
	ExportInitialize = "_initialize"

	// abiMarkerPrefix starts every version marker's name.
	abiMarkerPrefix = "voltmcp_abi_v"
)

// ImportModuleWASI is the only module a plugin may import functions from.
// The host instantiates it with no preopened directories, no environment,
// no arguments, no sockets, a fake clock, a deterministic random source,
// and stdout and stderr captured into a small bounded buffer that is only
// read for diagnostics.
const ImportModuleWASI = "wasi_snapshot_preview1"

// Result size limits. A larger result is an oversized fault.
const (
	// MaxClassifyOutput bounds a classify result in bytes.
	MaxClassifyOutput = 64 << 10
	// MaxShapeOutput bounds a shape result in bytes.
	MaxShapeOutput = 16 << 20
	// MaxReasonBytes bounds the reason of a classification; longer reasons
	// are cut on a UTF-8 boundary.
	MaxReasonBytes = 512
)

// Risk classes. They are informational: they describe a tool for display,
// search and audit, and never grant or deny anything.
const (
	RiskRead        = "read"
	RiskWrite       = "write"
	RiskDestructive = "destructive"
	RiskUnknown     = "unknown"
)

// ClassifyInput is the document classify receives: one tool of one server.
type ClassifyInput struct {
	// Server is the configured server ID.
	Server string `json:"server"`
	// Tool is the tool's name as the server reports it.
	Tool string `json:"tool"`
	// Title is the tool's display title; it may be empty.
	Title string `json:"title,omitempty"`
	// Description is the tool's description; it may be empty.
	Description string `json:"description,omitempty"`
	// InputSchema is the tool's JSON Schema for its arguments, verbatim.
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
	// Annotations are the tool's MCP annotations (readOnlyHint,
	// destructiveHint, idempotentHint, openWorldHint, ...), verbatim.
	Annotations json.RawMessage `json:"annotations,omitempty"`
	// TrustToolHints says whether the server's config trusts its hints
	// (the server field trustToolHints, honoured from user layers only).
	// A server's hints are its own claims and may be wrong or hostile:
	// untrusted, they should only ever raise a tool's risk.
	TrustToolHints bool `json:"trust_tool_hints"`
}

// Classification is the document classify returns.
type Classification struct {
	// Risk is one of RiskRead, RiskWrite, RiskDestructive or RiskUnknown.
	Risk string `json:"risk"`
	// Reason says what decided the risk, for search, describe and audit.
	// It must not be empty.
	Reason string `json:"reason"`
	// Module names the module that decided. The host fills it in; a
	// guest need not send it and whatever it sends is replaced.
	Module string `json:"module,omitempty"`
	// Faulted is set by Chain.Classify when a classifier asked before the
	// answer faulted, so the answer may not be the one the chain gives
	// when every module works: a caller should not keep it for long.
	Faulted bool `json:"-"`
}

// ShapeInput is the document shape receives: one tool result.
type ShapeInput struct {
	// Server is the configured server ID.
	Server string `json:"server"`
	// Tool is the tool's name.
	Tool string `json:"tool"`
	// Risk is the tool's classified risk.
	Risk string `json:"risk"`
	// Content is the result's content items, in order.
	Content []Content `json:"content"`
	// Limits is what the host will let through after shaping.
	Limits Limits `json:"limits"`
}

// Limits is the hard output cap the host applies after every shaper.
// A zero or negative field leaves that dimension uncapped.
type Limits struct {
	// MaxBytes bounds the total UTF-8 bytes of all text items.
	MaxBytes int `json:"max_bytes"`
	// MaxLines bounds the total lines of all text items; each text item
	// starts on a new line.
	MaxLines int `json:"max_lines"`
}

// Content is one content item of a tool result. Only text items carry
// their data; other items cross the boundary as type, MIME type and size,
// so a shaper can count or drop them but never read or forge them.
type Content struct {
	// Type is the MCP content type: text, image, audio, resource,
	// resource_link, ...
	Type string `json:"type"`
	// Text is the text of a text item and empty otherwise.
	Text string `json:"text,omitempty"`
	// MIMEType is the MIME type of a non-text item, when known.
	MIMEType string `json:"mime_type,omitempty"`
	// Size is the size in bytes of a non-text item's data, when known.
	Size int `json:"size,omitempty"`
}

// Shaped is the document shape returns.
type Shaped struct {
	// Content is the content to show. Text items may be rewritten, split,
	// merged, added or dropped. Non-text items may be dropped but must
	// otherwise appear as they came in (same type, MIME type and size) and
	// in their original order; the host refuses anything else as malformed,
	// so the caller can map them back to the real items in order.
	Content []Content `json:"content"`
	// Notes says what the shaper did, e.g. "stripped 3 ANSI sequences".
	Notes []string `json:"notes,omitempty"`
}

// validRisk reports whether r is one of the four risk classes.
func validRisk(r string) bool {
	switch r {
	case RiskRead, RiskWrite, RiskDestructive, RiskUnknown:
		return true
	}
	return false
}
