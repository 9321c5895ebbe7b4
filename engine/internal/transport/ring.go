package transport

import "sync"

// Ring keeps the last n bytes written to it, for a server's stderr:
// enough to show why it died, never an unbounded buffer however much it
// prints. It is safe for concurrent use.
type Ring struct {
	mu    sync.Mutex
	size  int // capacity, allocated on the first write
	buf   []byte
	start int // index of the oldest byte when full
	full  bool
	total int64 // bytes ever written
}

// NewRing returns a ring that keeps n bytes. It allocates nothing until
// written to: most servers never print to stderr, and HTTP servers have
// none.
func NewRing(n int) *Ring { return &Ring{size: n} }

// Write implements io.Writer; it never fails.
func (r *Ring) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(p)
	if n == 0 {
		return 0, nil
	}
	r.total += int64(n)
	if r.buf == nil {
		r.buf = make([]byte, 0, r.size)
	}
	c := cap(r.buf)
	if n >= c {
		r.buf = append(r.buf[:0], p[n-c:]...)
		r.start, r.full = 0, true
		return n, nil
	}
	for len(p) > 0 {
		if !r.full {
			room := c - len(r.buf)
			k := min(room, len(p))
			r.buf = append(r.buf, p[:k]...)
			p = p[k:]
			if len(r.buf) == c {
				r.full = true
			}
			continue
		}
		k := copy(r.buf[r.start:], p)
		p = p[k:]
		r.start = (r.start + k) % c
	}
	return n, nil
}

// Bytes returns the kept bytes, oldest first.
func (r *Ring) Bytes() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.full {
		return append([]byte(nil), r.buf...)
	}
	out := make([]byte, 0, len(r.buf))
	out = append(out, r.buf[r.start:]...)
	return append(out, r.buf[:r.start]...)
}

// Total returns how many bytes were ever written.
func (r *Ring) Total() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total
}
