package auditq

import (
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/engine/audit"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// TestAuditBacklog checks when the backlog of lean calls' records is
// written: by its timer soon after the first call, by the call that
// finds it full (which calls wait only when the timer is writing), and
// by Close, after which every call writes its own.
func TestAuditBacklog(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var written []int
	// Each call's release builds one record, its Seq the call's number.
	release := func(n int) func() []audit.Record {
		return func() []audit.Record { return []audit.Record{{Seq: int64(n)}} }
	}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(written)
	}
	noWait := func() { t.Error("a write that waits for nothing called wait") }

	var writes int
	b := NewBacklog(func(recs []audit.Record, _ func()) {
		mu.Lock()
		defer mu.Unlock()
		writes++
		for _, r := range recs {
			written = append(written, int(r.Seq))
		}
	}, nil)
	b.Add(release(0), noWait)
	b.Add(release(1), noWait)
	if n := count(); n != 0 {
		t.Fatalf("%d records written at once, want them kept", n)
	}
	deadline := testwait.Deadline(t)
	for count() != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the timer wrote %d of 2 calls' records", count())
		}
		time.Sleep(time.Millisecond)
	}
	writesNow := func() int {
		mu.Lock()
		defer mu.Unlock()
		return writes
	}
	if n := writesNow(); n != 1 {
		t.Fatalf("the timer wrote two calls' records with %d writes, want one", n)
	}

	// Full: the call that would exceed the bound writes them all, its
	// own last.
	if b.Writing() {
		t.Fatal("Writing while nothing writes")
	}
	b.writing.Lock() // as the timer holds it while writing
	if !b.Writing() {
		t.Fatal("not Writing while the timer would write")
	}
	for i := range BacklogCalls {
		b.Add(release(2+i), noWait)
	}
	if n := count(); n != 2 {
		t.Fatalf("%d records written, want the backlog kept", n)
	}
	waited := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.Add(release(2+BacklogCalls), func() { close(waited) })
	}()
	<-waited // called before it waits for the timer's write
	b.writing.Unlock()
	<-done
	if n := count(); n != 3+BacklogCalls {
		t.Fatalf("%d records written, want %d", n, 3+BacklogCalls)
	}
	if n := writesNow(); n != 2 {
		t.Fatalf("a full backlog was written with %d writes, want one", n-1)
	}
	for i, n := range written {
		if n != i {
			t.Fatalf("records written in the order %v", written)
		}
	}

	// Close writes what waits; a call after it writes its own.
	b.Add(release(100), noWait)
	b.Close()
	if n := count(); n != 4+BacklogCalls {
		t.Fatalf("close left %d records unwritten", 4+BacklogCalls-n)
	}
	b.Add(release(101), noWait)
	if n := count(); n != 5+BacklogCalls {
		t.Fatal("a call after close kept its records")
	}
}

// TestAuditBacklogSurvivesAPanic checks that a release that panics while
// the timer writes the backlog loses only its own records: the process
// goes on, the other calls' records are written, and the log names the
// panic without its value.
func TestAuditBacklogSurvivesAPanic(t *testing.T) {
	t.Parallel()
	const canary = "canary-4f1e-secret"
	var logged strings.Builder
	var logMu sync.Mutex
	done := make(chan []audit.Record, 1)
	b := NewBacklog(func(recs []audit.Record, _ func()) { done <- recs },
		&BacklogOptions{Logger: slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
			logMu.Lock()
			defer logMu.Unlock()
			return logged.Write(p)
		}), nil))})
	b.Add(func() []audit.Record { return []audit.Record{{Seq: 1}} }, func() {})
	b.Add(func() []audit.Record { panic(canary) }, func() {})
	b.Add(func() []audit.Record { return []audit.Record{{Seq: 3}} }, func() {})
	select {
	case recs := <-done:
		if len(recs) != 2 || recs[0].Seq != 1 || recs[1].Seq != 3 {
			t.Fatalf("the backlog wrote %+v, want the records of calls 1 and 3", recs)
		}
	case <-time.After(testwait.Patience):
		t.Fatal("the backlog was never written")
	}
	b.Close()
	logMu.Lock()
	defer logMu.Unlock()
	if !strings.Contains(logged.String(), "panicked") {
		t.Errorf("the panic was not logged: %q", logged.String())
	}
	if strings.Contains(logged.String(), canary) {
		t.Error("the panic's value reached the log")
	}
}

// writerFunc is an io.Writer made of a function.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
