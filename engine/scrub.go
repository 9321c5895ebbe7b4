package engine

import (
	"errors"
	"slices"
	"strings"
	"sync"
)

// scrubber removes resolved secret values from text before it leaves the
// engine as an error, a status or an event. Go's errors quote what they
// touched: a URL with its query, an argument, a header value. It is safe
// for concurrent use: transports add values while errors are scrubbed.
type scrubber struct {
	mu      sync.Mutex
	secrets []string
	pairs   []string // old, new, … for strings.Replacer-style rewrites
}

// replace records a value to rewrite as another, such as a URL with a
// token to the same URL with the token redacted.
func (s *scrubber) replace(old, new string) {
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
}

// add records values to scrub. Short values are skipped: scrubbing "1"
// would garble every message while protecting nothing. A value already
// recorded is not added again (transports add theirs on every request).
func (s *scrubber) add(values ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range values {
		if len(v) >= 6 && !slices.Contains(s.secrets, v) {
			s.secrets = append(s.secrets, v)
		}
	}
}

func (s *scrubber) text(t string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := 0; i+1 < len(s.pairs); i += 2 {
		t = strings.ReplaceAll(t, s.pairs[i], s.pairs[i+1])
	}
	for _, v := range s.secrets {
		t = strings.ReplaceAll(t, v, "[redacted]")
	}
	return t
}

// err returns err with its text scrubbed. The result answers errors.Is
// for the original chain (context.DeadlineExceeded stays recognizable) but
// does not unwrap: a cause printed on its own could show the secret.
func (s *scrubber) err(err error) error {
	if err == nil {
		return nil
	}
	return &scrubbedError{msg: s.text(err.Error()), cause: err}
}

type scrubbedError struct {
	msg   string
	cause error
}

func (e *scrubbedError) Error() string        { return e.msg }
func (e *scrubbedError) Is(target error) bool { return errors.Is(e.cause, target) }
