package auditq

import (
	"context"
	"sync"

	"github.com/voltmcp/voltmcp/engine/audit"
)

// Held holds the audit records a call makes until its answer is written
// (see [WithHeld]), so that neither building them nor waking the log's
// writer is on the call's path. A record made after the release goes
// straight to the log.
type Held struct {
	mu       sync.Mutex
	recs     []func() audit.Record
	released bool
}

type heldKey struct{}

// WithHeld returns a context whose records are held until release is
// called; release must be called, and may be called more than once.
// Release builds the records held and returns them, for its caller to
// write ([Queue.PushAll], [Backlog.Add]); a record made after it goes
// straight to the log.
func WithHeld(ctx context.Context) (context.Context, func() []audit.Record) {
	h := &Held{}
	return context.WithValue(ctx, heldKey{}, h), func() []audit.Record {
		h.mu.Lock()
		recs := h.recs
		h.recs, h.released = nil, true
		h.mu.Unlock()
		out := make([]audit.Record, 0, len(recs))
		for _, build := range recs {
			out = append(out, build())
		}
		return out
	}
}

// HeldIn returns the records ctx holds ([WithHeld]), or nil.
func HeldIn(ctx context.Context) *Held {
	h, _ := ctx.Value(heldKey{}).(*Held)
	return h
}

// Hold keeps a record's builder and reports true, unless the records
// were released.
func (h *Held) Hold(build func() audit.Record) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.released {
		return false
	}
	h.recs = append(h.recs, build)
	return true
}
