package line

import (
	"sync/atomic"
	"time"
)

// SpareIdle is how long a Spare keeps a large buffer no message took.
const SpareIdle = time.Second

// Spare keeps one buffer let go of, for the next message that needs one:
// a peer that sends large messages in a row has them read into one
// buffer, rather than leaving one as garbage for each, and an idle
// connection holds no large buffer for long, since one that waits
// SpareIdle unused is dropped. It holds at most one buffer. Keep and
// Take are called by one goroutine at a time (the connection's reader);
// the drop runs on a timer. The zero value holds nothing.
type Spare struct {
	buf  atomic.Pointer[[]byte]
	drop *time.Timer
}

// Keep keeps buf, emptied, as the spare in place of any other; a buffer
// of more than small bytes is dropped once it waits SpareIdle.
func (s *Spare) Keep(buf []byte, small int) {
	if buf == nil {
		return
	}
	buf = buf[:0]
	s.buf.Store(&buf)
	if cap(buf) <= small {
		return
	}
	if s.drop == nil {
		s.drop = time.AfterFunc(SpareIdle, func() { s.buf.Store(nil) })
	} else {
		s.drop.Reset(SpareIdle)
	}
}

// Take returns the spare, emptied, when it holds at least need bytes, and
// nil otherwise; either way the spare is no longer kept (a smaller one is
// dropped: the buffer that grows past it becomes the next spare).
func (s *Spare) Take(need int) []byte {
	sp := s.buf.Swap(nil)
	if sp == nil || cap(*sp) < need {
		return nil
	}
	return *sp
}
