package auditq

import (
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/engine/audit"
	"github.com/voltmcp/voltmcp/engine/internal/turn"
)

// BenchmarkCallAudit is the audit log's work for one call, as the
// engine does it: mode=after is a call of risk read, whose record waits
// in the backlog and is written with the others by its timer;
// mode=ahead is a risky call, whose intent is written before it is sent
// (Queue.Write), its record then waiting in the backlog as a read's does;
// mode=journal is a risky call as serve makes it, whose intent goes into
// the intent journal (Queue.Intend) and joins the log with its record.
// The difference is what writing ahead adds to a call; gaps=500µs lets
// the process go idle between calls, as serve does while the upstream
// works, so that each write is a first system call after idle
// (docs/benchmarks.md).
func BenchmarkCallAudit(b *testing.B) {
	rec := audit.Record{Kind: audit.KindCall, Server: "github", Tool: "create_issue", Risk: "write",
		Status: "completed", Args: map[string]string{"body": "string(11)", "owner": "string(7)", "repo": "string(7)", "title": "string(13)"},
		Decision:   &audit.Decision{Allowed: true, Reasons: []string{"tool allowed by default"}},
		DurationMS: 12, ResultBytes: 420, ResultSHA256: strings.Repeat("0f", 32)}
	for _, mode := range []string{"after", "ahead", "journal"} {
		for _, idle := range []bool{false, true} {
			b.Run("mode="+mode+map[bool]string{false: "/gaps=none", true: "/gaps=500µs"}[idle], func(b *testing.B) {
				q := NewQueue(filepath.Join(b.TempDir(), "audit.jsonl"), &QueueOptions{Workspace: "/home/user/src/project",
					Session: "c0ffee0123456789", Surface: "serve", Journal: mode == "journal"})
				bl := NewBacklog(q.PushAll, nil)
				ctx := audit.WithBeforeWait(context.Background(), turn.NoYield)
				b.ReportAllocs()
				cpu0 := processCPU(b)
				for b.Loop() {
					var in Intent
					if mode != "after" {
						intent := audit.Record{Kind: audit.KindCallIntent, Time: time.Now(), Server: rec.Server, Tool: rec.Tool,
							Risk: rec.Risk, Decision: &audit.Decision{Allowed: true}}
						var err error
						if in, err = q.Intend(ctx, intent); err != nil {
							b.Fatal(err)
						}
					}
					bl.Add(func() []audit.Record {
						r := rec
						r.Time = time.Now()
						in.Name(&r)
						if ir, ok := in.Record(); ok {
							return []audit.Record{ir, r}
						}
						return []audit.Record{r}
					}, turn.NoYield)
					if idle {
						time.Sleep(500 * time.Microsecond)
					}
				}
				bl.Close()
				q.Close()
				b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// processCPU is the CPU time the process has used, user and system: the
// writer's and the timer's goroutines count as well as the caller's.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
