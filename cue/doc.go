// Package cue is voltmcp's config pipeline. It reads the four MCP config
// layers (user-shared, user, project-shared and project; see [Layer]), each
// in voltmcp's own dialect, the mcpServers dialect of Claude Code, Cursor,
// Windsurf and Cline, or VS Code's ([Dialect]); validates every file on its
// own against the CUE schema embedded from schema.cue; decides whether the
// project layers may load; merges what loads in Go; fills in the defaults;
// and returns the effective [Config] with a [Diagnostic] for every problem,
// each at the file, line and column of the value it is about.
//
// # Entry points
//
//   - [Load] reads the layers under [Locations] and returns a [Result]: the
//     Config, the sorted [Diagnostics], a [FileStatus] per file and the
//     [TrustDecision]. [LoadFiles] checks files given one by one, as
//     `voltmcp vet FILE...` does.
//   - [Options] tunes a load; its zero value loads for the interactive
//     [Surface], compiles the embedded schema, decides trust with
//     [DecideTrust] and runs no lint rules. Compile the schema once with
//     [NewSchema] and share it through Options.Schema.
//   - [ExpandEnv] resolves ${env:NAME} references. The pipeline never does:
//     a Config holds references as written, and the runtime expands them
//     where a process starts or a request is sent.
//   - [SetServerEnabled], [AddServers] (and [AddServer]) and
//     [RemoveServer] write config: they edit one of the two voltmcp-owned
//     files in place (unknown fields and order survive), atomically and
//     under a lock file; with [WriteOptions.TrustStore], a write to a
//     trusted project's file moves its trust record to the content
//     written, so voltmcp's own edit does not revoke trust. [CheckServer]
//     validates a definition the way a write does.
//   - [ReadClientFile] reads the MCP servers of another client's file
//     (the mcpServers and VS Code dialects, and Codex's config.toml) in
//     voltmcp's dialect, with each literal secret found and an
//     ${env:NAME} suggested for it (`voltmcp import`). [EditClientFile]
//     edits such a file's servers map the same way voltmcp's own are
//     edited, keeping a backup (`voltmcp setup`).
//   - [NewTrustRecord], [SaveTrustRecord], [ReadTrustRecords] and
//     [RemoveTrustRecord] keep the host's record of trusted projects, bound
//     to each file's SHA-256 (`voltmcp trust`).
//   - [Schema.JSONSchema], [SchemaSource] and [Codes] give the schema and
//     the catalogue of diagnostic codes, for editors, docs and SARIF.
//
// # Guarantees
//
// Problems in the files are diagnostics, never errors: the error a load
// returns is for a failure of the loader itself, such as a cancelled
// context, and the Result's Config is never nil.
//
// What a file can cost is bounded before CUE sees it. Files are read
// without blocking and only when regular (a FIFO or device is refused by
// name), at most [MaxFileSize] bytes; the parser bounds nesting at 64
// levels and refuses a file with more than [MaxServers] servers or
// [MaxValues] values at the first one past the bound.
//
// The pipeline fails closed. A server with an error in its definition is
// marked Invalid and disabled rather than run with the bad part dropped.
// Project layers take part in the merge only when trusted, and a project
// may adjust a user's server only within a fixed list of fields, only
// narrowing it; settings that decide trust, plugins or the audit log's
// failure mode are read from user layers only. A trust store that cannot
// be read adds no trust.
//
// A load reads files and nothing else: it writes nothing, starts nothing
// and reads no environment variable.
//
// # Imports
//
// Package cue imports only the standard library, cuelang.org/go and the
// leaves redact and safefile. It never imports engine, policies or wasm,
// nor the MCP SDK, OPA or wazero: the runtime consumes its plain Go values.
// internal/importrules enforces this; docs/architecture.md states the
// rules.
package cue
