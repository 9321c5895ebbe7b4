// Package testwait is the one rule for how long a test waits for
// something that should happen: a server to start, a call to be
// answered, a process to exit, a file to appear. It is a test-only helper
// package: library and CLI code never import it.
//
// A wait that ends when the awaited thing happens costs nothing when it
// works, so its bound only decides how a broken test fails. The bound is
// therefore far beyond what any step takes on a loaded 2-core machine
// under the race detector: [Patience]. A test that must see that
// something does not happen (a negative wait) or that measures a
// timeout of the code under test may use a short literal duration, with a
// comment starting "testwait:" on the line or the line above saying
// which; TestNoShortWaits in this package finds every other short
// literal bound in the module's tests.
package testwait

import (
	"context"
	"testing"
	"time"
)

// Patience is how long a test waits for something that should happen
// before it fails.
const Patience = 2 * time.Minute

// margin is kept before the test binary's own deadline (go test
// -timeout), so that a wait fails the test with its message instead of
// the binary panicking with every goroutine's stack.
const margin = 10 * time.Second

// Deadline returns when a wait that starts now gives up: after
// [Patience], or shortly before the test binary's deadline when that
// comes first.
func Deadline(tb testing.TB) time.Time {
	d := time.Now().Add(Patience)
	if t, ok := tb.(interface{ Deadline() (time.Time, bool) }); ok {
		if end, ok := t.Deadline(); ok && end.Add(-margin).Before(d) {
			d = end.Add(-margin)
		}
	}
	return d
}

// Context returns a context that ends at [Deadline] and is cancelled
// when the test ends.
func Context(tb testing.TB) context.Context {
	ctx, cancel := context.WithDeadline(context.Background(), Deadline(tb))
	tb.Cleanup(cancel)
	return ctx
}

// For polls cond until it holds and fails the test, naming what it
// waited for, when [Deadline] passes first.
func For(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	end := Deadline(tb)
	for !cond() {
		if time.Now().After(end) {
			tb.Fatalf("waited %s for %s", Patience, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
