package transport

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/voltmcp/voltmcp/redact"
	"github.com/voltmcp/voltmcp/sanitize"
)

// ScrubMarker replaces a secret value in engine text.
const ScrubMarker = "[redacted]"

// Scrubber removes resolved secret values from text before it leaves the
// engine as an error, a status, a stderr tail or an event. Go's errors
// quote what they touched: a URL with its query, an argument, a header
// value; a child echoes its environment. The values are removed in their
// encoded forms too (redact.Forms), each precomputed once when the value
// is added, so scrubbing a text is one pass whatever the number of values.
// It is safe for concurrent use: transports add values while errors are
// scrubbed, and scrubbing takes no lock. The zero value scrubs nothing
// until values are added.
type Scrubber struct {
	mu    sync.Mutex // serializes writers
	pairs []string   // old, new, … for URL-style rewrites
	state atomic.Pointer[scrubState]
}

// scrubState is what text applies, rebuilt when a value is added.
type scrubState struct {
	pairs  *strings.Replacer // nil when there are none
	values *redact.Scrubber
}

// Replace records a value to rewrite as another, such as a URL with a
// token to the same URL with the token redacted.
func (s *Scrubber) Replace(old, new string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old == "" || old == new {
		return
	}
	for i := 0; i+1 < len(s.pairs); i += 2 {
		if s.pairs[i] == old && s.pairs[i+1] == new {
			return
		}
	}
	s.pairs = append(s.pairs, old, new)
	st := s.load()
	st.pairs = strings.NewReplacer(s.pairs...)
	s.state.Store(&st)
}

// Add records values to scrub. Values shorter than redact.MinValueLen are
// skipped; a value already recorded is not added again (transports add
// theirs on every request), and then nothing is rebuilt.
func (s *Scrubber) Add(values ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.load()
	if st.values == nil {
		st.values = redact.NewScrubber(ScrubMarker)
	}
	n := st.values.With(values...)
	if n == st.values && s.state.Load() != nil {
		return
	}
	st.values = n
	s.state.Store(&st)
}

// load returns a copy of the current state; s.mu is held.
func (s *Scrubber) load() scrubState {
	if p := s.state.Load(); p != nil {
		return *p
	}
	return scrubState{}
}

// Text returns t with every recorded value, in each of its encoded
// forms, replaced by [ScrubMarker], after the rewrites recorded by
// [Scrubber.Replace].
func (s *Scrubber) Text(t string) string {
	st := s.state.Load()
	if st == nil || t == "" {
		return t
	}
	if st.pairs != nil {
		t = st.pairs.Replace(t)
	}
	return st.values.Text(t)
}

// Err returns err with its text cleaned (an upstream server's error
// message is untrusted text: see [sanitize.Text]) and scrubbed, in that order,
// so that an escape sequence inside a secret cannot hide it from the
// scrubber. The result answers errors.Is for the original chain
// (context.DeadlineExceeded stays recognizable) but does not unwrap: a
// cause printed on its own could show the secret.
func (s *Scrubber) Err(err error) error {
	if err == nil {
		return nil
	}
	clean, _ := sanitize.Text(err.Error(), 0)
	return &scrubbedError{msg: s.Text(clean), cause: err}
}

type scrubbedError struct {
	msg   string
	cause error
}

func (e *scrubbedError) Error() string        { return e.msg }
func (e *scrubbedError) Is(target error) bool { return errors.Is(e.cause, target) }
