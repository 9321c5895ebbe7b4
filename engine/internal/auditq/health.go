package auditq

import (
	"context"
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
	// pending says the note of lost records beside the log may hold
	// records no audit_gap names yet.
	pending atomic.Bool
	// noteMu serializes reading the note of lost records for an
	// audit_gap record with taking them off it once that record is
	// written, and guards naming: within a process, a record of the
	// note is named by one audit_gap record, however many appends run.
	noteMu sync.Mutex
	naming int64 // records of the note named by audit_gap records being written
	mu     sync.Mutex
	lost   int64     // records lost, not in the note of lost records, and not yet named
	noted  int64     // records lost and put in the note since the last audit_gap record
	gaps   int       // audit_gap records being written
	since  time.Time // when the log started failing
	cause  string    // the first failure's error
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
	return Health{Failing: true, Since: h.since, Error: h.cause, Lost: h.lost + h.noted}
}

// lostGap is what an audit_gap record names: the records this process
// lost that the note of lost records does not hold (mem), and those the
// note held when it was read (noted).
type lostGap struct{ mem, noted int64 }

func (g lostGap) total() int64 { return g.mem + g.noted }

// failed notes that n records could not be written, because of err; g
// is what the audit_gap record the write began with named, if it did,
// whose records are lost again. The records are added to the note of
// lost records beside the log (audit.NoteLost), so that they outlive
// the process; those the note cannot take are counted here. The first
// failure after a healthy time calls OnFailing; those that follow only
// count.
func (q *Queue) failed(n int64, err error, g lostGap) {
	h := &q.health
	if g.noted > 0 {
		h.noteMu.Lock()
		h.naming -= g.noted // the note still holds them: a later gap names them
		h.noteMu.Unlock()
	}
	h.mu.Lock()
	if g.total() > 0 {
		h.gaps--
		h.lost += g.mem // the note still holds g.noted
	}
	first := !h.failing.Load()
	if first {
		h.since, h.cause = time.Now(), err.Error()
		h.failing.Store(true)
	}
	since, cause := h.since, h.cause
	h.mu.Unlock()
	if n > 0 {
		nerr := audit.NoteLost(context.Background(), q.path, n, since, cause)
		h.mu.Lock()
		if nerr == nil {
			h.noted += n
			h.pending.Store(true)
		} else {
			h.lost += n
		}
		h.mu.Unlock()
	}
	if first && q.opts.OnFailing != nil {
		q.opts.OnFailing(err)
	}
}

// gap returns, while records lost are not named, the audit_gap record
// that names them, and what it names: the records lost by this process
// that the note of lost records does not hold, and those the note holds
// (this process's and others'). It counts them as named until written
// or failed says what became of the record. It returns nothing, at the
// cost of two atomic loads, when the log is healthy and no note is
// pending.
func (q *Queue) gap() (audit.Record, lostGap) {
	h := &q.health
	if !h.failing.Load() && !h.pending.Load() {
		return audit.Record{}, lostGap{}
	}
	var g lostGap
	var note audit.LostNote
	// While an audit_gap record of this process names the note, another
	// append does not name it again: the note is read and its records
	// taken off it under noteMu, and what the note gained meanwhile is
	// named by the append after that record's. Only writers of two
	// processes that resume at the same moment may both name a note.
	h.noteMu.Lock()
	named := h.naming > 0
	if !named {
		var err error
		if note, err = audit.PendingLost(q.path); err == nil {
			g.noted = note.Records
			h.naming = g.noted
		}
	}
	h.noteMu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	g.mem = h.lost
	if g.total() == 0 {
		if !named {
			h.pending.Store(false)
		}
		return audit.Record{}, lostGap{}
	}
	h.lost = 0
	h.gaps++
	since, cause := h.since, h.cause
	if g.noted > 0 && (since.IsZero() || note.Since.Before(since)) {
		since, cause = note.Since, note.Error
	}
	r := audit.Record{Kind: audit.KindAuditGap, Time: time.Now(), Status: "resumed",
		Workspace: q.opts.Workspace, Session: q.opts.Session, Surface: q.opts.Surface,
		Detail: map[string]any{"lost": g.total(), "since": since.Format(time.RFC3339Nano), "error": cause}}
	return r, g
}

// unnamed puts back what g named, when the write its audit_gap record
// began was abandoned before anything was written (its context ended):
// the next append names it, and the log's health is what it was.
func (q *Queue) unnamed(g lostGap) {
	if g.total() == 0 {
		return
	}
	h := &q.health
	if g.noted > 0 {
		h.noteMu.Lock()
		h.naming -= g.noted
		h.noteMu.Unlock()
	}
	h.mu.Lock()
	h.gaps--
	h.lost += g.mem
	h.mu.Unlock()
	h.pending.Store(true)
}

// written notes a write that succeeded, with an audit_gap record naming
// g when g names any: its noted records are taken off the note, and
// once no record is lost unnamed, the log is healthy again, and
// OnResumed is called once.
func (q *Queue) written(g lostGap) {
	h := &q.health
	if g.noted > 0 {
		h.noteMu.Lock()
		if err := audit.ForgetLost(context.Background(), q.path, g.noted); err != nil {
			// Not named again by this process on every append; a later
			// one may name them twice, which overstates the loss.
			h.pending.Store(false)
			q.log.Warn("audit log", "problem", err.Error())
		}
		h.naming -= g.noted
		h.noteMu.Unlock()
	}
	if !h.failing.Load() {
		if g.total() > 0 {
			h.mu.Lock()
			h.gaps--
			h.mu.Unlock()
		}
		return
	}
	h.mu.Lock()
	if g.total() > 0 {
		h.gaps--
		h.noted = 0
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
