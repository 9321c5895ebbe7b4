package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestScrubber(t *testing.T) {
	var s scrubber
	s.add("ghp_secretvalue123", "x")
	s.replace("https://h.example/mcp?token=abc123", "https://h.example/mcp?token=REDACTED")
	err := fmt.Errorf("dial: %w", context.DeadlineExceeded)
	got := s.err(fmt.Errorf("post https://h.example/mcp?token=abc123: header ghp_secretvalue123: x y: %w", err))
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

func TestRing(t *testing.T) {
	r := newRing(8)
	r.Write(nil)
	if len(r.Bytes()) != 0 || r.buf != nil {
		t.Error("an empty write allocated or stored")
	}
	r.Write([]byte("abc"))
	r.Write([]byte("defghij"))
	if got := string(r.Bytes()); got != "cdefghij" {
		t.Errorf("ring = %q", got)
	}
	r.Write([]byte("0123456789xyz"))
	if got := string(r.Bytes()); got != "56789xyz" || r.Total() != 23 {
		t.Errorf("ring = %q total %d", got, r.Total())
	}
}

func TestBackoff(t *testing.T) {
	if backoff(1) != 500_000_000 || backoff(2) != 1_000_000_000 || backoff(100) != maxBackoff {
		t.Errorf("backoff: %v %v %v", backoff(1), backoff(2), backoff(100))
	}
}
