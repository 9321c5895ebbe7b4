package auditq

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/voltmcp/voltmcp/redact"
)

// replacement stands in for a secret the test redactors find.
const replacement = "[REDACTED]"

// scrubRedactor is a [Redactor] that removes known secret values, as the
// engine's redactor does with the values of secret environment
// variables.
type scrubRedactor struct{ s *redact.Scrubber }

func (r *scrubRedactor) Redact(s string) string { return r.s.Text(s) }

// TestRedactMemo checks that the memo in front of a redactor gives what
// the redactor gives, keeps no string the redactor changed, starts over
// for a new redactor, and stays bounded. (TestAuditRedactMemo in package
// engine runs it in front of the default redact policy.)
func TestRedactMemo(t *testing.T) {
	t.Parallel()
	const envSecret = "s3cr3t-env-value"
	ghp := "ghp_" + strings.Repeat("a", 36)
	plain := &scrubRedactor{redact.NewScrubber(replacement, ghp, "abcdefghijklmnop", "user:pass", "hunter22")}
	withEnv := &scrubRedactor{plain.s.With(envSecret)}
	if plain.Redact("token "+ghp) == "token "+ghp || withEnv.Redact(envSecret) == envSecret {
		t.Fatal("the redactors redact nothing: the test proves nothing")
	}
	inputs := []string{"", "call", "serve", "github", "create_issue", "string(12)", "tool allowed by default",
		"token " + ghp, "Authorization: Bearer abcdefghijklmnop", "https://user:pass@example.com/x",
		"password=hunter22", envSecret, "the value " + envSecret + " leaked", strings.Repeat("x", memoMaxLen+1),
		strings.Repeat("y", memoMaxLen+1) + " " + ghp}

	m := &RedactMemo{}
	for _, red := range []*scrubRedactor{plain, withEnv, plain} {
		for range 3 { // the first round fills the memo, the others read it
			for _, s := range inputs {
				if got, want := m.Redact(red, s), red.Redact(s); got != want {
					t.Errorf("memo gave %q for %q, the redactor %q", got, s, want)
				}
			}
		}
		for s := range m.clean {
			if red.Redact(s) != s {
				t.Errorf("the memo keeps %q, which the redactor changes", s)
			}
			if len(s) > memoMaxLen {
				t.Errorf("the memo keeps a string of %d bytes", len(s))
			}
		}
	}
	// The env secret was remembered as clean under plain; withEnv must
	// still redact it.
	m = &RedactMemo{}
	if got := m.Redact(plain, envSecret); got != envSecret {
		t.Fatalf("plain redacted %q to %q", envSecret, got)
	}
	if got := m.Redact(withEnv, envSecret); got != replacement {
		t.Errorf("after a new redactor, %q became %q", envSecret, got)
	}

	// Bounded, and safe for concurrent use.
	m = &RedactMemo{}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 2 * memoStrings {
				s := fmt.Sprintf("value-%d-%d", g, i)
				if got := m.Redact(plain, s); got != s {
					t.Errorf("%q became %q", s, got)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := len(m.clean); n == 0 || n > memoStrings {
		t.Errorf("the memo holds %d strings, want 1..%d", n, memoStrings)
	}
}
