// Package audit keeps voltmcp's audit log: one JSON object a line, each
// line carrying the hash of the line before it, so that an edit, a removed
// line or a reordering anywhere in the kept history shows up in Verify.
//
// # Records and the chain
//
// A Record holds the fields the spec lists for an audit entry (time,
// workspace and session, caller surface, server, tool or resource or
// prompt, risk, status, duration, result size and hash, truncation and
// cache id, an argument summary without values, the policy decision) plus
// a free-form Detail. A call's Detail holds the rest of the tools input
// its decision was made on (risk_reason, pin_state, pin_change,
// quarantined, server_scope, transport, command, args, url,
// include_tools, exclude_tools, and title and annotations when the tool
// has them) and the tool's hash: the engine writes it as
// policies.ToolInput.Record makes it, and `voltmcp policy replay` reads
// it back with policies.ToolInputRecord.Input. The other kinds' Detail
// says what they are about: trust decisions, pin changes, approvals,
// config changes, plugin faults, policy errors. The log
// fills in two fields itself: Seq, which counts records from 1 and never
// restarts, not even across rotation, and Prev, the lowercase hex SHA-256
// of the previous record's line (its bytes without the newline), empty for
// the very first record. Before a record is written, Options.Redact runs
// over every string in it, map keys included; full results never belong
// in a record, only their size and hash.
//
// # Files
//
// The active file is the path given to Open (by default
// <agent dir>/audit/audit.jsonl, see DefaultPath). When appending a line
// would make it larger than Options.MaxFileBytes, it is renamed to
// <path>.<seq>, where <seq> is the sequence number of its first record,
// zero-padded to twelve digits, and a new active file starts. The chain
// goes on: the first line of the new file points at the last line of the
// renamed one. Rotated files never change name again, so sorting them by
// that number gives the order of history, and a reader that lists them
// never races a cascade of renames. Beyond Options.MaxFiles rotated files,
// the oldest are deleted. A file <path>.lock, always empty, serializes
// writers (see below). A file <path>.lost counts the records a writer
// could not write (NoteLost) until a later append names them in an
// audit_gap record; Verify reports what it holds. Files are created 0600
// and the directory 0700; something other than a regular file where the
// active file is (a FIFO, a device, a link) is refused without blocking.
//
// # Intents
//
// A call_intent record is written before a call is made, and the call's
// record names its seq (Record.Intent): Verify reports an intent that no
// record completes, the trace of a process that ended mid-call. A
// long-lived writer (Options.Journal) writes intents into an intent
// journal of its own first, a file mapped into memory beside the log
// (Log.Intend), where an intent survives the process as an unsynced
// append does without costing a system call; the intent joins the log
// with the call's record, and Open appends the intents left in the
// journals of writers that ended. Verify counts the intents still in a
// journal as calls with no outcome.
//
// # What the chain proves, and what it does not
//
// The hashes are not keyed: whoever can write the files can also rewrite
// the whole chain from some point on, consistently. The chain makes such a
// rewrite a deliberate act rather than a quiet edit, and detects careless
// tampering and damage. Three cases need more than the chain. The newest
// line is only protected once a later line points at it; anchor the head
// (Log.Head, VerifyReport.LastHash) somewhere else to protect it. Deleting
// the oldest rotated files looks like rotation did it: the chain then
// starts where the oldest kept file starts, and only the first sequence
// number (VerifyReport.FirstSeq) says that older records existed. Deleting
// a rotated file from the middle breaks the chain and leaves a sequence gap,
// which Verify reports.
//
// # Crashes
//
// Each record is one write(2) of a whole line to a file opened with
// O_APPEND; AppendAll writes its records' lines with one write(2), split
// only where the file rotates. A process killed mid-write leaves at worst
// a torn last line
// (no newline, or bytes that are not JSON). Open finds it, reports it
// (Log.Problems), and the next append writes a newline first and chains
// from the last good line: the torn bytes stay where they are, because an
// audit log never rewrites its history. Readers skip torn and corrupt lines
// and report them; the chain runs across them.
//
// Appends do not call fsync unless Options.Sync is set. A line handed to
// the kernel survives the death of the process, but not a power loss or a
// kernel crash; Sync closes that window at the cost of a disk flush per
// write (see BenchmarkAppend).
//
// # Concurrency
//
// A Log serializes its appends with a mutex, so any number of goroutines
// may share one. Where flock(2) exists (Linux, the BSDs, macOS), each
// append also holds an exclusive lock on <path>.lock and first catches up
// with whatever another process appended or rotated, so several processes
// (a long-running voltmcp serve and a one-shot CLI command) can append to
// one log and keep one chain. On other platforms one process at a time
// must write a log. Readers take no lock.
package audit
