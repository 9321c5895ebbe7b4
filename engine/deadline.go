package engine

import (
	"context"
	"sync"
	"time"
)

// callDeadlines ends the calls whose time is up, with one timer for all
// the calls of an engine. The timer is armed for the earliest deadline,
// moved only when a new call's deadline comes sooner, and left armed
// when calls end; when it fires, it ends the calls that are due and arms
// itself for the next. Calls made one after another with the same
// timeout therefore start and stop no timer, where context.WithTimeout
// starts one per call, which may wake a thread of Go's runtime: a cost a
// call through the gateway pays on a small machine (docs/benchmarks.md).
// The zero value is ready to use.
type callDeadlines struct {
	mu    sync.Mutex
	timer *time.Timer
	at    time.Time // when the timer fires; zero when it is not armed
	calls map[*deadlineCtx]context.CancelCauseFunc
}

// withTimeout is context.WithTimeout for a call: the context ends when
// parent does, when cancel is called, or timeout from now, when its Err
// is context.DeadlineExceeded.
func (d *callDeadlines) withTimeout(parent context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	inner, cancel := context.WithCancelCause(parent)
	c := &deadlineCtx{Context: inner, deadline: time.Now().Add(timeout)}
	d.mu.Lock()
	if d.calls == nil {
		d.calls = map[*deadlineCtx]context.CancelCauseFunc{}
	}
	d.calls[c] = cancel
	if d.at.IsZero() || c.deadline.Before(d.at) {
		d.armLocked(c.deadline)
	}
	d.mu.Unlock()
	return c, func() {
		d.mu.Lock()
		delete(d.calls, c)
		d.mu.Unlock()
		cancel(context.Canceled)
	}
}

// armLocked sets the timer to fire at at. It runs with d.mu held.
func (d *callDeadlines) armLocked(at time.Time) {
	d.at = at
	if d.timer == nil {
		d.timer = time.AfterFunc(time.Until(at), d.fire)
	} else {
		d.timer.Reset(time.Until(at))
	}
}

// fire ends the calls that are due and arms the timer for the earliest
// of the others.
func (d *callDeadlines) fire() {
	now := time.Now()
	var due []context.CancelCauseFunc
	var next time.Time
	d.mu.Lock()
	for c, cancel := range d.calls {
		if !c.deadline.After(now) {
			due = append(due, cancel)
			delete(d.calls, c)
		} else if next.IsZero() || c.deadline.Before(next) {
			next = c.deadline
		}
	}
	d.at = time.Time{}
	if !next.IsZero() {
		d.armLocked(next)
	}
	d.mu.Unlock()
	for _, cancel := range due {
		cancel(context.DeadlineExceeded)
	}
}

// deadlineCtx is a call's context from callDeadlines.withTimeout. Its
// Done channel is that of the context.WithCancelCause it wraps, so
// context.AfterFunc and child contexts need no goroutine to watch it.
type deadlineCtx struct {
	context.Context
	deadline time.Time
}

// Deadline returns the call's deadline, or the parent's when sooner.
func (c *deadlineCtx) Deadline() (time.Time, bool) {
	if d, ok := c.Context.Deadline(); ok && d.Before(c.deadline) {
		return d, true
	}
	return c.deadline, true
}

// Err is context.DeadlineExceeded once the deadline has ended the call.
func (c *deadlineCtx) Err() error {
	err := c.Context.Err()
	if err == context.Canceled && context.Cause(c.Context) == context.DeadlineExceeded {
		return context.DeadlineExceeded
	}
	return err
}
