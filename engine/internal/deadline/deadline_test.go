package deadline

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/internal/testwait"
)

// TestCallDeadlines checks the contexts of a Timer against what
// context.WithTimeout promises: each ends at its own deadline with
// DeadlineExceeded (a sooner deadline after a later one too), on cancel
// or with its parent with Canceled, and context.AfterFunc sees it end.
func TestCallDeadlines(t *testing.T) {
	var d Timer
	ended := func(ctx context.Context) bool {
		select {
		case <-ctx.Done():
			return true
		default:
			return false
		}
	}
	long, cancelLong := d.WithTimeout(context.Background(), time.Hour)
	defer cancelLong()
	start := time.Now()
	short, cancelShort := d.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancelShort()
	// testwait: the deadline under test
	if dl, ok := short.Deadline(); !ok || dl.Before(start.Add(50*time.Millisecond)) || dl.After(time.Now().Add(50*time.Millisecond)) {
		t.Errorf("Deadline() = %v, %v; want 50ms from the call", dl, ok)
	}
	after := make(chan error, 1)
	context.AfterFunc(short, func() { after <- short.Err() })
	select {
	case err := <-after:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("the short call ended with %v, want DeadlineExceeded", err)
		}
		if waited := time.Since(start); waited < 50*time.Millisecond {
			t.Errorf("the short call ended after %v, before its deadline", waited)
		}
	case <-time.After(testwait.Patience):
		t.Fatal("the short call never ended: a sooner deadline did not move the timer")
	}
	if ended(long) {
		t.Errorf("the long call ended with the short one: %v", long.Err())
	}

	// Cancel, and the parent's end, are not deadlines.
	c1, cancel1 := d.WithTimeout(context.Background(), time.Hour)
	cancel1()
	if !ended(c1) || !errors.Is(c1.Err(), context.Canceled) {
		t.Errorf("after cancel: %v", c1.Err())
	}
	parent, cancelParent := context.WithCancel(context.Background())
	c2, cancel2 := d.WithTimeout(parent, time.Hour)
	defer cancel2()
	cancelParent()
	if !ended(c2) || !errors.Is(c2.Err(), context.Canceled) {
		t.Errorf("after the parent's cancel: %v", c2.Err())
	}
	// A parent's sooner deadline is the call's.
	// testwait: a deadline under test, not a wait
	soon, cancelSoon := context.WithTimeout(context.Background(), time.Minute)
	defer cancelSoon()
	c3, cancel3 := d.WithTimeout(soon, time.Hour)
	defer cancel3()
	if want, _ := soon.Deadline(); func() bool { got, _ := c3.Deadline(); return !got.Equal(want) }() {
		t.Error("the parent's sooner deadline is not the call's")
	}

	// Calls that end are forgotten; the timer, still armed for the long
	// call, ends nothing early.
	d.mu.Lock()
	n := len(d.calls)
	d.mu.Unlock()
	if n != 3 { // long, c2 and c3
		t.Errorf("%d calls tracked, want 3", n)
	}
}
