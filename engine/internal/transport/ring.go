package transport

import (
	"strings"
	"sync"

	"github.com/voltmcp/voltmcp/sanitize"
)

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

// Bounds of [Ring.Tail].
const (
	tailScan  = 4 << 10 // bytes of the ring a tail is taken from
	tailLines = 3
	tailBytes = 600
)

// Tail returns the last lines written to the ring, joined by " | ":
// cleaned (see [sanitize.Output]), tabs as spaces, at most 3 lines of
// the last 4 KiB and 600 bytes, cut at the front. It is not scrubbed.
func (r *Ring) Tail() string {
	b := r.Bytes()
	if len(b) > tailScan {
		b = b[len(b)-tailScan:]
	}
	// Cleaned whole before it is split, so that an escape sequence
	// loses its parameters as well as its introducer.
	text, _ := sanitize.Output(string(b))
	text = strings.TrimRight(text, "\r\n\t ")
	lines := strings.Split(text, "\n")
	if len(lines) > tailLines {
		lines = lines[len(lines)-tailLines:]
	}
	for i, l := range lines {
		lines[i] = strings.ReplaceAll(strings.TrimRight(l, "\r"), "\t", " ")
	}
	tail := strings.Join(lines, " | ")
	if len(tail) > tailBytes {
		tail = "…" + strings.ToValidUTF8(tail[len(tail)-tailBytes:], "")
	}
	return tail
}

// LastLine returns the last line written to the ring, at most its last
// 300 bytes, cleaned as text (see [sanitize.Text]); "" when there is
// none. It is not scrubbed.
func (r *Ring) LastLine() string {
	text := strings.TrimRight(string(r.Bytes()), "\r\n\t ")
	if i := strings.LastIndexByte(text, '\n'); i >= 0 {
		text = text[i+1:]
	}
	if len(text) > 300 {
		text = text[len(text)-300:]
	}
	out, _ := sanitize.Text(text, 0)
	return out
}
