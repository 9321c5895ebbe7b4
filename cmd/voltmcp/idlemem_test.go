package main

import (
	"context"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/internal/testwait"
)

// TestReleaseIdleMemory drives the idle watch with a count of allocated
// bytes of its own: a burst is followed by one release once the count
// stands still, allocations that go on hold it back, and the next burst
// brings the next release.
func TestReleaseIdleMemory(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var allocated atomic.Uint64
	var releases atomic.Int32
	const idle, burst = 1 << 10, 1 << 20
	// testwait: the interval of the code under test, short to keep the
	// test quick; nothing waits on it with a bound.
	go watchIdle(ctx, 5*time.Millisecond, idle, burst, allocated.Load, func() { releases.Add(1) })
	allocated.Add(4 << 20) // a burst, then nothing: idle
	testwait.For(t, "a release after the first burst", func() bool { return releases.Load() == 1 })
	// Busy: more than idle bytes between every two looks.
	busy := time.Now()
	for time.Since(busy) < 50*time.Millisecond { // testwait: how long the test stays busy, not a bound
		allocated.Add(burst)
		time.Sleep(time.Millisecond)
	}
	testwait.For(t, "a release once the busy time ends", func() bool { return releases.Load() == 2 })
	if n := releases.Load(); n != 2 {
		t.Fatalf("%d releases, want 2", n)
	}
}

// TestAllocMetric checks that the runtime still offers the count
// releaseIdleMemory reads.
func TestAllocMetric(t *testing.T) {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[0].Value.Uint64() == 0 {
		t.Fatalf("/gc/heap/allocs:bytes: kind %v", s[0].Value.Kind())
	}
}
