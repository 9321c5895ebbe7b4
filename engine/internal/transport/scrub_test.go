package transport

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestScrubber(t *testing.T) {
	var s Scrubber
	s.Add("ghp_secretvalue123", "x")
	s.Replace("https://h.example/mcp?token=abc123", "https://h.example/mcp?token=REDACTED")
	err := fmt.Errorf("dial: %w", context.DeadlineExceeded)
	got := s.Err(fmt.Errorf("post https://h.example/mcp?token=abc123: header ghp_secretvalue123: x y: %w", err))
	if strings.Contains(got.Error(), "abc123") || strings.Contains(got.Error(), "ghp_secret") {
		t.Errorf("scrubbed = %q", got)
	}
	if !strings.Contains(got.Error(), "h.example") || !strings.Contains(got.Error(), " x y") {
		t.Errorf("scrubbed too much: %q", got)
	}
	if !errors.Is(got, context.DeadlineExceeded) {
		t.Error("lost errors.Is")
	}
	if errors.Unwrap(got) != nil {
		t.Error("a scrubbed error must not unwrap to its unscrubbed cause")
	}
}

// BenchmarkScrub measures the scrubber of a server given n secret values
// on an error message and on a 4 KiB stderr tail, neither holding any.
func BenchmarkScrub(b *testing.B) {
	msg := `calling "tools/call": server returned an error: upstream request to https://api.example.com/v1/items failed: 502 Bad Gateway`
	tail := strings.Repeat("2026-05-01T12:00:00Z INFO handled request path=/v1/items status=200 took=12ms\n", 52)
	for _, n := range []int{1, 8} {
		var s Scrubber
		for i := range n {
			s.Add(fmt.Sprintf("ghp_%036d", i))
		}
		s.Replace("https://api.example.com/v1?token=abc123", "https://api.example.com/v1?token=REDACTED")
		for _, c := range []struct{ name, t string }{{"error", msg}, {"stderr4KiB", tail}} {
			b.Run(fmt.Sprintf("%s/%dsecrets", c.name, n), func(b *testing.B) {
				b.SetBytes(int64(len(c.t)))
				b.ReportAllocs()
				for b.Loop() {
					s.Text(c.t)
				}
			})
		}
	}
}
