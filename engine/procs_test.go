package engine

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/internal/mcptest"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// TestSetsidGrandchildrenDieWithTheServer stops a wrapper server whose
// grandchildren called setsid (so no process-group signal reaches them),
// ignore SIGTERM and SIGHUP, and, for one of them, hold the server's
// stdout and stderr open; the other's parent exited at once. A
// disconnect, and a crash of the server, leave none of them running.
func TestSetsidGrandchildrenDieWithTheServer(t *testing.T) {
	t.Parallel()
	for _, end := range []string{"disconnect", "crash", "close"} {
		t.Run(end, func(t *testing.T) {
			pidfile := filepath.Join(t.TempDir(), "pid")
			mode := mcptest.ModeSetsidGrandchild
			e := start(t, workspace(t, map[string]server{"w": stdio(mode, nil, mcptest.EnvPIDFile+"="+pidfile)}, nil))
			ctx := testwait.Context(t)
			if err := e.Connect(ctx, "w"); err != nil {
				t.Fatal(err)
			}
			held := mcptest.WaitPIDFile(t, pidfile)
			orphan := mcptest.WaitPIDFile(t, pidfile+mcptest.OrphanSuffix)
			parent := mcptest.WaitPIDFile(t, pidfile+mcptest.ParentSuffix)
			for _, pid := range []int{held, orphan, parent} {
				if !alive(pid) {
					t.Fatalf("process %d is not running", pid)
				}
			}
			began := time.Now()
			switch end {
			case "disconnect":
				if err := e.Disconnect(context.Background(), "w"); err != nil {
					t.Fatal(err)
				}
			case "crash":
				// The server dies alone; its grandchildren do not.
				_ = killPID(parent)
				waitStatus(t, e, "w", StatusError)
			case "close":
				e.Close()
			}
			t.Logf("%s took %s", end, time.Since(began))
			waitGone(t, parent, held, orphan)
		})
	}
}
