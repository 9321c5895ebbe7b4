package turn

import (
	"bytes"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"
)

// Hold runs work on this goroutine, which holds a reader, and reports
// whether the work yielded it. The first call of the yield work gets
// calls handoff, which gives the reader to another goroutine; later
// calls, and calls after the work returned, do nothing. When the work
// returns without having yielded, Hold returns false and this goroutine
// is still the reader: work that answers at once costs no handoff.
//
// A non-nil c checks the work (see [Check]).
func Hold(work func(yield func()), handoff func(), c *Check) (yielded bool) {
	var handed atomic.Bool
	if c != nil {
		stop := c.watch(&handed)
		defer stop()
	}
	work(func() {
		if handed.CompareAndSwap(false, true) {
			handoff()
		}
	})
	return !handed.CompareAndSwap(false, true)
}

// A Check is the checked mode of [Hold], for tests: it reports work
// that holds a reader for longer than Limit without yielding, the sign
// of a step that blocks (on a peer, a disk, a lock) before it yields.
// Work on a reader that does not wait takes microseconds; Limit is best
// set well above what the slowest machine that runs the tests needs for
// the work's computing, so that only a wait trips it.
type Check struct {
	// Limit is how long work may hold a reader; zero means a second.
	Limit time.Duration
	// Held is called, on a goroutine of its own, once for each piece of
	// work that held a reader past Limit, with how long it had held it
	// and the stack of the goroutine that held it then.
	Held func(held time.Duration, stack string)
}

// watch starts watching work that runs on this goroutine until stop is
// called or handed is set.
func (c *Check) watch(handed *atomic.Bool) (stop func()) {
	limit := c.Limit
	if limit <= 0 {
		limit = time.Second
	}
	g := goroutineID()
	start := time.Now()
	t := time.AfterFunc(limit, func() {
		if handed.Load() {
			return
		}
		stack := goroutineStack(g)
		if handed.Load() {
			return // it yielded meanwhile
		}
		c.Held(time.Since(start), stack)
	})
	return func() { t.Stop() }
}

// goroutineID returns the id of the calling goroutine, as its stack
// trace names it.
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	buf, _ = bytes.CutPrefix(buf, []byte("goroutine "))
	if i := bytes.IndexByte(buf, ' '); i > 0 {
		if _, err := strconv.ParseUint(string(buf[:i]), 10, 64); err == nil {
			return string(buf[:i])
		}
	}
	return ""
}

// goroutineStack returns the stack trace of goroutine g, or every
// goroutine's when g is not found.
func goroutineStack(g string) string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, s := range bytes.Split(buf, []byte("\n\n")) {
		if g != "" && bytes.HasPrefix(s, []byte("goroutine "+g+" ")) {
			return string(s)
		}
	}
	return string(buf)
}
