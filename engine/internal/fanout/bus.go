package fanout

import (
	"slices"
	"sync"
	"sync/atomic"
)

// DefaultBuffer is the buffer of a subscription asked for with a
// buffer <= 0.
const DefaultBuffer = 64

// DefaultReplay is how many values a [Bus] made with Options.Replay <= 0
// keeps for replay.
const DefaultReplay = 1000

// catchUpBatch bounds how many values a subscriber's catching up hands
// over under the bus's lock at a time, so that a publisher waits for
// the lock no longer than that takes.
const catchUpBatch = 64

// Options configure a [Bus].
type Options[E any] struct {
	// Replay is how many of the last values the bus keeps, for
	// subscribers that come back ([Bus.SubscribeSince]) and for those
	// that fell behind. Zero or less: [DefaultReplay].
	Replay int
	// Stamp, when set, is called with each value as it is published,
	// under the bus's lock, with the value's sequence number: 1 for the
	// first value of the bus, one more for each next. What it returns is
	// what every subscriber and the replay ring get. (It takes and
	// returns the value rather than a pointer, which would make every
	// value published escape to the heap.)
	Stamp func(v E, seq uint64) E
	// Gap makes the value that tells a subscriber it lost missed values,
	// the last of which had the sequence number last. Nil: the loss is
	// not told (the values are still skipped).
	Gap func(last, missed uint64) E
}

// Bus fans values of type E out to subscribers, numbers them and keeps
// the last ones in a ring (see the package doc). Make one with [New]; a
// Bus must not be copied after first use.
type Bus[E any] struct {
	opts Options[E]

	mu  sync.Mutex
	seq uint64 // of the last value published
	// ring holds the last values: the value of seq s is at
	// (s-1) % opts.Replay. It grows to opts.Replay as values come.
	ring []E
	subs []*subscription[E]
	// closed is set by CloseAll: a subscription made after it ends at
	// once.
	closed bool
	// n is len(subs), read without mu (Listening).
	n atomic.Int32
}

// subscription is one subscriber. Its channel gets values two ways:
// while live, from Publish itself (a send that never waits); while not,
// from its pump, which hands it from the ring what it has not had, in
// order, and makes it live again once it has had all. Both happen under
// the bus's lock, which is how no value is missed or repeated when one
// way takes over from the other.
type subscription[E any] struct {
	ch chan E
	// The fields below are guarded by the bus's mu.
	live  bool
	next  uint64 // the seq the pump hands next, while not live
	ended bool
	// reset, when set, is the gap the pump hands first: the subscriber
	// asked for values after a seq the bus has not reached.
	reset *gapOf
	// wake tells the pump it is no longer live; done that the
	// subscription ended.
	wake chan struct{}
	done chan struct{}
}

type gapOf struct{ last, missed uint64 }

// New returns a Bus.
func New[E any](opts Options[E]) *Bus[E] {
	if opts.Replay <= 0 {
		opts.Replay = DefaultReplay
	}
	return &Bus[E]{opts: opts}
}

// Publish numbers v, keeps it in the ring and hands it to every
// subscriber that is live and has room in its channel. A subscriber
// without room is not waited for: it gets v, and what follows, from the
// ring once it has room, or a gap for what fell out of the ring before
// then. Publish allocates nothing once the ring is full, and holds the
// lock only to number, store and try each live subscriber's channel.
// It returns v's sequence number.
func (b *Bus[E]) Publish(v E) uint64 {
	b.mu.Lock()
	b.seq++
	seq := b.seq
	if b.opts.Stamp != nil {
		v = b.opts.Stamp(v, seq)
	}
	if i := int((seq - 1) % uint64(b.opts.Replay)); i == len(b.ring) {
		b.ring = append(b.ring, v)
	} else {
		b.ring[i] = v
	}
	for _, s := range b.subs {
		if !s.live {
			// Its pump is on its way; one that holds a gap counts
			// again.
			select {
			case s.wake <- struct{}{}:
			default:
			}
			continue
		}
		select {
		case s.ch <- v:
		default:
			s.live, s.next = false, seq
			select {
			case s.wake <- struct{}{}:
			default:
			}
		}
	}
	b.mu.Unlock()
	return seq
}

// Seq returns the sequence number of the last value published, 0 before
// the first.
func (b *Bus[E]) Seq() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.seq
}

// Listening reports whether anyone subscribes.
func (b *Bus[E]) Listening() bool {
	return b.n.Load() > 0
}

// Subscribe is SubscribeSince(0, buffer): the values published from now
// on.
func (b *Bus[E]) Subscribe(buffer int) (<-chan E, func()) {
	return b.SubscribeSince(0, buffer)
}

// SubscribeSince returns a channel of values and a function that ends the
// subscription. The channel holds buffer values ([DefaultBuffer] when
// buffer <= 0). With since 0 it gets the values published from now on.
// With since > 0 it first gets every value after since that the ring
// still holds, then the values published from now on, with none missed
// or repeated between the two; values after since that the ring no
// longer holds come first as one gap (Options.Gap) counting them. A
// since the bus has not reached (a subscriber that knew another bus, or
// this one before a restart) gets one gap that counts every value
// published so far, with the last one's sequence number, then the values
// from now on.
//
// The function ends the subscription; the channel then closes, keeping
// what it holds for its reader. It may be called more than once, and
// after [Bus.CloseAll].
func (b *Bus[E]) SubscribeSince(since uint64, buffer int) (<-chan E, func()) {
	if buffer <= 0 {
		buffer = DefaultBuffer
	}
	s := &subscription[E]{ch: make(chan E, buffer), wake: make(chan struct{}, 1), done: make(chan struct{})}
	b.mu.Lock()
	switch {
	case b.closed:
		b.mu.Unlock()
		b.endLocked(s) // s is no one else's yet
		go b.pump(s)
		return s.ch, func() {}
	case since == 0 || since == b.seq:
		s.live = true
	case since > b.seq:
		s.reset = &gapOf{last: b.seq, missed: b.seq}
		s.next = b.seq + 1
		s.wake <- struct{}{}
	default:
		s.next = since + 1
		s.wake <- struct{}{}
	}
	b.subs = append(b.subs, s)
	b.n.Store(int32(len(b.subs)))
	b.mu.Unlock()
	go b.pump(s)
	return s.ch, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if s.ended {
			return
		}
		for i, o := range b.subs {
			if o == s {
				b.subs = slices.Delete(b.subs, i, i+1)
				break
			}
		}
		b.n.Store(int32(len(b.subs)))
		b.endLocked(s)
	}
}

// CloseAll ends every subscription; each channel closes, keeping what it
// holds for its reader. A subscription made after it gets a channel that
// closes at once.
func (b *Bus[E]) CloseAll() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for _, s := range b.subs {
		b.endLocked(s)
	}
	clear(b.subs)
	b.subs = b.subs[:0]
	b.n.Store(0)
}

// endLocked marks s ended: nothing sends to its channel any more but its
// pump, which closes it.
func (b *Bus[E]) endLocked(s *subscription[E]) {
	s.ended = true
	close(s.done)
}

// pump runs for the life of s: each time s is no longer live, it hands s
// what it missed (catchUp). It closes s's channel when s ends.
func (b *Bus[E]) pump(s *subscription[E]) {
	defer close(s.ch)
	for {
		select {
		case <-s.wake:
		case <-s.done:
			return
		}
		if !b.catchUp(s) {
			return
		}
	}
}

// catchUp hands s, in order, what it has not had: a gap first when it
// asked for values after a seq the bus has not reached, a gap for what
// fell out of the ring, then what the ring holds. Under the bus's lock
// it only tries the channel; when the channel is full it lets the lock
// go and waits for room with the value in hand. A gap in hand is counted
// again at each value published meanwhile, so that one gap counts all
// that was lost before the subscriber had room. It makes s live again
// once s has had every value, under the lock, so that the next value
// published goes to it directly. It reports false when s ended. While s
// is not live, s.next and s.reset are the pump's alone.
func (b *Bus[E]) catchUp(s *subscription[E]) bool {
	for {
		b.mu.Lock()
		if s.ended {
			b.mu.Unlock()
			return false
		}
		if s.live {
			b.mu.Unlock()
			return true // a wake from before it went live
		}
		var t take[E]
		full := false
		for range catchUpBatch {
			var ok bool
			if t, ok = b.peek(s); !ok {
				s.live = true
				b.mu.Unlock()
				return true
			}
			select {
			case s.ch <- t.v:
				t.commit(s)
				continue
			default:
				full = true
			}
			break
		}
		b.mu.Unlock()
		if !full {
			continue // a batch handed over: let publishers in
		}
		if t.gap {
			select {
			case s.ch <- t.v:
				t.commit(s)
			case <-s.wake:
				// More was published, and maybe lost: count again.
			case <-s.done:
				return false
			}
			continue
		}
		select {
		case s.ch <- t.v:
			t.commit(s)
		case <-s.done:
			return false
		}
	}
}

// take is what a subscriber that is catching up gets next: v, and
// where it stands once v is handed over.
type take[E any] struct {
	v     E
	next  uint64
	gap   bool
	reset bool // v is the reset gap
}

func (t take[E]) commit(s *subscription[E]) {
	s.next = t.next
	if t.reset {
		s.reset = nil
	}
}

// peek returns, with b.mu held, what s gets next: a pending reset gap, a
// gap for the values from s.next on that the ring lost, or the ring's
// value s.next. ok is false when s has had every value.
func (b *Bus[E]) peek(s *subscription[E]) (t take[E], ok bool) {
	next := s.next
	if g := s.reset; g != nil {
		if b.opts.Gap != nil {
			return take[E]{v: b.opts.Gap(g.last, g.missed), next: next, gap: true, reset: true}, true
		}
		s.reset = nil
	}
	if next > b.seq {
		return t, false
	}
	if oldest := b.seq - uint64(len(b.ring)) + 1; next < oldest {
		if b.opts.Gap != nil {
			return take[E]{v: b.opts.Gap(oldest-1, oldest-next), next: oldest, gap: true}, true
		}
		next = oldest
	}
	return take[E]{v: b.ring[(next-1)%uint64(b.opts.Replay)], next: next + 1}, true
}
