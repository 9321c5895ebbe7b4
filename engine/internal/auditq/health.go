package auditq

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/voltmcp/voltmcp/engine/audit"
)

// health is whether the audit log can be written. failing is read on
// every call's path (one atomic load); the rest changes only while the
// log fails, under mu.
type health struct {
	failing atomic.Bool
	mu      sync.Mutex
	lost    int64     // records lost and not yet named by an audit_gap record
	gaps    int       // audit_gap records being written
	since   time.Time // when the log started failing
	cause   string    // the first failure's error
}

// Health is the state of a [Queue]'s log.
type Health struct {
	// Failing says the log cannot be written.
	Failing bool
	// Since, Error and Lost are set while failing: when it started, the
	// first failure, and how many records were lost and not yet named
	// by an audit_gap record.
	Since time.Time
	Error string
	Lost  int64
}

// Failing reports whether the log cannot be written; it costs one atomic
// load.
func (q *Queue) Failing() bool { return q.health.failing.Load() }

// Health reports the log's health.
func (q *Queue) Health() Health {
	h := &q.health
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.failing.Load() {
		return Health{}
	}
	return Health{Failing: true, Since: h.since, Error: h.cause, Lost: h.lost}
}

// failed notes that n records could not be written, because of err; gap
// says the write began with an audit_gap record (gap), whose count n
// includes again. The first failure after a healthy time calls
// OnFailing; those that follow only count.
func (q *Queue) failed(n int64, err error, gap bool) {
	h := &q.health
	h.mu.Lock()
	h.lost += n
	if gap {
		h.gaps--
	}
	first := !h.failing.Load()
	if first {
		h.since, h.cause = time.Now(), err.Error()
		h.failing.Store(true)
	}
	h.mu.Unlock()
	if first && q.opts.OnFailing != nil {
		q.opts.OnFailing(err)
	}
}

// gap returns, while the log fails with records lost, the audit_gap
// record that names them, and their number; it then counts them as
// named until written or failed says what became of the record. It
// returns 0 when the log is healthy.
func (q *Queue) gap() (audit.Record, int64) {
	h := &q.health
	if !h.failing.Load() {
		return audit.Record{}, 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	lost := h.lost
	if lost == 0 {
		return audit.Record{}, 0
	}
	h.lost = 0
	h.gaps++
	r := audit.Record{Kind: audit.KindAuditGap, Time: time.Now(), Status: "resumed",
		Workspace: q.opts.Workspace, Session: q.opts.Session, Surface: q.opts.Surface,
		Detail: map[string]any{"lost": lost, "since": h.since.Format(time.RFC3339Nano), "error": h.cause}}
	return r, lost
}

// written notes a write that succeeded, with an audit_gap record naming
// lost records when lost > 0: once no record is lost unnamed, the log is
// healthy again, and OnResumed is called once.
func (q *Queue) written(lost int64) {
	h := &q.health
	if !h.failing.Load() {
		return
	}
	h.mu.Lock()
	if lost > 0 {
		h.gaps--
	}
	resumed := h.lost == 0 && h.gaps == 0
	if resumed {
		h.failing.Store(false)
		h.cause = ""
	}
	h.mu.Unlock()
	if resumed && q.opts.OnResumed != nil {
		q.opts.OnResumed()
	}
}
