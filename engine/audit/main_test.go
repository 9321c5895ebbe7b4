package audit_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/voltmcp/voltmcp/engine/audit"
)

// envChild names the log a child process of TestKill9 appends to.
const envChild = "VOLTMCP_AUDIT_CHILD"

// childReady is what a child writes to stdout once its log is open.
const childReady = "ready\n"

func TestMain(m *testing.M) {
	if path, ok := os.LookupEnv(envChild); ok {
		os.Exit(runChild(path))
	}
	if path, ok := os.LookupEnv(envJournalChild); ok {
		os.Exit(runJournalChild(path))
	}
	os.Exit(m.Run())
}

// runChild appends to the log at path in a tight loop until it is killed.
// Every seventh record is large, so that a kill can land in the middle of
// its write.
func runChild(path string) int {
	l, err := audit.Open(path, childOptions())
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	if _, err := os.Stdout.WriteString(childReady); err != nil {
		return 1
	}
	big := strings.Repeat("y", 64<<10)
	for i := 0; ; i++ {
		r := callRecord(i)
		if i%7 == 3 {
			r.Detail = map[string]any{"blob": big}
		}
		if err := l.Append(context.Background(), r); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			return 1
		}
	}
}

// childOptions rotate often, so that kills also land around rotations.
func childOptions() *audit.Options {
	return &audit.Options{MaxFileBytes: 1 << 20, MaxFiles: -1}
}
