package auditq

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/engine/audit"
	"github.com/voltmcp/voltmcp/internal/testwait"
	"github.com/voltmcp/voltmcp/redact"
)

// TestQueue checks that a queue writes its records in order, stamped
// with its workspace, session and surface and redacted by the redactor
// current when they are written, the records of PushAll too; that Close
// writes what is queued; and that nothing opens after Close.
func TestQueue(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-value-123"
	path := filepath.Join(t.TempDir(), "audit", "audit.jsonl")
	var red atomic.Pointer[scrubRedactor]
	q := NewQueue(path, &QueueOptions{Workspace: "/w", Session: "sess", Surface: "serve",
		Redactor: func() Redactor {
			if r := red.Load(); r != nil {
				return r
			}
			return nil
		}})
	if q.Failing() {
		t.Fatal("a new queue fails")
	}
	// PushAll appends its records itself, at once: the first before
	// there is a redactor, the second after.
	waited := 0
	wait := func() { waited++ }
	q.PushAll([]audit.Record{{Kind: audit.KindCall, Tool: "a", Status: secret}}, wait)
	red.Store(&scrubRedactor{redact.NewScrubber(replacement, secret)})
	q.PushAll([]audit.Record{{Kind: audit.KindCall, Tool: "b", Status: secret}, {Kind: audit.KindCall, Tool: "c"}}, wait)
	for i := range 100 {
		q.Push(audit.Record{Kind: audit.KindCall, Tool: "d", Status: secret, Resource: strconv.Itoa(i)})
	}
	q.Close()
	q.Close()
	q.Push(audit.Record{Kind: audit.KindCall, Tool: "after"})

	recs, problems, err := audit.Read(path, audit.Query{})
	if err != nil || len(problems) > 0 {
		t.Fatalf("read: %v %v", err, problems)
	}
	if len(recs) != 103 {
		t.Fatalf("%d records written, want 103", len(recs))
	}
	for i, r := range recs {
		if r.Workspace != "/w" || r.Session != "sess" || r.Surface != "serve" {
			t.Errorf("record %d is stamped %q %q %q", i, r.Workspace, r.Session, r.Surface)
		}
	}
	if recs[0].Tool != "a" || recs[0].Status != secret {
		t.Errorf("the record before the redactor came out as %+v", recs[0])
	}
	if recs[1].Tool != "b" || recs[1].Status != replacement || recs[2].Tool != "c" {
		t.Errorf("PushAll's records came out as %+v, %+v", recs[1], recs[2])
	}
	for i, r := range recs[3:] {
		if r.Tool != "d" || r.Status != replacement || r.Resource != strconv.Itoa(i) {
			t.Fatalf("record %d is %+v, want the queued records in order, redacted", i+3, r)
		}
	}
	// Once, before it opened the log, whose lock may be held; not for
	// an open log no one else holds.
	if waited != 1 {
		t.Errorf("PushAll called wait %d times, want once", waited)
	}
}

// TestQueueHealth checks a log that cannot be written: the first failure
// calls OnFailing once and every record pushed meanwhile counts as lost;
// once the log can be written again, its first write is led by an
// audit_gap record that names them, OnResumed is called once, and the
// queue is healthy.
func TestQueueHealth(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	var failing, resumed atomic.Int32
	q := NewQueue(path, &QueueOptions{Workspace: "/w", Session: "sess", Surface: "serve",
		OnFailing: func(err error) {
			if err == nil {
				t.Error("OnFailing without an error")
			}
			failing.Add(1)
		},
		OnResumed: func() { resumed.Add(1) }})
	defer q.Close()
	if err := q.Open(); err == nil {
		t.Fatal("a directory opened as the log")
	}
	for range 3 {
		q.Push(audit.Record{Kind: audit.KindCall, Tool: "lost"})
	}
	h := q.Health()
	if !q.Failing() || !h.Failing || h.Lost != 3 || h.Error == "" || h.Since.IsZero() {
		t.Fatalf("health while failing: %+v", h)
	}
	if n := failing.Load(); n != 1 {
		t.Errorf("OnFailing called %d times, want once", n)
	}

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	// A log that did not open is tried again a second later.
	deadline := testwait.Deadline(t)
	for q.Open() != nil {
		if time.Now().After(deadline) {
			t.Fatal("the log never opened again")
		}
		time.Sleep(50 * time.Millisecond)
	}
	q.PushAll([]audit.Record{{Kind: audit.KindCall, Tool: "kept"}}, func() {})
	if h := q.Health(); q.Failing() || h != (Health{}) {
		t.Errorf("health after a write: %+v", h)
	}
	if n := resumed.Load(); n != 1 {
		t.Errorf("OnResumed called %d times, want once", n)
	}
	q.Close()
	recs, _, err := audit.Read(path, audit.Query{})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Kind != audit.KindAuditGap || recs[1].Tool != "kept" {
		t.Fatalf("records %+v, want an audit_gap record and the call", recs)
	}
	gap := recs[0]
	if lost, _ := gap.Detail["lost"].(float64); lost != 3 || gap.Status != "resumed" || gap.Session != "sess" {
		t.Errorf("audit_gap record %+v, want 3 lost", gap)
	}
}

// TestQueueNamesANoteOnce checks that the records of the note of lost
// records (audit.NoteLost) are named by one audit_gap record of a
// process however many of its appends run at once as the log resumes:
// the writer's and those of callers that append themselves (PushAll and
// WriteAfter). Each round the gaps' counts must add up to the records
// lost, not more, and the note must end empty.
func TestQueueNamesANoteOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		noted   int64
		writers int
	}{
		{"one record noted, two appends", 1, 2},
		{"many records noted, many appends", 7, 8},
		{"a note of another process, appends of every way", 3, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for round := range 5 {
				path := filepath.Join(t.TempDir(), "audit.jsonl")
				if err := audit.NoteLost(testwait.Context(t), path, tc.noted, time.Now(), "disk full"); err != nil {
					t.Fatal(err)
				}
				q := NewQueue(path, nil)
				if err := q.Open(); err != nil {
					t.Fatal(err)
				}
				start := make(chan struct{})
				done := make(chan struct{})
				for i := range tc.writers {
					go func() {
						defer func() { done <- struct{}{} }()
						<-start
						r := audit.Record{Kind: audit.KindCall, Tool: "t" + strconv.Itoa(i)}
						switch i % 3 {
						case 0:
							q.PushAll([]audit.Record{r}, func() {})
						case 1:
							if _, err := q.Write(context.Background(), r); err != nil {
								t.Error(err)
							}
						default:
							q.Push(r)
						}
					}()
				}
				close(start)
				for range tc.writers {
					<-done
				}
				q.Close()
				gaps, _, err := audit.Read(path, audit.Query{Kind: audit.KindAuditGap})
				if err != nil {
					t.Fatal(err)
				}
				var named float64
				for _, g := range gaps {
					n, _ := g.Detail["lost"].(float64)
					named += n
				}
				if named != float64(tc.noted) {
					t.Fatalf("round %d: %d audit_gap records name %v lost records, want %d", round, len(gaps), named, tc.noted)
				}
				if note, err := audit.PendingLost(path); err != nil || note.Records != 0 {
					t.Fatalf("round %d: the note after the log resumed: %+v %v", round, note, err)
				}
			}
		})
	}
}
