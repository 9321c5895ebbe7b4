package turn

import (
	"context"
	"sync"
)

type yieldKey struct{}

type panicKey struct{}

// WithYield returns a context carrying the yield of work that runs on a
// connection's reader: what the work calls before it blocks.
func WithYield(ctx context.Context, yield func()) context.Context {
	return context.WithValue(ctx, yieldKey{}, yield)
}

// Yield lets the reader go when ctx is that of work that still holds
// it, and does nothing otherwise: whatever may wait long calls it
// first.
func Yield(ctx context.Context) {
	if yield, _ := ctx.Value(yieldKey{}).(func()); yield != nil {
		yield()
	}
}

// YieldFunc is Yield(ctx) as the yield a continuation gets when it is
// called on the goroutine whose context is ctx.
func YieldFunc(ctx context.Context) func() {
	return func() { Yield(ctx) }
}

// NoYield is the yield of a continuation that does not run on a
// reader: there is nothing to let go.
func NoYield() {}

// WithPanicHandler returns a context whose work on a reader hands a
// panic to h: a continuation that runs on a connection's reader, where
// a panic would end the process, recovers it and calls h.
func WithPanicHandler(ctx context.Context, h func(v any)) context.Context {
	return context.WithValue(ctx, panicKey{}, h)
}

// PanicHandler returns the handler ctx carries (see
// [WithPanicHandler]), or nil.
func PanicHandler(ctx context.Context) func(v any) {
	h, _ := ctx.Value(panicKey{}).(func(any))
	return h
}

// Await runs start, which hands its result to then once, perhaps on
// another goroutine (a connection's reader), and waits for it. While it
// waits, ctx's reader is let go. A panic in work that start's calls run
// on a reader is raised again here, on the goroutine that waits, as if
// start had run here.
func Await[T any](ctx context.Context, start func(ctx context.Context, then func(yield func(), v T))) T {
	var (
		v     T
		fault any
		once  sync.Once
		done  = make(chan struct{})
	)
	ctx = WithPanicHandler(ctx, func(p any) {
		once.Do(func() {
			fault = p
			close(done)
		})
	})
	start(ctx, func(_ func(), r T) {
		once.Do(func() {
			v = r
			close(done)
		})
	})
	select {
	case <-done:
	default:
		Yield(ctx)
		<-done
	}
	if fault != nil {
		panic(fault)
	}
	return v
}
