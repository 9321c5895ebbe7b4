//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package audit_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/engine/audit"
)

// envJournalChild names the log a child process of TestIntentJournalKill9
// writes intents to.
const envJournalChild = "VOLTMCP_AUDIT_JOURNAL_CHILD"

// journalChildCalls is how many intents a journal child writes, and
// journalChildDone how many of their calls it completes in the log.
const journalChildCalls, journalChildDone = 5, 2

// runJournalChild writes journalChildCalls intents through the intent
// journal of the log at path, appends the first journalChildDone of them
// with their call records, says it is ready and waits to be killed.
func runJournalChild(path string) int {
	l, err := audit.Open(path, &audit.Options{Journal: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	for i := range journalChildCalls {
		p, err := l.Intend(intentRecord(i))
		if err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			return 1
		}
		if i < journalChildDone {
			call := callRecord(i)
			p.Name(&call)
			if err := l.AppendAll(context.Background(), []audit.Record{p.Record(), call}); err != nil {
				fmt.Fprintln(os.Stderr, "child:", err)
				return 1
			}
		}
	}
	if _, err := os.Stdout.WriteString(childReady); err != nil {
		return 1
	}
	time.Sleep(time.Hour)
	return 0
}

func intentRecord(i int) audit.Record {
	return audit.Record{Kind: audit.KindCallIntent, Server: "github", Tool: fmt.Sprintf("tool_%d", i), Risk: "write",
		Decision: &audit.Decision{Allowed: true}}
}

// journals lists the intent journals beside the log at path.
func journals(t *testing.T, path string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(path+".intents", "j-*"))
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestIntentJournal writes intents through the journal: each is in the
// journal's file, redacted, before any system call of the log; once its
// record and its call's are appended the call names it and its slot is
// free; a closed log deletes a journal that holds nothing. A second
// writer does not take the intents of a writer that lives.
func TestIntentJournal(t *testing.T) {
	t.Parallel()
	const canary = "CANARY-7f3e9a"
	path := audit.DefaultPath(t.TempDir())
	l, err := audit.Open(path, &audit.Options{Journal: true,
		Redact: func(s string) string { return strings.ReplaceAll(s, canary, "[redacted]") }})
	if err != nil {
		t.Fatal(err)
	}
	in := intentRecord(1)
	in.Tool = "tool_" + canary
	p, err := l.Intend(in)
	if err != nil {
		t.Fatal(err)
	}
	js := journals(t, path)
	if len(js) != 1 {
		t.Fatalf("journals: %v", js)
	}
	b, err := os.ReadFile(js[0])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), canary) || !strings.Contains(string(b), `"tool":"tool_[redacted]"`) {
		t.Fatalf("the journal does not hold the redacted intent")
	}
	if recs, _, _ := audit.Read(path, audit.Query{}); len(recs) != 0 {
		t.Fatalf("the log holds %d records before the intent is appended", len(recs))
	}

	// A writer that opens the log meanwhile leaves a live journal alone.
	other, err := audit.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	if recs, _, _ := audit.Read(path, audit.Query{}); len(recs) != 0 {
		t.Fatalf("a second writer recovered the intents of a live one: %+v", recs)
	}

	call := callRecord(1)
	p.Name(&call)
	if err := l.AppendAll(context.Background(), []audit.Record{p.Record(), call}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if js := journals(t, path); len(js) != 0 {
		t.Errorf("the journal outlives a log closed with no intent in it: %v", js)
	}
	recs, _, err := audit.Read(path, audit.Query{})
	if err != nil || len(recs) != 2 {
		t.Fatalf("records: %+v %v", recs, err)
	}
	if recs[0].Kind != audit.KindCallIntent || recs[1].Intent != recs[0].Seq || recs[0].Tool != "tool_[redacted]" {
		t.Errorf("the call does not name its intent: %+v", recs)
	}
	rep, err := audit.Verify(path)
	if err != nil || !rep.Intact || rep.UnfinishedCalls != 0 {
		t.Errorf("verify: %+v %v", rep, err)
	}
}

// TestIntentJournalFull fills the journal: an intent that finds no free
// slot, or does not fit one, is refused by Intend (the caller appends
// it), and a slot is free again once its intent is in the log.
func TestIntentJournalFull(t *testing.T) {
	t.Parallel()
	path := audit.DefaultPath(t.TempDir())
	l, err := audit.Open(path, &audit.Options{Journal: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var ps []*audit.Pending
	for i := 0; ; i++ {
		p, err := l.Intend(intentRecord(i))
		if err != nil {
			if i < 64 {
				t.Fatalf("intent %d: %v", i, err)
			}
			break
		}
		ps = append(ps, p)
	}
	if err := l.Append(context.Background(), ps[0].Record()); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Intend(intentRecord(0)); err != nil {
		t.Errorf("no slot free once an intent is in the log: %v", err)
	}
	huge := intentRecord(0)
	huge.Tool = strings.Repeat("t", 4096)
	if _, err := l.Intend(huge); err == nil {
		t.Errorf("an intent larger than a slot was kept")
	}
	if _, err := l.Intend(callRecord(0)); err == nil {
		t.Errorf("a call record was kept as an intent")
	}
	nl, err := audit.Open(audit.DefaultPath(t.TempDir()), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer nl.Close()
	if _, err := nl.Intend(intentRecord(0)); err == nil {
		t.Errorf("a log without Options.Journal kept an intent")
	}
}

// TestIntentJournalKill9 kills a writer with SIGKILL while its journal
// holds intents: the next writer to open the log appends each intent
// whose call was not recorded, Verify reports those calls as unfinished
// and no other, and the journal is gone.
func TestIntentJournalKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	t.Parallel()
	path := audit.DefaultPath(t.TempDir())
	cmd := startChild(t, envJournalChild, path)
	// While the child lives, its journal is its own, and Verify reports
	// the intents in it as calls with no outcome.
	if l, err := audit.Open(path, nil); err != nil {
		t.Fatal(err)
	} else {
		_ = l.Close()
	}
	if in, _, err := audit.Read(path, audit.Query{Kind: audit.KindCallIntent}); err != nil || len(in) != journalChildDone {
		t.Fatalf("a live writer's intents were taken: %d intents in the log, want %d (%v)", len(in), journalChildDone, err)
	}
	if rep, err := audit.Verify(path); err != nil || rep.UnfinishedCalls != journalChildCalls-journalChildDone {
		t.Fatalf("verify with a live writer's journal: %d unfinished (%v)", rep.UnfinishedCalls, err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	l, err := audit.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := audit.Verify(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := journalChildCalls - journalChildDone; rep.UnfinishedCalls != want || rep.BrokenLinks != 0 || rep.GapCount != 0 {
		t.Errorf("verify after the kill: %d unfinished calls, want %d; %d broken links, %d gaps", rep.UnfinishedCalls, want, rep.BrokenLinks, rep.GapCount)
	}
	intents, _, err := audit.Read(path, audit.Query{Kind: audit.KindCallIntent})
	if err != nil {
		t.Fatal(err)
	}
	recovered := 0
	for _, r := range intents {
		if strings.Contains(r.Reason, "recovered from the intent journal") {
			recovered++
		}
	}
	if recovered != journalChildCalls-journalChildDone || len(intents) != journalChildCalls {
		t.Errorf("%d intents, %d recovered", len(intents), recovered)
	}
	if js := journals(t, path); len(js) != 0 {
		t.Errorf("a recovered journal is left: %v", js)
	}
	// A second open finds nothing more to recover.
	if l, err := audit.Open(path, nil); err != nil {
		t.Fatal(err)
	} else {
		_ = l.Close()
	}
	if again, _, _ := audit.Read(path, audit.Query{Kind: audit.KindCallIntent}); len(again) != len(intents) {
		t.Errorf("intents recovered twice: %d then %d", len(intents), len(again))
	}
}
