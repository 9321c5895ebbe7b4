package redact

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkScrubberText measures Text on text that holds none of the
// values (the common case: every string of every audit record), short
// (an audit record's field) and 4 KiB (a stderr tail), for one value and
// for eight.
func BenchmarkScrubberText(b *testing.B) {
	short := `calling "tools/call": server returned an error: upstream request failed: 502 Bad Gateway`
	long := strings.Repeat("2026-05-01T12:00:00Z INFO handled request path=/v1/items status=200 took=12ms\n", 52)
	for _, n := range []int{1, 8} {
		var vals []string
		for i := range n {
			vals = append(vals, fmt.Sprintf("ghp_%036d", i))
		}
		s := NewScrubber("[REDACTED]", vals...)
		for _, c := range []struct{ name, t string }{{"short", short}, {"4KiB", long}} {
			b.Run(fmt.Sprintf("%s/%dvalues", c.name, n), func(b *testing.B) {
				b.SetBytes(int64(len(c.t)))
				b.ReportAllocs()
				for b.Loop() {
					s.Text(c.t)
				}
			})
		}
	}
}
