package oauth

import (
	"context"
	"sync"
	"time"
)

// State is what a server keeps of OAuth across its connections: the
// token source in use, so that a reconnect reuses it without reading the
// store, one authorization at a time, and why the last authorization
// while connecting failed. Its zero value is ready to use; it must not
// be copied after first use.
type State struct {
	mu       sync.Mutex
	sem      chan struct{} // held while an authorization runs
	ts       *TokenSource
	endpoint string // the URL ts was issued for
	gen      uint64 // bumps at each successful authorization
	failure  error  // why an authorization failed while connecting; TakeFailure takes it
}

// TakeFailure returns, and forgets, why an authorization failed while
// the server was connecting (nil when none did). The error names the
// server.
func (o *State) TakeFailure() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	err := o.failure
	o.failure = nil
	return err
}

func (o *State) setFailure(err error) {
	o.mu.Lock()
	o.failure = err
	o.mu.Unlock()
}

// acquire waits for the right to run an authorization.
func (o *State) acquire(ctx context.Context) (release func(), err error) {
	o.mu.Lock()
	if o.sem == nil {
		o.sem = make(chan struct{}, 1)
	}
	sem := o.sem
	o.mu.Unlock()
	select {
	case sem <- struct{}{}:
		return func() { <-sem }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (o *State) generation() uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.gen
}

func (o *State) authorized() {
	o.mu.Lock()
	o.gen++
	o.mu.Unlock()
}

// source returns the token source in use for endpoint, unless it is dead,
// and forgets the last failure: a connection attempt starts.
func (o *State) source(endpoint string) *TokenSource {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.failure = nil
	if o.ts != nil && o.endpoint == endpoint && !o.ts.Dead() {
		return o.ts
	}
	return nil
}

func (o *State) setSource(endpoint string, ts *TokenSource) {
	o.mu.Lock()
	o.ts, o.endpoint = ts, endpoint
	o.mu.Unlock()
}

// connectTimerKey carries a connection attempt's timeout timer to its
// [Handler], which stops it while the user authorizes.
type connectTimerKey struct{}

type connectTimer struct {
	t *time.Timer
	d time.Duration
}

// WithConnectTimer returns ctx carrying the timer t that ends a
// connection attempt after d. A [Handler] authorizing under ctx stops t
// while the user authorizes (bounded by [Options.AuthTimeout]) and, when
// it stopped it, resets it to d afterwards: the connect timeout starts
// again after the authorization.
func WithConnectTimer(ctx context.Context, t *time.Timer, d time.Duration) context.Context {
	return context.WithValue(ctx, connectTimerKey{}, connectTimer{t, d})
}

func connectTimerFrom(ctx context.Context) (*time.Timer, time.Duration) {
	ct, _ := ctx.Value(connectTimerKey{}).(connectTimer)
	return ct.t, ct.d
}
