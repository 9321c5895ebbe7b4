package auditq

import (
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/voltmcp/voltmcp/engine/audit"
	"github.com/voltmcp/voltmcp/engine/internal/turn"
)

// Bounds of a [Backlog].
const (
	// delay is the longest a call's audit records wait after its answer
	// before they are written.
	delay = 10 * time.Millisecond
	// BacklogCalls is how many calls' records may wait at once: the call
	// that would add one more writes them all itself.
	BacklogCalls = 64
)

// Backlog keeps the audit records of calls from their answer until they
// are written: together, at most 10 ms after the first of them, by a
// timer; at once, by the call that finds [BacklogCalls] waiting; and by
// [Backlog.Close]. The calls' answers then return to the agent with no
// audit work behind them on the process's CPU, where on a small machine
// the agent, or the next call, would wait for it (RATIONALE.md).
// What this costs is the window: a process killed outright (SIGKILL, the
// OOM killer) loses the records of the calls answered in its last
// 10 ms, where it would otherwise lose those of the call being answered.
// Close, which every orderly end runs, writes them. Make one with
// [NewBacklog].
type Backlog struct {
	// writing is held while calls taken from the backlog are written,
	// so that Close returns only once they are.
	writing sync.Mutex
	mu      sync.Mutex
	calls   []func() []audit.Record // each call's release (WithHeld)
	timer   *time.Timer
	armed   bool // the timer is set for the calls waiting
	closed  bool // Close has written the backlog: calls write their own
	log     *slog.Logger
	sink    func(recs []audit.Record, wait func())
}

// BacklogOptions configures a [Backlog]. The zero value logs nothing.
type BacklogOptions struct {
	// Logger, when set, hears of a release that panicked.
	Logger *slog.Logger
}

// NewBacklog returns a Backlog that hands the records it writes to sink,
// together, with the wait of the goroutine that writes them (see
// [Backlog.Add]); [Queue.PushAll] is such a sink. A nil opts is the zero
// BacklogOptions.
func NewBacklog(sink func(recs []audit.Record, wait func()), opts *BacklogOptions) *Backlog {
	if opts == nil {
		opts = &BacklogOptions{}
	}
	return &Backlog{sink: sink, log: opts.Logger}
}

// write builds the records of the releases taken from the backlog and
// hands them to the sink together. A release that panics (a bug in
// building a record) loses its own records, not the others', and does
// not end the process from the timer's goroutine; its stack is logged,
// not the panic's value, which could hold a secret.
func (b *Backlog) write(calls []func() []audit.Record, wait func()) {
	if recs := b.build(calls); len(recs) > 0 && b.sink != nil {
		b.sink(recs, wait)
	}
}

// build returns the records of the releases calls, in order. A release
// that panics loses its own records (see write).
func (b *Backlog) build(calls []func() []audit.Record) []audit.Record {
	var recs []audit.Record
	for _, release := range calls {
		func() {
			defer func() {
				if v := recover(); v != nil && b.log != nil {
					b.log.Error("building an audit record panicked; its records are lost", "stack", string(debug.Stack()))
				}
			}()
			recs = append(recs, release()...)
		}()
	}
	return recs
}

// Add keeps a call's release ([WithHeld]) for the next write of the
// backlog; the call's goroutine, when it must write the backlog itself,
// calls wait before it would wait for the log (a yield, see package
// turn).
func (b *Backlog) Add(release func() []audit.Record, wait func()) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		b.write([]func() []audit.Record{release}, wait)
		return
	}
	if len(b.calls) >= BacklogCalls {
		calls := append(b.take(), release)
		b.mu.Unlock()
		if !b.writing.TryLock() {
			wait() // the timer is writing
			b.writing.Lock()
		}
		defer b.writing.Unlock()
		b.write(calls, wait)
		return
	}
	b.calls = append(b.calls, release)
	if !b.armed {
		b.armed = true
		if b.timer == nil {
			b.timer = time.AfterFunc(delay, b.flush)
		} else {
			b.timer.Reset(delay)
		}
	}
	b.mu.Unlock()
}

// take empties the backlog, returning the calls it held. It runs with
// b.mu held.
func (b *Backlog) take() []func() []audit.Record {
	calls := b.calls
	b.calls = nil
	return calls
}

// flush writes the backlog: the timer's work.
func (b *Backlog) flush() {
	b.writing.Lock()
	defer b.writing.Unlock()
	b.mu.Lock()
	b.armed = false
	calls := b.take()
	b.mu.Unlock()
	b.write(calls, turn.NoYield)
}

// Writing reports whether records taken from the backlog are being
// written at this moment (by its timer, say, waiting for the log).
func (b *Backlog) Writing() bool {
	if b.writing.TryLock() {
		b.writing.Unlock()
		return false
	}
	return true
}

// Close writes the backlog and makes calls from now on write their own.
// It may be called more than once.
func (b *Backlog) Close() {
	b.writing.Lock()
	defer b.writing.Unlock()
	b.mu.Lock()
	b.closed = true
	if b.timer != nil {
		b.timer.Stop()
	}
	calls := b.take()
	b.mu.Unlock()
	b.write(calls, turn.NoYield)
}
