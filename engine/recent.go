package engine

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/voltmcp/voltmcp/engine/audit"
	"github.com/voltmcp/voltmcp/engine/internal/output"
)

// DefaultRecentCalls is how many of each server's latest calls an
// Engine keeps when Options.RecentCalls is zero: the spec's 50.
const DefaultRecentCalls = 50

// SummaryRecentCalls is how many of a server's latest calls each
// summary of [Engine.Servers] carries: the list of every server stays
// small and cheap to build. [Engine.Server] and [Engine.RecentCalls]
// give all that are kept.
const SummaryRecentCalls = 5

// maxRecentReason bounds a recent call's reason, in bytes.
const maxRecentReason = 1024

// loggedCallsMaxBytes bounds how much of the audit log
// [Engine.LoggedRecentCalls] reads, from its end.
const loggedCallsMaxBytes = 8 << 20

// RecentCall is one call the engine made to a tool of a server, through
// the gateway: the spec's McpRecentCallSummary, with voltmcp's outcome
// and reason added. It holds no argument and no result, only their
// size.
type RecentCall struct {
	// ID is the call's id: the CallID of its events and the call_id of
	// its audit record.
	ID string `json:"id"`
	// Timestamp is when the gateway was given the call.
	Timestamp time.Time `json:"timestamp"`
	Server    string    `json:"server"`
	// Tool is the tool called; for a call that named no tool there is,
	// the name asked for, cleaned and capped.
	Tool string `json:"tool"`
	// Risk is the tool's risk class; unknown for a call refused before
	// its tool was found.
	Risk Risk `json:"risk"`
	// Status is the spec's: started while the call runs, then completed,
	// failed or cancelled. A call refused by a decision, or that could
	// not be made, is failed; Outcome then says how.
	Status string `json:"status"`
	// Outcome is the status of the call's audit record when Status does
	// not say it: denied (a decision refused it), invalid (no such tool,
	// arguments that are not an object) or error (it could not be made).
	Outcome string `json:"outcome,omitempty"`
	// Reason says why a call that did not complete ended as it did,
	// scrubbed and redacted as its audit record is, and bounded.
	Reason     string `json:"reason,omitempty"`
	DurationMs int64  `json:"durationMs,omitempty"`
	// OutputBytes is the size of the output the server returned, as the
	// audit record counts it; Truncated says the caller saw it cut.
	OutputBytes int64 `json:"outputBytes,omitempty"`
	Truncated   bool  `json:"truncated,omitempty"`

	// asked is set when Tool is the name the caller asked for, not one
	// the server listed.
	asked bool
}

// recentBook keeps each server's latest calls, by server id, across
// reloads that keep the server.
type recentBook struct {
	mu   sync.Mutex
	size int
	by   map[string]*recentRing
}

// recentRing is one server's latest calls: the call added n-th (from 0)
// is at n % size while it is among the last size.
type recentRing struct {
	calls []RecentCall
	added int
}

// recentRef finds a call in its ring again, to update it.
type recentRef struct {
	r *recentRing
	n int
}

func newRecentBook(size int) *recentBook {
	if size <= 0 {
		size = DefaultRecentCalls
	}
	return &recentBook{size: size, by: map[string]*recentRing{}}
}

// add keeps c as its server's latest call.
func (b *recentBook) add(c RecentCall) recentRef {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.by[c.Server]
	if r == nil {
		r = &recentRing{}
		b.by[c.Server] = r
	}
	if i := r.added % b.size; i == len(r.calls) {
		r.calls = append(r.calls, c)
	} else {
		r.calls[i] = c
	}
	r.added++
	return recentRef{r, r.added - 1}
}

// update changes the call ref names in place, unless newer calls have
// pushed it out.
func (b *recentBook) update(ref recentRef, f func(*RecentCall)) {
	if ref.r == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if ref.r.added-ref.n <= b.size {
		f(&ref.r.calls[ref.n%b.size])
	}
}

// list returns a copy of a server's latest n calls, newest first.
func (b *recentBook) list(server string, n int) []RecentCall {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := []RecentCall{}
	r := b.by[server]
	if r == nil {
		return out
	}
	for k := r.added - 1; k >= 0 && k >= r.added-b.size && len(out) < n; k-- {
		out = append(out, r.calls[k%b.size])
	}
	return out
}

// retain forgets the calls of the servers keep does not keep.
func (b *recentBook) retain(keep func(server string) bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for id := range b.by {
		if !keep(id) {
			delete(b.by, id)
		}
	}
}

// RecentCalls returns a server's latest calls through the gateway, newest
// first: at most Options.RecentCalls, those this Engine made (a call
// refused before it was sent counts, as it counts in the audit log). A
// call is there as started from when it is sent, and ends in place. The
// error is [ErrUnknownServer] for an id that is not configured; a server
// of an untrusted project has none.
func (e *Engine) RecentCalls(server string) ([]RecentCall, error) {
	if _, ok := e.untrustedServer(server); ok {
		return []RecentCall{}, nil
	}
	s, err := e.supervisor(server)
	if err != nil {
		return nil, err
	}
	return e.recentCalls(s.cfg.ID, e.recent.size), nil
}

// recentCalls returns a server's latest n calls, their reasons and the
// tool names callers asked for redacted by the audit log's redactor
// (auditRedactor): the one that applies to what the audit record of the
// same call holds. Only such calls wait for it (it may wait for the
// policies to load).
func (e *Engine) recentCalls(server string, n int) []RecentCall {
	calls := e.recent.list(server, n)
	for i := range calls {
		c := &calls[i]
		if c.Reason == "" && !c.asked {
			continue
		}
		if red := e.auditRedactor(); red != nil {
			c.Reason, c.Tool = red.Redact(c.Reason), red.Redact(c.Tool)
		}
	}
	return calls
}

// LoggedRecentCalls returns a server's latest calls as the audit log
// records them, newest first: at most Options.RecentCalls, whatever
// process made them (a one-shot command has made none itself). It reads
// the log backward from its end, and at most loggedCallsMaxBytes of it.
// A call still running is not there (its record is written when it
// ends); a record written before records named their calls has an id
// made of its seq ("audit_SEQ"). The error is [ErrUnknownServer] for an
// id that is not configured, or why the log could not be read.
func (e *Engine) LoggedRecentCalls(server string) ([]RecentCall, error) {
	id := server
	if _, ok := e.untrustedServer(server); !ok {
		s, err := e.supervisor(server)
		if err != nil {
			return nil, err
		}
		id = s.cfg.ID
	}
	if e.opts.DisableAudit {
		return []RecentCall{}, nil
	}
	recs, err := audit.Last(audit.DefaultPath(e.opts.AgentDir), e.recent.size, loggedCallsMaxBytes, func(r audit.Record) bool {
		return r.Kind == audit.KindCall && r.Server == id
	})
	out := make([]RecentCall, 0, len(recs))
	for _, r := range recs {
		out = append(out, recentFromRecord(r))
	}
	// A call's record joins the log when it ends, after its answer (a
	// risky call's with the backlog, a refused call's at once): newest
	// first is by when each call was made, not by where its record is.
	sort.SliceStable(out, func(i, j int) bool { return out[i].Timestamp.After(out[j].Timestamp) })
	return out, err
}

// recentFromRecord is the recent call an audit call record tells of.
func recentFromRecord(r audit.Record) RecentCall {
	status, outcome := callStatus(r.Status, false)
	c := RecentCall{ID: r.CallID, Timestamp: r.Time.Add(-time.Duration(r.DurationMS) * time.Millisecond), Server: r.Server,
		Tool: output.CleanText(r.Tool, maxAskedToolChars), Risk: Risk(r.Risk), Status: status, Outcome: outcome,
		DurationMs: r.DurationMS, OutputBytes: r.ResultBytes, Truncated: r.Truncated}
	if c.ID == "" {
		c.ID = fmt.Sprintf("audit_%d", r.Seq)
	}
	if c.Risk == "" {
		c.Risk = RiskUnknown
	}
	switch {
	case r.Reason != "":
		c.Reason = r.Reason
	case outcome != "" && r.Decision != nil:
		c.Reason = strings.Join(r.Decision.Reasons, "; ")
	}
	c.Reason = capReason(c.Reason)
	return c
}

// capReason bounds a recent call's reason.
func capReason(s string) string {
	if len(s) <= maxRecentReason {
		return s
	}
	return s[:output.CutPoint(s, maxRecentReason)] + "…"
}
