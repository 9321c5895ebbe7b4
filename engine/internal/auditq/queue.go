package auditq

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/voltmcp/voltmcp/engine/audit"
)

// Bounds of a [Queue].
const (
	// queueLen is how many records may wait for the disk.
	queueLen = 256
	// queueBatch is the most records the writer appends with one write.
	queueBatch = 64
	// reopenEvery is how often a log that did not open is tried again,
	// at most.
	reopenEvery = time.Second
	// holdLock is how long the log keeps its file lock once it takes it
	// (audit.Options.HoldLock): the appends within that time, a call's
	// intent and the backlog's records, skip taking and letting go of
	// it. Another process waits at most this long for the log.
	holdLock = 5 * time.Millisecond
)

// Queue feeds one audit log from one goroutine, in the order the records
// are made, off the path of the call they record: a call does not wait
// for the disk, and a full queue (the disk fell behind) makes callers
// wait rather than lose records. The log opens on first use. A failure
// to write does not fail the call: the records are counted as lost, the
// log's health says so ([Queue.Health]), and the first write that
// succeeds again is led by an audit_gap record that names them. Make one
// with [NewQueue]; [Queue.Close] writes what is queued.
type Queue struct {
	path string
	opts QueueOptions
	log  *slog.Logger

	// openMu guards opening the log (Open) and the fields below it.
	openMu  sync.Mutex
	openErr error     // why the log did not open last time
	openAt  time.Time // when it was last tried
	closed  bool      // Close has run: no log opens

	w  atomic.Pointer[writer]
	mu sync.RWMutex // held to send to the writer; Close takes it to end it

	health health
}

// QueueOptions configures a [Queue]. The zero value stamps no workspace,
// session or surface on records, redacts nothing, logs nothing and
// tells no one of failures.
type QueueOptions struct {
	// Workspace, Session and Surface are set on every record the queue
	// writes, the audit_gap records too.
	Workspace, Session, Surface string
	// Redactor, when set, returns the redactor that applies to a string
	// of a record at the time it is written, or nil for none. It is
	// asked once per string, since the log may open before the redactor
	// is known and a reload brings a new one; a [RedactMemo] in front of
	// it spares the strings that repeat. It must be safe for concurrent
	// use.
	Redactor func() Redactor
	// Logger hears of the problems the log found when it opened and of
	// a record that cannot be encoded (a bug).
	Logger *slog.Logger
	// OnFailing, when set, is called once when the log starts failing:
	// it did not open, or a write failed, after a healthy time. err is
	// the first failure.
	OnFailing func(err error)
	// OnResumed, when set, is called once when the log is written again
	// after failing, and an audit_gap record names the records lost.
	OnResumed func()
	// Journal gives the log an intent journal (audit.Options.Journal):
	// Queue.Intend then writes an intent with no system call while the
	// log is healthy. It is for a long-lived queue (serve, the daemon);
	// a one-shot command spares the journal's making.
	Journal bool
}

// NewQueue returns a Queue for the audit log at path (see [audit.Open]),
// which it opens on first use. A nil opts is the zero QueueOptions.
func NewQueue(path string, opts *QueueOptions) *Queue {
	q := &Queue{path: path}
	if opts != nil {
		q.opts = *opts
	}
	q.log = q.opts.Logger
	if q.log == nil {
		q.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return q
}

// writer is an open log and the goroutine that appends to it.
type writer struct {
	log  *audit.Log
	ch   chan audit.Record
	done chan struct{}
	// queued counts the records handed to ch and not yet written: while
	// there are any, a caller that would append itself queues behind
	// them instead, so that the log keeps the order records came in.
	queued atomic.Int64
}

// Push hands r to the log's writer, with the queue's workspace, session
// and surface, opening the log on first use.
func (q *Queue) Push(r audit.Record) {
	q.PushAll([]audit.Record{r}, nil)
}

// PushAll is [Queue.Push] for the records rs, in order. With a non-nil
// wait, for a goroutine that may append itself, it appends them itself,
// with one write, rather than waking the writer, which on a small
// machine costs more than the append (RATIONALE.md), and calls
// wait before it would wait for the log (audit.WithBeforeWait): the
// [Backlog]'s records take this way. While records handed to the writer
// before rs are not written yet, rs go to the writer too, behind them:
// the log keeps the order records come in.
func (q *Queue) PushAll(rs []audit.Record, wait func()) {
	if wait != nil && q.w.Load() == nil {
		wait() // opening the log takes its lock, which may be held
	}
	openErr := q.Open()
	for i := range rs {
		rs[i].Workspace, rs[i].Session, rs[i].Surface = q.opts.Workspace, q.opts.Session, q.opts.Surface
	}
	q.mu.RLock()
	defer q.mu.RUnlock()
	switch w := q.w.Load(); {
	case w == nil:
		if openErr != nil {
			q.failed(int64(len(rs)), openErr, lostGap{})
		}
	case wait != nil && w.queued.Load() == 0:
		_, _ = q.append(audit.WithBeforeWait(context.Background(), wait), w, rs, 0)
	default:
		q.toWriter(w, rs)
	}
}

// Open opens the log and starts its writer, unless it is open. When the
// log does not open, the failure is the log's (see [Queue.Health]), and
// a record made a second later tries again; the error is returned until
// then. After Close it opens nothing and returns nil. An open log costs
// one atomic load.
func (q *Queue) Open() error {
	if q.w.Load() != nil {
		return nil
	}
	q.openMu.Lock()
	defer q.openMu.Unlock()
	if q.w.Load() != nil || q.closed {
		return nil
	}
	if q.openErr != nil && time.Since(q.openAt) < reopenEvery {
		return q.openErr
	}
	q.openAt = time.Now()
	var redact func(string) string
	if current := q.opts.Redactor; current != nil {
		memo := &RedactMemo{}
		redact = func(s string) string {
			if red := current(); red != nil {
				return memo.Redact(red, s)
			}
			return s
		}
	}
	l, err := audit.Open(q.path, &audit.Options{Redact: redact, HoldLock: holdLock, Journal: q.opts.Journal})
	if err != nil {
		q.openErr = err
		q.failed(0, err, lostGap{})
		return err
	}
	q.openErr = nil
	for _, p := range l.Problems() {
		q.log.Warn("audit log", "problem", p.Message, "file", p.File, "line", p.Line)
	}
	// Records an earlier process lost: the first write names them.
	if note, err := audit.PendingLost(q.path); err != nil {
		q.log.Warn("audit log", "problem", err.Error())
	} else if note.Records > 0 {
		q.health.pending.Store(true)
	}
	w := &writer{log: l, ch: make(chan audit.Record, queueLen), done: make(chan struct{})}
	go q.run(w)
	q.w.Store(w)
	return nil
}

// Close writes what is queued and closes the log; none opens after it.
// It may be called more than once.
func (q *Queue) Close() {
	q.openMu.Lock()
	q.closed = true
	q.openMu.Unlock()
	q.mu.Lock()
	w := q.w.Swap(nil)
	q.mu.Unlock()
	if w != nil {
		close(w.ch)
		<-w.done
		_ = w.log.Close()
	}
}

// run appends the records sent on w.ch, those that wait together, until
// the channel closes.
func (q *Queue) run(w *writer) {
	defer close(w.done)
	batch := make([]audit.Record, 0, queueBatch)
	for r := range w.ch {
		batch = append(batch[:0], r)
	more:
		for len(batch) < queueBatch {
			select {
			case r, ok := <-w.ch:
				if !ok {
					break more
				}
				batch = append(batch, r)
			default:
				break more
			}
		}
		_, _ = q.append(context.Background(), w, batch, 0)
		w.queued.Add(-int64(len(batch)))
		clear(batch) // let go of the records' strings and details
	}
}

// append writes records, reporting a failure. While the log is failing,
// or records lost earlier (by this process or another: the note of lost
// records, see audit.NoteLost) are not named yet, an audit_gap record
// naming them goes first: when it is written, the log is healthy again.
// uncounted is how many records at the end of rs are not counted as
// lost when the write fails (an intent, whose call is refused instead).
// It returns the seq of the last record written.
func (q *Queue) append(ctx context.Context, w *writer, rs []audit.Record, uncounted int) (int64, error) {
	gap, g := q.gap()
	if g.total() > 0 {
		rs = append([]audit.Record{gap}, rs...)
	}
	seq, err := w.log.AppendAllSeq(ctx, rs)
	var we *audit.WriteError
	switch {
	case err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()):
		// Abandoned before anything was written (the log looks at ctx
		// only until it holds the lock): what the gap named is named
		// by the next append, and nothing failed.
		q.unnamed(g)
		return 0, err
	case errors.As(err, &we):
		n := int64(max(we.Records-uncounted, 0))
		if g.total() > 0 && we.Records == len(rs) {
			n-- // the gap record itself, whose records go back
		}
		q.failed(n, err, g)
		return 0, err
	case err != nil && !errors.Is(err, audit.ErrClosed):
		// A record that cannot be encoded: a bug, not a failing log.
		q.log.Error("audit append", "err", err)
	}
	q.written(g)
	return seq, err
}

// Write appends r to the log now, on the caller's goroutine, and
// returns its seq: for a record that must be in the log before what it
// records happens (a call's intent). Records queued before it may be
// written after it. When it cannot be written, the log is failing (see
// [Queue.Health]) and the error says why; the record is not counted as
// lost, since its caller does not go on as if it were written. Nor is a
// record whose ctx ended before it was written.
func (q *Queue) Write(ctx context.Context, r audit.Record) (int64, error) {
	openErr := q.Open()
	r.Workspace, r.Session, r.Surface = q.opts.Workspace, q.opts.Session, q.opts.Surface
	q.mu.RLock()
	defer q.mu.RUnlock()
	w := q.w.Load()
	if w == nil {
		if openErr == nil {
			openErr = audit.ErrClosed
		}
		q.failed(0, openErr, lostGap{})
		return 0, openErr
	}
	return q.append(ctx, w, []audit.Record{r}, 1)
}

// Intent is a call's intent, written ahead of the call by Queue.Intend.
// The zero value is no intent.
type Intent struct {
	seq int64          // its seq in the log, when written there
	p   *audit.Pending // its place in the intent journal, when kept there
}

// Record returns the intent's record when it waits in the intent journal
// and must be queued, before the call's own record (Intent.Name), for the
// log: ok is false when the log holds it already.
func (i Intent) Record() (r audit.Record, ok bool) {
	if i.p == nil {
		return audit.Record{}, false
	}
	return i.p.Record(), true
}

// Name makes r, the call's record, name the intent (audit.Record.Intent).
func (i Intent) Name(r *audit.Record) {
	if i.p != nil {
		i.p.Name(r)
		return
	}
	r.Intent = i.seq
}

// Intend writes r, a call's intent, before the call is made: into the
// log's intent journal, with no system call, while the log has one and is
// healthy (audit.Log.Intend), and otherwise into the log itself, on the
// caller's goroutine (Queue.Write), whose error it returns. The two ways
// leave the same records in the log (TestIntendJournalMatchesLog): with
// the journal, the intent's record joins it when Intent.Record's record
// is queued, ahead of the call's.
func (q *Queue) Intend(ctx context.Context, r audit.Record) (Intent, error) {
	if q.opts.Journal && !q.Failing() && q.Open() == nil {
		r.Workspace, r.Session, r.Surface = q.opts.Workspace, q.opts.Session, q.opts.Surface
		q.mu.RLock()
		var p *audit.Pending
		err := audit.ErrClosed
		if w := q.w.Load(); w != nil {
			p, err = w.log.Intend(r)
		}
		q.mu.RUnlock()
		if err == nil {
			return Intent{p: p}, nil
		}
	}
	seq, err := q.Write(ctx, r)
	return Intent{seq: seq}, err
}

// toWriter hands rs to w's goroutine, in order. It runs with q.mu read
// locked.
func (q *Queue) toWriter(w *writer, rs []audit.Record) {
	w.queued.Add(int64(len(rs)))
	for _, r := range rs {
		w.ch <- r
	}
}
