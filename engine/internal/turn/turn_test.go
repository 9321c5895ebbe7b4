package turn

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/internal/testwait"
)

// TestHoldHandsOverAtTheFirstYield checks that work holding a reader
// hands it over once, at its first yield, and that work that does not
// yield keeps the reader where it is.
func TestHoldHandsOverAtTheFirstYield(t *testing.T) {
	var handoffs atomic.Int32
	handoff := func() { handoffs.Add(1) }
	var late func()
	if Hold(func(yield func()) { late = yield }, handoff, nil) {
		t.Error("work that did not yield reported a yield")
	}
	late() // after the work returned: the reader stayed, nothing to hand
	if n := handoffs.Load(); n != 0 {
		t.Fatalf("%d handoffs without a yield", n)
	}
	if !Hold(func(yield func()) { yield(); yield() }, handoff, nil) {
		t.Error("work that yielded reported none")
	}
	if n := handoffs.Load(); n != 1 {
		t.Fatalf("%d handoffs for two yields, want 1", n)
	}
}

// blockingStep waits on a channel: a step that blocks.
func blockingStep(ch <-chan string) string { return <-ch }

// TestCheckReportsABlockingStepBeforeTheYield is the test of the rule:
// work that blocks while it holds the reader, before it yields, is
// reported, with the stack of the goroutine that blocks, which names
// the blocking step.
func TestCheckReportsABlockingStepBeforeTheYield(t *testing.T) {
	reported := make(chan string, 1)
	c := &Check{Limit: 20 * time.Millisecond, Held: func(held time.Duration, stack string) {
		if held < 20*time.Millisecond {
			t.Errorf("reported after %v, before the limit", held)
		}
		reported <- stack
	}}
	done := make(chan string, 1)
	go Hold(func(yield func()) {
		// The report unblocks the step: without one, the test times
		// out below.
		stack := blockingStep(reported)
		yield()
		done <- stack
	}, func() {}, c)
	select {
	case stack := <-done:
		if !strings.Contains(stack, "turn.blockingStep") {
			t.Errorf("the report does not name the blocking step:\n%s", stack)
		}
	case <-time.After(testwait.Patience):
		t.Fatal("work that blocked before it yielded was not reported")
	}
}

// TestCheckIsQuietWhenTheWorkYieldsFirst checks that work that yields
// before it blocks, and work that returns at once, are not reported.
func TestCheckIsQuietWhenTheWorkYieldsFirst(t *testing.T) {
	var reports atomic.Int32
	c := &Check{Limit: 20 * time.Millisecond, Held: func(time.Duration, string) { reports.Add(1) }}
	Hold(func(yield func()) {
		yield()
		time.Sleep(100 * time.Millisecond)
	}, func() {}, c)
	Hold(func(func()) {}, func() {}, c)
	time.Sleep(50 * time.Millisecond)
	if n := reports.Load(); n != 0 {
		t.Errorf("%d reports of work that did not block before its yield", n)
	}
}

// TestAwaitYieldsBeforeItWaits checks that Await lets the reader of its
// context go before it waits for a result that is not there yet, and
// not when the result came at once.
func TestAwaitYieldsBeforeItWaits(t *testing.T) {
	var yields atomic.Int32
	ctx := WithYield(context.Background(), func() { yields.Add(1) })
	if v := Await(ctx, func(_ context.Context, then func(func(), int)) { then(NoYield, 1) }); v != 1 || yields.Load() != 0 {
		t.Errorf("an answer at once: %d, %d yields", v, yields.Load())
	}
	v := Await(ctx, func(_ context.Context, then func(func(), int)) {
		go func() {
			time.Sleep(10 * time.Millisecond)
			then(NoYield, 2)
		}()
	})
	if v != 2 || yields.Load() != 1 {
		t.Errorf("a later answer: %d, %d yields", v, yields.Load())
	}
}

// TestAwaitRaisesAPanicAgain checks that a panic handed to the handler
// of Await's context is raised again by Await, and that Yield without a
// yield in the context does nothing.
func TestAwaitRaisesAPanicAgain(t *testing.T) {
	Yield(context.Background())
	defer func() {
		if v := recover(); v != "bug" {
			t.Errorf("recovered %v", v)
		}
	}()
	Await(context.Background(), func(ctx context.Context, then func(func(), int)) {
		go PanicHandler(ctx)("bug")
	})
	t.Error("Await returned")
}
