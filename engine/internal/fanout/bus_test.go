package fanout

import (
	"sync"
	"testing"
)

func TestBusFansOut(t *testing.T) {
	var b Bus[int]
	b.Publish(0) // no one listens: dropped, no lock
	if b.Listening() {
		t.Fatal("listening with no subscriber")
	}
	a, endA := b.Subscribe(4)
	c, endC := b.Subscribe(0)
	if !b.Listening() || cap(c) != DefaultBuffer {
		t.Fatalf("listening %v, default buffer %d", b.Listening(), cap(c))
	}
	for i := 1; i <= 6; i++ {
		b.Publish(i)
	}
	// a's buffer holds 4: the rest is lost to it, not to c.
	endA()
	endA() // twice is fine
	var got []int
	for v := range a {
		got = append(got, v)
	}
	if len(got) != 4 || got[0] != 1 || got[3] != 4 {
		t.Errorf("a got %v", got)
	}
	if len(c) != 6 {
		t.Errorf("c holds %d", len(c))
	}
	b.CloseAll()
	if b.Listening() {
		t.Error("listening after CloseAll")
	}
	n := 0
	for range c {
		n++
	}
	if n != 6 {
		t.Errorf("c drained %d", n)
	}
	endC() // after CloseAll: no double close
	b.Publish(7)
}

func TestBusConcurrent(t *testing.T) {
	var b Bus[int]
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				b.Publish(i)
			}
		}()
		go func() {
			defer wg.Done()
			for range 50 {
				ch, end := b.Subscribe(8)
				select {
				case <-ch:
				default:
				}
				end()
			}
		}()
	}
	wg.Wait()
	b.CloseAll()
}
