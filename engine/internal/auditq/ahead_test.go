package auditq

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

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

// TestBacklogAhead checks that an intent written with Backlog.Ahead and
// Queue.WriteAfter takes the records waiting in the backlog into its
// write, ahead of it, with the chain intact and each record written
// once; that it takes none while the backlog is being written; that
// records handed over by a write that fails count as lost, the intent
// not; and that those of a write abandoned before it starts (its
// context ended) are written by the writer, once.
func TestBacklogAhead(t *testing.T) {
	t.Parallel()
	call := func(tool string) func() []audit.Record {
		return func() []audit.Record { return []audit.Record{{Kind: audit.KindCall, Tool: tool}} }
	}
	intent := func(tool string) audit.Record { return audit.Record{Kind: audit.KindCallIntent, Tool: tool} }

	t.Run("coalesced", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "audit.jsonl")
		q := NewQueue(path, &QueueOptions{Session: "s"})
		b := NewBacklog(q.PushAll, nil)
		b.mu.Lock()
		b.armed = true // the timer kept out of the way: Ahead writes the backlog
		b.mu.Unlock()
		b.Add(call("a"), func() {})
		b.Add(call("b"), func() {})
		var handed int
		seq, err := b.Ahead(func(before []audit.Record) (int64, error) {
			handed = len(before)
			return q.WriteAfter(context.Background(), before, intent("c"))
		})
		if err != nil || handed != 2 || seq != 3 {
			t.Fatalf("Ahead handed %d records and wrote seq %d (%v), want 2 and seq 3", handed, seq, err)
		}
		// In the log before the backlog's own write (Close).
		recs := readAll(t, path, false)
		if got := fmt.Sprint(tools(recs)); got != "[a b c]" || recs[0].Session != "s" || recs[2].Kind != audit.KindCallIntent {
			t.Fatalf("records %s (%+v), want the backlog's calls a and b, then the intent c", got, recs)
		}
		// The backlog being written: Ahead does not wait, and takes none.
		b.Add(call("d"), func() {})
		b.writing.Lock()
		_, err = b.Ahead(func(before []audit.Record) (int64, error) {
			handed = len(before)
			return q.WriteAfter(context.Background(), before, intent("e"))
		})
		b.writing.Unlock()
		if err != nil || handed != 0 {
			t.Fatalf("Ahead while the backlog is written handed %d records (%v), want none", handed, err)
		}
		b.Close()
		q.Close()
		if got := fmt.Sprint(tools(readAll(t, path, false))); got != "[a b c e d]" {
			t.Fatalf("records %s, want [a b c e d]", got)
		}
	})

	t.Run("stream", func(t *testing.T) {
		t.Parallel()
		// Calls on several goroutines, each adding its record to the
		// backlog and writing its intent, against the backlog's timer:
		// every record is written once, the chain intact.
		path := filepath.Join(t.TempDir(), "audit.jsonl")
		q := NewQueue(path, nil)
		b := NewBacklog(q.PushAll, nil)
		const goroutines, calls = 4, 100
		var wg sync.WaitGroup
		for g := range goroutines {
			wg.Go(func() {
				for i := range calls {
					name := fmt.Sprintf("%d-%d", g, i)
					seq, err := b.Ahead(func(before []audit.Record) (int64, error) {
						return q.WriteAfter(context.Background(), before, intent(name))
					})
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
		if _, err := q.WriteAfter(context.Background(), []audit.Record{{Kind: audit.KindCall}, {Kind: audit.KindCall}}, intent("x")); err == nil {
			t.Fatal("an intent was written to a directory")
		}
		if h := q.Health(); !h.Failing || h.Lost != 2 {
			t.Fatalf("health %+v, want failing with the 2 records handed over lost, the intent not", h)
		}
	})

	t.Run("abandoned", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "audit.jsonl")
		q := NewQueue(path, nil)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := q.WriteAfter(ctx, []audit.Record{{Kind: audit.KindCall, Tool: "a"}, {Kind: audit.KindCall, Tool: "b"}}, intent("x")); err == nil {
			t.Fatal("an intent was written with an ended context")
		}
		q.Close()
		if got := fmt.Sprint(tools(readAll(t, path, false))); got != "[a b]" || q.Failing() {
			t.Fatalf("records %s (failing %v), want a and b written by the writer, the intent not", got, q.Failing())
		}
	})
}
