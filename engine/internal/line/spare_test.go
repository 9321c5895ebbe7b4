package line

import (
	"testing"

	"github.com/voltmcp/voltmcp/internal/testwait"
)

// TestSpare keeps buffers of several sizes: Take hands the spare back
// emptied when it is large enough and drops it otherwise, a small buffer
// waits until taken, and a large one is dropped once it waits SpareIdle.
func TestSpare(t *testing.T) {
	t.Parallel()
	const small = 64
	var s Spare
	if s.Take(0) != nil {
		t.Fatal("the zero Spare holds a buffer")
	}
	s.Keep(nil, small) // nothing to keep
	if s.Take(0) != nil {
		t.Fatal("a nil buffer was kept")
	}

	buf := make([]byte, 10, small)
	s.Keep(buf, small)
	got := s.Take(small)
	if len(got) != 0 || cap(got) != small || &got[:1][0] != &buf[:1][0] {
		t.Fatalf("Take returned len %d cap %d, not the buffer kept, emptied", len(got), cap(got))
	}
	if s.Take(0) != nil {
		t.Fatal("a buffer taken is still kept")
	}

	s.Keep(make([]byte, 0, small), small)
	if s.Take(small+1) != nil {
		t.Fatal("Take returned a buffer smaller than asked")
	}
	if s.Take(0) != nil {
		t.Fatal("a spare too small for Take was kept")
	}

	s.Keep(make([]byte, 0, 4*small), small)
	testwait.For(t, "a large spare to be dropped after SpareIdle", func() bool { return s.buf.Load() == nil })
	s.Keep(make([]byte, 0, small), small)
	if s.Take(0) == nil {
		t.Fatal("a small spare was dropped")
	}
}
