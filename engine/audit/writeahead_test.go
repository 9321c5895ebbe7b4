//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package audit

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/internal/testwait"
	"github.com/voltmcp/voltmcp/safefile"
)

// TestVerifyReportsLossesFoundLater writes what a process leaves when it
// dies or cannot write: intents that no call record completes, and a
// note of lost records. Verify reports each (the log is not intact) and
// stops once they are completed or named.
func TestVerifyReportsLossesFoundLater(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	intent := func(tool string) int64 {
		seq, err := l.AppendAllSeq(ctx, []Record{{Kind: KindCallIntent, Server: "s", Tool: tool}})
		if err != nil {
			t.Fatal(err)
		}
		return seq
	}
	done := intent("a")
	if err := l.Append(ctx, Record{Kind: KindCall, Server: "s", Tool: "a", Status: "completed", Intent: done}); err != nil {
		t.Fatal(err)
	}
	open := intent("b")
	rep, err := Verify(path)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Intact || rep.UnfinishedCalls != 1 || len(rep.Unfinished) != 1 || rep.Unfinished[0].Seq != open || rep.Unfinished[0].Kind != ProblemUnfinished {
		t.Fatalf("verify with an intent not completed: %+v", rep)
	}
	if err := l.Append(ctx, Record{Kind: KindCall, Server: "s", Tool: "b", Status: "completed", Intent: open}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int64{2, 3} {
		if err := NoteLost(ctx, path, n, time.Now(), "disk full"); err != nil {
			t.Fatal(err)
		}
	}
	rep, err = Verify(path)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Intact || rep.UnfinishedCalls != 0 || rep.LostRecords != 5 || len(rep.Lost) != 1 || rep.Lost[0].Kind != ProblemLostPending {
		t.Fatalf("verify with a note of 5 records lost: %+v", rep)
	}
	if err := ForgetLost(ctx, path, 5); err != nil {
		t.Fatal(err)
	}
	if rep, err = Verify(path); err != nil || !rep.Intact {
		t.Fatalf("verify once every intent is completed and the note emptied: %+v %v", rep, err)
	}
}

// TestOpenRefusesWhatIsNotARegularFile puts a FIFO, a symlink and a
// directory where the log's active file is: Open fails at once with an
// error that names it, and an open log whose file is replaced so fails
// its next append, writing nothing through a link.
func TestOpenRefusesWhatIsNotARegularFile(t *testing.T) {
	for _, shape := range []string{"fifo", "symlink", "directory"} {
		t.Run(shape, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "audit.jsonl")
			elsewhere := filepath.Join(dir, "elsewhere")
			put := func() {
				var err error
				switch shape {
				case "fifo":
					err = syscall.Mkfifo(path, 0o600)
				case "symlink":
					err = os.Symlink(elsewhere, path)
				case "directory":
					err = os.Mkdir(path, 0o700)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			put()
			done := make(chan error, 1)
			go func() {
				l, err := Open(path, nil)
				if err == nil {
					l.Close()
				}
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || (shape != "directory" && !errors.Is(err, safefile.ErrNotRegular)) {
					t.Fatalf("Open of a %s: %v", shape, err)
				}
			case <-time.After(testwait.Patience):
				t.Fatalf("Open of a %s blocked", shape)
			}
			// An open log whose file is swapped.
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			l, err := Open(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			put()
			go func() { done <- l.Append(context.Background(), Record{Kind: KindCall}) }()
			select {
			case err := <-done:
				var we *WriteError
				if !errors.As(err, &we) {
					t.Fatalf("an append to a %s: %v", shape, err)
				}
			case <-time.After(testwait.Patience):
				t.Fatalf("an append to a %s blocked", shape)
			}
			if _, err := os.Stat(elsewhere); err == nil {
				t.Errorf("a record was written through the link")
			}
		})
	}
}
