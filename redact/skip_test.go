package redact

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestSkipTableNeverMisses checks the Scrubber's prefilter against a
// plain search: a text that holds a form must never be passed over, at
// any offset, for short and long values, one and many.
func TestSkipTableNeverMisses(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "ab/+=%_-AZ09 \n"
	word := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	for range 2000 {
		var forms []string
		for range 1 + rng.IntN(4) {
			forms = append(forms, Forms(word(MinValueLen+rng.IntN(30)))...)
		}
		st := newSkipTable(forms)
		text := word(rng.IntN(200))
		if rng.IntN(2) == 0 {
			i := rng.IntN(len(text) + 1)
			text = text[:i] + forms[rng.IntN(len(forms))] + text[i:]
		}
		holds := false
		for _, f := range forms {
			holds = holds || strings.Contains(text, f)
		}
		if holds && !st.mayHold(text) {
			t.Fatalf("mayHold(%q) = false, but it holds one of %q", text, forms)
		}
	}
}
