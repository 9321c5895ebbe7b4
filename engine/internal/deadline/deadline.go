package deadline

import (
	"context"
	"sync"
	"time"
)

// Timer ends the calls whose time is up, with one timer for all the
// calls it gives a context. The timer is armed for the earliest
// deadline, moved only when a new call's deadline comes sooner, and left
// armed when calls end; when it fires, it ends the calls that are due
// and arms itself for the next. Calls made one after another with the
// same timeout therefore start and stop no timer, where
// [context.WithTimeout] starts one per call, which may wake a thread of
// Go's runtime: a cost a call through the gateway pays on a small
// machine (RATIONALE.md). The zero value is ready to use.
type Timer struct {
	mu    sync.Mutex
	timer *time.Timer
	at    time.Time // when the timer fires; zero when it is not armed
	calls map[*callCtx]context.CancelCauseFunc
}

// WithTimeout is [context.WithTimeout] for a call: the context ends when
// parent does, when cancel is called, or timeout from now, when its Err
// is context.DeadlineExceeded.
func (t *Timer) WithTimeout(parent context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	inner, cancel := context.WithCancelCause(parent)
	c := &callCtx{Context: inner, deadline: time.Now().Add(timeout)}
	t.mu.Lock()
	if t.calls == nil {
		t.calls = map[*callCtx]context.CancelCauseFunc{}
	}
	t.calls[c] = cancel
	if t.at.IsZero() || c.deadline.Before(t.at) {
		t.armLocked(c.deadline)
	}
	t.mu.Unlock()
	return c, func() {
		t.mu.Lock()
		delete(t.calls, c)
		t.mu.Unlock()
		cancel(context.Canceled)
	}
}

// armLocked sets the timer to fire at at. It runs with t.mu held.
func (t *Timer) armLocked(at time.Time) {
	t.at = at
	if t.timer == nil {
		t.timer = time.AfterFunc(time.Until(at), t.fire)
	} else {
		t.timer.Reset(time.Until(at))
	}
}

// fire ends the calls that are due and arms the timer for the earliest
// of the others.
func (t *Timer) fire() {
	now := time.Now()
	var due []context.CancelCauseFunc
	var next time.Time
	t.mu.Lock()
	for c, cancel := range t.calls {
		if !c.deadline.After(now) {
			due = append(due, cancel)
			delete(t.calls, c)
		} else if next.IsZero() || c.deadline.Before(next) {
			next = c.deadline
		}
	}
	t.at = time.Time{}
	if !next.IsZero() {
		t.armLocked(next)
	}
	t.mu.Unlock()
	for _, cancel := range due {
		cancel(context.DeadlineExceeded)
	}
}

// callCtx is a call's context from [Timer.WithTimeout]. Its
// Done channel is that of the context.WithCancelCause it wraps, so
// context.AfterFunc and child contexts need no goroutine to watch it.
type callCtx struct {
	context.Context
	deadline time.Time
}

// Deadline returns the call's deadline, or the parent's when sooner.
func (c *callCtx) Deadline() (time.Time, bool) {
	if d, ok := c.Context.Deadline(); ok && d.Before(c.deadline) {
		return d, true
	}
	return c.deadline, true
}

// Err is context.DeadlineExceeded once the deadline has ended the call.
func (c *callCtx) Err() error {
	err := c.Context.Err()
	if err == context.Canceled && context.Cause(c.Context) == context.DeadlineExceeded {
		return context.DeadlineExceeded
	}
	return err
}
