package auditq

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/voltmcp/voltmcp/engine/audit"
)

// intendCalls runs calls, reporting how many intents the journal kept, as the engine does on several goroutines: each
// intends its intent, then adds to the backlog the intent's record, when
// the journal keeps it, and its call's record naming it.
func intendCalls(t *testing.T, q *Queue, b *Backlog, goroutines, calls int) (journaled int) {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	for g := range goroutines {
		wg.Go(func() {
			for i := range calls {
				name := fmt.Sprintf("%d-%d", g, i)
				in, err := q.Intend(context.Background(), audit.Record{Kind: audit.KindCallIntent, Tool: name, Risk: "write"})
				if err != nil {
					t.Error(err)
					return
				}
				if _, ok := in.Record(); ok {
					mu.Lock()
					journaled++
					mu.Unlock()
				}
				b.Add(func() []audit.Record {
					call := audit.Record{Kind: audit.KindCall, Tool: name, Status: "completed"}
					in.Name(&call)
					if r, ok := in.Record(); ok {
						return []audit.Record{r, call}
					}
					return []audit.Record{call}
				}, func() {})
			}
		})
	}
	wg.Wait()
	b.Close()
	q.Close()
	return journaled
}

// callsOf describes a log as the calls it holds: for each call record,
// its tool and the tool of the intent it names, sorted, and how many
// intents it holds.
func callsOf(t *testing.T, path string) ([]string, int) {
	t.Helper()
	recs := readAll(t, path, true)
	bySeq := map[int64]audit.Record{}
	var calls []string
	intents := 0
	for _, r := range recs {
		bySeq[r.Seq] = r
		switch r.Kind {
		case audit.KindCallIntent:
			intents++
		case audit.KindCall:
			in, ok := bySeq[r.Intent]
			if !ok || in.Kind != audit.KindCallIntent || r.Intent >= r.Seq {
				t.Fatalf("call %s names %d, not an intent before it", r.Tool, r.Intent)
			}
			calls = append(calls, r.Tool+" <- "+in.Tool)
		}
	}
	slices.Sort(calls)
	return calls, intents
}

// TestIntendJournalMatchesLog is the intent journal's differential test:
// the same calls, intended through the journal (QueueOptions.Journal) and
// written to the log (the standard way), leave logs that hold the same
// calls, each naming its own intent written before it, every intent once,
// and the chain intact.
func TestIntendJournalMatchesLog(t *testing.T) {
	t.Parallel()
	const goroutines, calls = 4, 150
	var got [2][]string
	for k, journal := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "audit.jsonl")
		q := NewQueue(path, &QueueOptions{Journal: journal})
		journaled := intendCalls(t, q, NewBacklog(q.PushAll, nil), goroutines, calls)
		// With the journal, the intents that find it full (its slots
		// are freed only once the backlog's write lands) are written
		// to the log: the two ways mix in one log.
		if journal != (journaled > 0) {
			t.Fatalf("journal %v: %d of %d intents kept in the journal", journal, journaled, goroutines*calls)
		}
		var intents int
		got[k], intents = callsOf(t, path)
		if len(got[k]) != goroutines*calls || intents != goroutines*calls {
			t.Fatalf("journal %v: %d calls, %d intents, want %d each", journal, len(got[k]), intents, goroutines*calls)
		}
		for _, c := range got[k] {
			var a, b string
			if _, err := fmt.Sscanf(c, "%s <- %s", &a, &b); err != nil || a != b {
				t.Fatalf("journal %v: a call names another's intent: %s", journal, c)
			}
		}
		if js, _ := filepath.Glob(path + ".intents/j-*"); len(js) != 0 {
			t.Errorf("journal %v: journals left: %v", journal, js)
		}
	}
	if !slices.Equal(got[0], got[1]) {
		t.Errorf("the journal's log differs from the standard one")
	}
}
