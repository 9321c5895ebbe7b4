//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package audit

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestRecoverJournalShapes puts journals of ended writers, and things
// that are not journals, beside a log: a journal's intents are appended
// and a slot that does not decode is named by an audit_gap record; a
// FIFO, a link or a directory named like a journal is reported without
// blocking and left alone; a file where the journals' directory should
// be leaves the log without a journal, whose intents are then refused
// for the caller to append.
func TestRecoverJournalShapes(t *testing.T) {
	t.Parallel()
	path := DefaultPath(t.TempDir())
	dir := journalDir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, journalBytes)
	slot := func(i int, state byte, payload string) {
		s := b[i*journalSlotBytes:]
		s[0] = state
		binary.LittleEndian.PutUint32(s[4:8], uint32(len(payload)))
		copy(s[8:], payload)
	}
	slot(0, slotPending, `{"seq":0,"prev":"","time":"2026-01-02T03:04:05Z","kind":"call_intent","server":"s","tool":"t","risk":"write"}`)
	slot(3, slotPending, `{"seq":0,"prev":"","time":"2026-01-02T03:0`) // torn
	slot(5, slotFree, `{"seq":0,"prev":"","time":"2026-01-02T03:04:05Z","kind":"call_intent","server":"s","tool":"done"}`)
	slot(7, slotPending, `{"kind":"call","server":"s","tool":"not an intent"}`)
	if err := os.WriteFile(filepath.Join(dir, "j-1-dead"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "j-2-fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "j-1-dead"), filepath.Join(dir, "j-3-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "j-4-dir"), 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := Open(path, &Options{Journal: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	recs, _, err := Read(path, Query{})
	if err != nil || len(recs) != 2 {
		t.Fatalf("records after recovery: %+v %v", recs, err)
	}
	if recs[0].Kind != KindCallIntent || recs[0].Tool != "t" || !strings.Contains(recs[0].Reason, "j-1-dead") {
		t.Errorf("recovered intent: %+v", recs[0])
	}
	if recs[1].Kind != KindAuditGap || recs[1].Detail["lost"] != float64(2) {
		t.Errorf("the damaged slots' record: %+v", recs[1])
	}
	if _, err := os.Lstat(filepath.Join(dir, "j-1-dead")); !os.IsNotExist(err) {
		t.Errorf("the recovered journal is left: %v", err)
	}
	notes := 0
	for _, p := range l.Problems() {
		if p.Kind == ProblemJournal {
			notes++
		}
	}
	if notes < 3 {
		t.Errorf("%d journal problems for a FIFO, a link and a directory: %+v", notes, l.Problems())
	}
	for _, name := range []string{"j-2-fifo", "j-3-link", "j-4-dir"} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}

	// A file where the journals' directory should be.
	path2 := DefaultPath(t.TempDir())
	if err := os.MkdirAll(filepath.Dir(path2), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(journalDir(path2), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	l2, err := Open(path2, &Options{Journal: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if _, err := l2.Intend(Record{Kind: KindCallIntent, Server: "s", Tool: "t"}); err == nil {
		t.Errorf("an intent was kept with no journal")
	}
}
