package engine

import (
	"fmt"

	"github.com/voltmcp/voltmcp/engine/serverlog"
)

// The bounds of [Engine.ServerLog].
const (
	// DefaultLogRecords is how many records ServerLog returns when asked
	// for zero.
	DefaultLogRecords = 200
	// MaxLogRecords is the most records ServerLog returns.
	MaxLogRecords = 2000
)

// ServerLog returns the last records of the log of server id (package
// serverlog: what a stdio server wrote to stderr and the errors of its
// transport, each scrubbed as it was written), oldest first: at most max
// of them (zero is [DefaultLogRecords]; more than [MaxLogRecords] is
// MaxLogRecords), and whether older ones were left out. What the server
// wrote up to now is in it; a server that has written nothing has no
// records.
func (e *Engine) ServerLog(id string, max int) ([]serverlog.Record, bool, error) {
	s, err := e.supervisor(id)
	if err != nil {
		return nil, false, err
	}
	switch {
	case max <= 0:
		max = DefaultLogRecords
	case max > MaxLogRecords:
		max = MaxLogRecords
	}
	w := s.serverLog
	_ = w.Flush() // a log that cannot be written says so in its own records
	var recs []serverlog.Record
	more := false
	err = serverlog.Read(w.Path(), func(r serverlog.Record) error {
		recs = append(recs, r)
		if len(recs) >= 2*max {
			recs, more = append(recs[:0], recs[len(recs)-max:]...), true
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("server %s: read its log: %w", s.cfg.ID, err)
	}
	if len(recs) > max {
		recs, more = recs[len(recs)-max:], true
	}
	return recs, more, nil
}
