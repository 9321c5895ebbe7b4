package fanout

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/internal/testwait"
)

// val is what the tests publish: Seq is set by the bus; a gap has
// Missed > 0 or Gap set.
type val struct {
	Seq    uint64
	Gap    bool
	Missed uint64
	ID     int
}

func newBus(replay int) *Bus[val] {
	return New(Options[val]{
		Replay: replay,
		Stamp:  func(v val, seq uint64) val { v.Seq = seq; return v },
		Gap:    func(last, missed uint64) val { return val{Seq: last, Gap: true, Missed: missed} },
	})
}

// after fires when a wait that starts now gives up (testwait.Deadline).
func after(t *testing.T) <-chan time.Time {
	return time.After(time.Until(testwait.Deadline(t)))
}

// recv reads one value, failing the test when none comes.
func recv(t *testing.T, ch <-chan val) val {
	t.Helper()
	select {
	case v, ok := <-ch:
		if !ok {
			t.Fatal("channel closed")
		}
		return v
	case <-after(t):
		t.Fatal("no value came")
	}
	return val{}
}

// stream checks what a subscriber reads: every seq from first on,
// each once and in order, a gap standing for exactly the seqs it
// skips. It reads until it has seen seq last (as a value or inside a
// gap) and returns the gaps it read.
func stream(t *testing.T, ch <-chan val, first, last uint64) []val {
	t.Helper()
	var gaps []val
	want := first
	for want <= last {
		v := recv(t, ch)
		switch {
		case v.Gap:
			if v.Missed == 0 || v.Seq+1-v.Missed != want {
				t.Fatalf("gap %+v, want one from seq %d", v, want)
			}
			gaps = append(gaps, v)
			want = v.Seq + 1
		case v.Seq != want:
			t.Fatalf("got seq %d, want %d", v.Seq, want)
		default:
			want++
		}
	}
	return gaps
}

func TestBusFansOutAndNumbers(t *testing.T) {
	t.Parallel()
	b := newBus(0)
	if b.Listening() || b.Seq() != 0 {
		t.Fatal("a new bus listens or has published")
	}
	// Published to no one: numbered and kept all the same.
	if seq := b.Publish(val{ID: 1}); seq != 1 {
		t.Fatalf("first seq %d", seq)
	}
	a, endA := b.Subscribe(4)
	c, endC := b.Subscribe(0)
	if !b.Listening() || cap(c) != DefaultBuffer || cap(a) != 4 {
		t.Fatalf("listening %v, buffers %d %d", b.Listening(), cap(a), cap(c))
	}
	for i := 2; i <= 7; i++ {
		b.Publish(val{ID: i})
	}
	// c holds all six; a had room for 4 and gets the rest from the ring.
	stream(t, c, 2, 7)
	if gaps := stream(t, a, 2, 7); len(gaps) != 0 {
		t.Errorf("a lost %v, with the values in the ring", gaps)
	}
	endA()
	endA() // twice is fine
	testwait.For(t, "a's channel closes", func() bool {
		select {
		case _, ok := <-a:
			return !ok
		default:
			return false
		}
	})
	b.Publish(val{ID: 8})
	b.CloseAll()
	if b.Listening() {
		t.Error("listening after CloseAll")
	}
	// What the channel held stays for its reader, then it closes.
	if v := recv(t, c); v.Seq != 8 || v.ID != 8 {
		t.Errorf("after CloseAll: %+v", v)
	}
	for range c {
	}
	endC() // after CloseAll: no double close
	b.Publish(val{ID: 9})
	// A subscription after CloseAll ends at once, replay or not.
	for _, since := range []uint64{0, 3} {
		late, endLate := b.SubscribeSince(since, 1)
		testwait.For(t, "a late subscription's channel to close", func() bool {
			select {
			case _, ok := <-late:
				return !ok
			default:
				return false
			}
		})
		endLate()
	}
	if b.Seq() != 9 {
		t.Errorf("seq %d after 9 values", b.Seq())
	}
}

// TestBusSlowSubscriberNeverSlowsPublisher: a subscriber that never
// reads while 10,000 values are published does not hold up publishing;
// once it reads it gets what its buffer held, one gap counting what
// fell out of the ring, then the rest in order, then live values.
func TestBusSlowSubscriberNeverSlowsPublisher(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ replay, buffer, n int }{
		{1000, 16, 10000},
		{1000, 1, 10000},
		{50, 200, 10000},
		{1000, 16, 500}, // everything still in the ring: no gap
	} {
		t.Run(fmt.Sprintf("replay%d_buffer%d_n%d", tc.replay, tc.buffer, tc.n), func(t *testing.T) {
			t.Parallel()
			b := newBus(tc.replay)
			ch, end := b.Subscribe(tc.buffer)
			defer end()
			for i := range tc.n {
				b.Publish(val{ID: i})
			}
			gaps := stream(t, ch, 1, uint64(tc.n))
			kept := min(tc.n, tc.replay+tc.buffer+1)
			switch {
			case kept == tc.n && len(gaps) != 0:
				t.Errorf("gaps %v with every value kept", gaps)
			case kept < tc.n && len(gaps) != 1:
				t.Fatalf("gaps %v, want one", gaps)
			case kept < tc.n && gaps[0].Missed < uint64(tc.n-tc.replay-tc.buffer-1):
				t.Errorf("gap %+v counts fewer than the %d values the ring and buffer could not hold", gaps[0], tc.n-tc.replay-tc.buffer-1)
			}
			// Live again.
			b.Publish(val{ID: -1})
			if v := recv(t, ch); v.Seq != uint64(tc.n)+1 {
				t.Errorf("next live value %+v", v)
			}
		})
	}
}

func TestBusSubscribeSince(t *testing.T) {
	t.Parallel()
	b := newBus(100)
	for i := range 250 {
		b.Publish(val{ID: i})
	}
	for _, tc := range []struct {
		name     string
		since    uint64
		firstSeq uint64 // of the first value (or gap) read
		gap      *val
	}{
		{"in the ring", 200, 201, nil},
		{"the ring's oldest", 150, 151, nil},
		{"just before the ring", 149, 150, &val{Seq: 150, Gap: true, Missed: 1}},
		{"long gone", 3, 4, &val{Seq: 150, Gap: true, Missed: 147}},
		{"now", 250, 251, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch, end := b.SubscribeSince(tc.since, 8)
			defer end()
			if tc.gap != nil {
				if v := recv(t, ch); v != *tc.gap {
					t.Fatalf("first %+v, want %+v", v, *tc.gap)
				}
				tc.firstSeq = tc.gap.Seq + 1
			}
			if tc.firstSeq <= 250 {
				if gaps := stream(t, ch, tc.firstSeq, 250); len(gaps) != 0 {
					t.Fatalf("gaps %v", gaps)
				}
			}
		})
	}
	// Live values follow the replay.
	ch, end := b.SubscribeSince(245, 8)
	defer end()
	b.Publish(val{ID: 250})
	if gaps := stream(t, ch, 246, 251); len(gaps) != 0 {
		t.Fatalf("gaps %v", gaps)
	}

	// A seq this bus has not reached: one gap counting all it published.
	ahead, endAhead := b.SubscribeSince(9999, 8)
	defer endAhead()
	if v := recv(t, ahead); v != (val{Seq: 251, Gap: true, Missed: 251}) {
		t.Fatalf("ahead: %+v", v)
	}
	b.Publish(val{})
	if v := recv(t, ahead); v.Seq != 252 || v.Gap {
		t.Fatalf("after the reset: %+v", v)
	}
	// An empty bus asked for a later seq: the gap says it is at 0.
	empty := newBus(10)
	e, endE := empty.SubscribeSince(7, 1)
	defer endE()
	if v := recv(t, e); v != (val{Seq: 0, Gap: true, Missed: 0}) {
		t.Fatalf("empty bus: %+v", v)
	}
}

// TestBusReplayJoinsLiveUnderConcurrentPublishing: subscribers that
// come back with a since while others publish get every value after it
// once and in order, replay then live with no hole and no repeat, or a
// gap for exactly what the ring lost.
func TestBusReplayJoinsLiveUnderConcurrentPublishing(t *testing.T) {
	t.Parallel()
	const publishers, each = 4, 3000
	b := newBus(1000)
	b.Publish(val{}) // since 0 would mean "live only"
	total := uint64(publishers*each) + 1
	var wg sync.WaitGroup
	for range publishers {
		wg.Go(func() {
			for i := range each {
				b.Publish(val{ID: i})
			}
		})
	}
	var subs sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 24 {
		subs.Go(func() {
			since := b.Seq()
			if i%3 == 1 && since > 500 {
				since -= 500 // in the ring, most likely
			} else if i%3 == 2 && since > 2000 {
				since -= 2000 // past the ring, most likely
			}
			ch, end := b.SubscribeSince(since, 1+i%5)
			defer end()
			want := since + 1
			for want <= total {
				select {
				case v := <-ch:
					switch {
					case v.Gap && v.Missed > 0 && v.Seq+1-v.Missed == want:
						want = v.Seq + 1
					case !v.Gap && v.Seq == want:
						want++
					default:
						errs <- fmt.Errorf("subscriber since %d: got %+v, want seq %d", since, v, want)
						return
					}
				case <-after(t):
					errs <- fmt.Errorf("subscriber since %d: stuck at seq %d of %d", since, want, total)
					return
				}
			}
		})
	}
	wg.Wait()
	subs.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestBusWithoutGap(t *testing.T) {
	t.Parallel()
	b := New(Options[val]{Replay: 10, Stamp: func(v val, seq uint64) val { v.Seq = seq; return v }})
	for range 30 {
		b.Publish(val{})
	}
	ch, end := b.SubscribeSince(5, 4)
	defer end()
	// No gap value: the loss is skipped, the ring's values follow.
	if v := recv(t, ch); v.Seq != 21 {
		t.Fatalf("first %+v", v)
	}
}

func TestBusConcurrentSubscribeAndEnd(t *testing.T) {
	t.Parallel()
	b := newBus(64)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range 1000 {
				b.Publish(val{ID: i})
			}
		})
		wg.Go(func() {
			for i := range 50 {
				ch, end := b.SubscribeSince(uint64(i), 2)
				select {
				case <-ch:
				default:
				}
				end()
			}
		})
	}
	wg.Wait()
	b.CloseAll()
}
