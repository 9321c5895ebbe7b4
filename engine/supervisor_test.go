package engine

import "testing"

func TestBackoff(t *testing.T) {
	t.Parallel()
	if backoff(1) != 500_000_000 || backoff(2) != 1_000_000_000 || backoff(100) != maxBackoff {
		t.Errorf("backoff: %v %v %v", backoff(1), backoff(2), backoff(100))
	}
}
