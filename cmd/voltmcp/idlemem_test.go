package main

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/internal/testwait"
)

// TestReleaseIdleMemory makes bursts of garbage: each is followed by one
// release once the process is idle again, and a release waits for a
// burst.
func TestReleaseIdleMemory(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var releases atomic.Int32
	// testwait: the interval of the code under test, short to keep the
	// test quick; nothing waits on it with a bound.
	go releaseIdleMemory(ctx, 20*time.Millisecond, 64<<20, 4<<20, func() { releases.Add(1) })
	burst := func() {
		var b []byte
		for range 64 {
			b = make([]byte, 128<<10)
			b[0] = 1
		}
		runtime.KeepAlive(b)
	}
	burst()
	testwait.For(t, "a release after the first burst", func() bool { return releases.Load() == 1 })
	burst()
	testwait.For(t, "a release after the second burst", func() bool { return releases.Load() == 2 })
}
