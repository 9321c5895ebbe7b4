// Package auditq is the engine's way to its audit log: it takes the
// records the engine makes and writes them to an [audit.Log] off the
// path of the calls they record, and keeps the log's health.
//
// A [Queue] opens the log on first use and feeds it from one goroutine,
// in the order the records are made; a full queue makes callers wait
// rather than lose records. While the log cannot be written it counts
// the records lost, and the first write that succeeds again is led by
// an audit_gap record that names them ([Queue.Health], [Queue.Failing]).
// A [Backlog] keeps the records of answered calls for a few milliseconds
// and writes them together, so that a call's answer has no audit work
// behind it. [WithHeld] makes a context whose records are held until
// the call's answer is written ([Held.Hold]), and a [RedactMemo] spares
// the log's redactor the strings every record repeats.
//
// The package decides nothing: what a record says, where the log lives,
// which redactor applies and what a failing log means for a call (the
// engine's settings.audit.onFailure) are its caller's, passed as plain
// values and functions. It must not import the engine, its policies or
// its config; it imports engine/audit, for the record and the log, and
// engine/internal/turn.
package auditq
