package auditq

import (
	"strings"
	"sync"
)

// Bounds of a [RedactMemo].
const (
	// memoStrings is how many strings it remembers; when full, it
	// starts over.
	memoStrings = 1024
	// memoMaxLen is the longest string it remembers, in bytes.
	memoMaxLen = 256
)

// A Redactor replaces the secrets in a string. Its result depends on
// nothing but the redactor and the string. A [RedactMemo] compares
// redactors with ==: a Redactor is a pointer (the engine's is a
// *policies.Redactor).
type Redactor interface {
	Redact(s string) string
}

// RedactMemo remembers the short strings a [Redactor] left unchanged, so
// that the strings every audit record repeats (kind, surface, server and
// tool names, argument descriptions, detail keys and most of their
// values) are scanned once per redactor rather than once per record. A
// remembered string needs no second scan; a new redactor (a reload)
// starts a new memo. Only strings the redactor left alone are kept: the
// memo holds no secret that the redactor found. The zero value is an
// empty memo; it is safe for concurrent use.
type RedactMemo struct {
	mu    sync.Mutex
	red   Redactor            // the redactor clean belongs to
	clean map[string]struct{} // strings red.Redact returns unchanged
}

// Redact returns red.Redact(s).
func (m *RedactMemo) Redact(red Redactor, s string) string {
	if len(s) > memoMaxLen {
		return red.Redact(s)
	}
	m.mu.Lock()
	if m.red != red {
		m.red, m.clean = red, nil
	}
	_, ok := m.clean[s]
	m.mu.Unlock()
	if ok {
		return s
	}
	out := red.Redact(s)
	if out != s {
		return out
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.red != red {
		return out
	}
	if m.clean == nil || len(m.clean) >= memoStrings {
		m.clean = make(map[string]struct{}, memoStrings)
	}
	// A copy: s may be a slice of a much larger string.
	m.clean[strings.Clone(s)] = struct{}{}
	return out
}
