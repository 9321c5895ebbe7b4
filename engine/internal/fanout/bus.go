package fanout

import (
	"sync"
	"sync/atomic"
)

// DefaultBuffer is the buffer of a subscription asked for with a
// buffer <= 0.
const DefaultBuffer = 64

// Bus fans values of type E out to subscribers. A subscriber that does
// not keep up loses values rather than slowing the publisher. The zero
// Bus is ready to use; a Bus must not be copied after first use.
type Bus[E any] struct {
	mu   sync.Mutex
	subs map[*subscription[E]]struct{}
	// n is len(subs), read without mu: publishing to no one takes no
	// lock.
	n atomic.Int32
}

type subscription[E any] struct {
	ch      chan E
	dropped int
}

// Publish hands ev to every subscriber whose buffer has room, and drops
// it for the others. With no subscriber it returns at once: a value
// published as the first subscriber comes may miss it, as one just
// before would.
func (b *Bus[E]) Publish(ev E) {
	if b.n.Load() == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs {
		select {
		case s.ch <- ev:
		default:
			s.dropped++
		}
	}
}

// Listening reports whether anyone subscribes.
func (b *Bus[E]) Listening() bool {
	return b.n.Load() > 0
}

// Subscribe returns a channel of the values published from now on, which
// holds buffer of them ([DefaultBuffer] when buffer <= 0), and a function
// that ends the subscription and closes the channel. The function may be
// called more than once, and after [Bus.CloseAll].
func (b *Bus[E]) Subscribe(buffer int) (<-chan E, func()) {
	if buffer <= 0 {
		buffer = DefaultBuffer
	}
	s := &subscription[E]{ch: make(chan E, buffer)}
	b.mu.Lock()
	if b.subs == nil {
		b.subs = map[*subscription[E]]struct{}{}
	}
	b.subs[s] = struct{}{}
	b.n.Store(int32(len(b.subs)))
	b.mu.Unlock()
	var once sync.Once
	return s.ch, func() {
		once.Do(func() {
			b.mu.Lock()
			_, live := b.subs[s]
			delete(b.subs, s)
			b.n.Store(int32(len(b.subs)))
			b.mu.Unlock()
			if live { // CloseAll closed it already
				close(s.ch)
			}
		})
	}
}

// CloseAll ends every subscription, closing its channel.
func (b *Bus[E]) CloseAll() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs {
		delete(b.subs, s)
		close(s.ch)
	}
	b.n.Store(0)
}
