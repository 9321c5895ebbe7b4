package auditq

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/engine/audit"
)

// readAll reads the log at path, failing the test on a problem, a
// broken chain or, with finished, an intent that no call record names.
func readAll(t *testing.T, path string, finished bool) []audit.Record {
	t.Helper()
	rep, err := audit.Verify(path)
	if err != nil || rep.Broken != nil || rep.BrokenLinks > 0 || rep.GapCount > 0 || rep.SkippedLines > 0 ||
		(finished && !rep.Intact) {
		t.Fatalf("verify: %v %+v", err, rep)
	}
	recs, problems, err := audit.Read(path, audit.Query{})
	if err != nil || len(problems) > 0 {
		t.Fatalf("read: %v %v", err, problems)
	}
	return recs
}

// tools lists the records' tools, in order.
func tools(recs []audit.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.Tool)
	}
	return out
}

// TestWriteIntent checks that an intent written with Queue.Write is in
// the log when Write returns, before the records of earlier calls still
// waiting in the backlog, with the chain intact and each record written
// once; that an intent that cannot be written is refused and not
// counted as lost; and that one abandoned before it is written (its
// context ended) leaves the log healthy and the loss a gap was about to
// name still to be named.
func TestWriteIntent(t *testing.T) {
	t.Parallel()
	call := func(tool string) func() []audit.Record {
		return func() []audit.Record { return []audit.Record{{Kind: audit.KindCall, Tool: tool}} }
	}
	intent := func(tool string) audit.Record { return audit.Record{Kind: audit.KindCallIntent, Tool: tool} }

	t.Run("alone", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "audit.jsonl")
		q := NewQueue(path, &QueueOptions{Session: "s"})
		b := NewBacklog(q.PushAll, nil)
		b.mu.Lock()
		b.armed = true // the timer kept out of the way
		b.mu.Unlock()
		b.Add(call("a"), func() {})
		seq, err := q.Write(context.Background(), intent("b"))
		if err != nil || seq != 1 {
			t.Fatalf("Write: seq %d (%v), want 1", seq, err)
		}
		// In the log before the backlog's own write (Close), alone.
		recs := readAll(t, path, false)
		if got := fmt.Sprint(tools(recs)); got != "[b]" || recs[0].Session != "s" || recs[0].Kind != audit.KindCallIntent {
			t.Fatalf("records %s (%+v), want the intent b alone", got, recs)
		}
		b.Close()
		q.Close()
		if got := fmt.Sprint(tools(readAll(t, path, false))); got != "[b a]" {
			t.Fatalf("records %s, want [b a]", got)
		}
	})

	t.Run("stream", func(t *testing.T) {
		t.Parallel()
		// Calls on several goroutines, each writing its intent and
		// adding its record to the backlog, against the backlog's
		// timer: every record is written once, the chain intact.
		path := filepath.Join(t.TempDir(), "audit.jsonl")
		q := NewQueue(path, nil)
		b := NewBacklog(q.PushAll, nil)
		const goroutines, calls = 4, 100
		var wg sync.WaitGroup
		for g := range goroutines {
			wg.Go(func() {
				for i := range calls {
					name := fmt.Sprintf("%d-%d", g, i)
					seq, err := q.Write(context.Background(), intent(name))
					if err != nil {
						t.Error(err)
					}
					b.Add(func() []audit.Record {
						return []audit.Record{{Kind: audit.KindCall, Tool: name, Intent: seq}}
					}, func() {})
				}
			})
		}
		wg.Wait()
		b.Close()
		q.Close()
		seen := map[string]int{}
		for _, r := range readAll(t, path, true) {
			seen[r.Kind+" "+r.Tool]++
		}
		for g := range goroutines {
			for i := range calls {
				for _, kind := range []string{audit.KindCallIntent, audit.KindCall} {
					if k := fmt.Sprintf("%s %d-%d", kind, g, i); seen[k] != 1 {
						t.Errorf("%q written %d times, want once", k, seen[k])
					}
				}
			}
		}
		if len(seen) != 2*goroutines*calls {
			t.Errorf("%d records, want %d", len(seen), 2*goroutines*calls)
		}
	})

	t.Run("failing", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "audit.jsonl")
		if err := os.Mkdir(path, 0o700); err != nil {
			t.Fatal(err)
		}
		q := NewQueue(path, nil)
		defer q.Close()
		if _, err := q.Write(context.Background(), intent("x")); err == nil {
			t.Fatal("an intent was written to a directory")
		}
		if h := q.Health(); !h.Failing || h.Lost != 0 {
			t.Fatalf("health %+v, want failing with nothing lost: the intent's call is refused", h)
		}
	})

	t.Run("abandoned", func(t *testing.T) {
		t.Parallel()
		// Two records an earlier process lost are noted beside the log:
		// the first append names them. An intent abandoned before it is
		// written names nothing, and the next append still names them.
		path := filepath.Join(t.TempDir(), "audit.jsonl")
		if err := audit.NoteLost(context.Background(), path, 2, time.Now(), "disk full"); err != nil {
			t.Fatal(err)
		}
		q := NewQueue(path, nil)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := q.Write(ctx, intent("x")); err == nil {
			t.Fatal("an intent was written with an ended context")
		}
		if q.Failing() {
			t.Fatal("an abandoned intent made the log failing")
		}
		if _, err := q.Write(context.Background(), intent("y")); err != nil {
			t.Fatal(err)
		}
		q.Close()
		recs := readAll(t, path, false)
		if len(recs) != 2 || recs[0].Kind != audit.KindAuditGap || recs[0].Detail["lost"] != float64(2) || recs[1].Tool != "y" {
			t.Fatalf("records %+v, want the audit_gap naming 2, then the intent y", recs)
		}
		if note, err := audit.PendingLost(path); err != nil || note.Records != 0 {
			t.Fatalf("the note after the gap was named: %+v %v", note, err)
		}
	})
}
