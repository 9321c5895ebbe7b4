package main

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/voltmcp/voltmcp/engine/audit"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// TestServeWritesItsAuditOnExit checks that the audit records of the
// calls `voltmcp serve` answered just before it ended are in the log. A
// call's records wait briefly after its answer (the engine's audit
// backlog); serve ending because the agent closed its stdin, or on
// SIGTERM, writes them before it exits.
func TestServeWritesItsAuditOnExit(t *testing.T) {
	for _, end := range []string{"stdin", "sigterm"} {
		t.Run(end, func(t *testing.T) {
			t.Parallel()
			home, project := t.TempDir(), benchProject(t)
			cmd := cliCommand("serve", "--home", home, "--project", project, "--approve")
			cs := connectCommand(t, cmd, "2025-11-25")
			ctx, cancel := context.WithDeadline(context.Background(), testwait.Deadline(t))
			defer cancel()
			const calls = 10
			for i := range calls {
				callEcho(ctx, t, cs, fmt.Sprint("call ", i))
			}
			switch end {
			case "stdin":
				if err := cs.Close(); err != nil {
					t.Logf("close: %v", err)
				}
			case "sigterm":
				if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
				_ = cs.Wait()
			}
			// The SDK waits for the process on Close; after SIGTERM the
			// session ends with serve's stdout, so wait for the exit too.
			waitExited(ctx, t, cmd)
			recs, probs, err := audit.Read(audit.DefaultPath(filepath.Join(home, ".volt", "agent")), audit.Query{Kind: audit.KindCall, Tool: "echo"})
			if err != nil || len(probs) != 0 {
				t.Fatalf("read audit log: %v %v", err, probs)
			}
			if len(recs) != calls {
				t.Fatalf("%d call records in the log, want %d", len(recs), calls)
			}
		})
	}
}
