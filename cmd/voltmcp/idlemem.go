package main

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// How a long-lived command (serve, the daemon) gives memory back once it
// is idle: loading the config, the policies, the plugins and the cached
// metadata of many servers, and building the search index, leave tens of
// MiB of garbage that the runtime's scavenger returns to the system only
// slowly, so an idle gateway's resident set stays at its peak for minutes.
const (
	// idleCheckEvery is how often the process looks at its allocations.
	idleCheckEvery = 5 * time.Second
	// idleAllocs is the most a process may allocate in one look and
	// still count as idle.
	idleAllocs = 256 << 10
	// releaseAfterAllocs is how much must have been allocated since the
	// last release for another to be worth its collection.
	releaseAfterAllocs = 16 << 20
)

// releaseIdleMemory calls free (debug.FreeOSMemory when nil) once the
// process goes idle after a burst of work, every check looking at
// the runtime's count of bytes allocated: idle is less than idleAllocs
// since the last look, and a burst is more than releaseAfterAllocs since
// the last release. It runs until ctx ends. A release costs a collection
// of the live heap, made only when no call is being answered.
func releaseIdleMemory(ctx context.Context, every time.Duration, idle, burst uint64, free func()) {
	if free == nil {
		free = debug.FreeOSMemory
	}
	sample := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	watchIdle(ctx, every, idle, burst, func() uint64 {
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return sample[0].Value.Uint64()
	}, free)
}

// watchIdle is releaseIdleMemory with the count of bytes allocated read
// by allocs.
func watchIdle(ctx context.Context, every time.Duration, idle, burst uint64, allocs func() uint64, free func()) {
	t := time.NewTicker(every)
	defer t.Stop()
	// What the process allocated before the watch began (loading) counts
	// toward the first burst.
	last, released := allocs(), uint64(0)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := allocs()
		if now-last < idle && now-released > burst {
			free()
			now = allocs()
			released = now
		}
		last = now
	}
}
