package mcptest

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// WaitPIDFile waits up to timeout for the file at path to hold a PID, as
// the modes grandchild and ignore-sigterm write them, and returns it. It
// fails the test when the time runs out.
func WaitPIDFile(t testing.TB, path string, timeout time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		data, err := os.ReadFile(path)
		if err == nil {
			pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
			if err != nil || pid <= 0 {
				t.Fatalf("mcptest: %s holds %q, not a PID", path, data)
			}
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("mcptest: no PID in %s after %v: %v", path, timeout, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
