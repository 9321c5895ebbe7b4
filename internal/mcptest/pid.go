package mcptest

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/internal/testwait"
)

// WaitPIDFile waits up to [testwait.Deadline] for the file at path to hold a PID, as
// the modes grandchild and ignore-sigterm write them, and returns it. It
// fails the test when the time runs out.
func WaitPIDFile(t testing.TB, path string) int {
	t.Helper()
	deadline := testwait.Deadline(t)
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
			t.Fatalf("mcptest: no PID in %s after %v: %v", path, testwait.Patience, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Parents maps each live process (not a zombie) to its parent's PID, as
// /proc says on Linux; elsewhere it is empty. Tests use it to find the
// processes a test, or a process it started, left behind.
func Parents() map[int]int {
	out := map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The state and the parent follow the command name, which is in
		// parentheses and may itself hold parentheses: "pid (comm) S ppid …".
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		if i < 0 || i+2 >= len(s) {
			continue
		}
		if f := strings.Fields(s[i+2:]); len(f) > 1 && f[0] != "Z" {
			if ppid, err := strconv.Atoi(f[1]); err == nil {
				out[pid] = ppid
			}
		}
	}
	return out
}
