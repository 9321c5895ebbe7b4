package engine

import (
	"errors"
	"strings"
)

// scrubber removes resolved secret values from text before it leaves the
// engine as an error, a status or an event. Go's errors quote what they
// touched: a URL with its query, an argument, a header value.
type scrubber struct {
	secrets []string
	pairs   []string // old, new, … for strings.Replacer-style rewrites
}

// replace records a value to rewrite as another, such as a URL with a
// token to the same URL with the token redacted.
func (s *scrubber) replace(old, new string) {
	if old != "" && old != new {
		s.pairs = append(s.pairs, old, new)
	}
}

// add records values to scrub. Short values are skipped: scrubbing "1"
// would garble every message while protecting nothing.
func (s *scrubber) add(values ...string) {
	for _, v := range values {
		if len(v) >= 6 {
			s.secrets = append(s.secrets, v)
		}
	}
}

func (s *scrubber) text(t string) string {
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
