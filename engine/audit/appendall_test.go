package audit_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/engine/audit"
)

// TestAppendAllChainsAndRotates appends batches that the active file's
// limit splits, between single appends, and checks that the chain runs
// through every file with no file over the limit.
func TestAppendAllChainsAndRotates(t *testing.T) {
	t.Parallel()
	l, path := openLog(t, &audit.Options{Now: fixedClock(), MaxFileBytes: 4 << 10, MaxFiles: -1})
	ctx := context.Background()
	n := 0
	for range 6 {
		appendN(t, l, n, 1)
		n++
		batch := make([]audit.Record, 15)
		for i := range batch {
			batch[i] = callRecord(n + i)
		}
		if err := l.AppendAll(ctx, batch); err != nil {
			t.Fatal(err)
		}
		n += len(batch)
	}
	rep := verify(t, path)
	mustIntact(t, rep, int64(n))
	if len(rep.Files) < 5 {
		t.Fatalf("%d files, want the batches split over several", len(rep.Files))
	}
	for _, f := range rep.Files {
		info, err := os.Stat(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		if info.Size() > 4<<10 {
			t.Errorf("%s is %d bytes, over the limit", f.Path, info.Size())
		}
	}
	recs, _, err := audit.Read(path, audit.Query{})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		if r.Seq != int64(i+1) || r.DurationMS != int64(i) {
			t.Fatalf("record %d: seq %d, duration %d: the batch's order was not kept", i, r.Seq, r.DurationMS)
		}
	}
	if seq, _ := l.Head(); seq != int64(n) {
		t.Errorf("head at seq %d, want %d", seq, n)
	}
}

// TestAppendAllLosesOnlyABadRecord checks that a record that cannot be
// encoded is reported by its place in the batch and that the others are
// written, chained as if it had never been.
func TestAppendAllLosesOnlyABadRecord(t *testing.T) {
	t.Parallel()
	l, path := openLog(t, &audit.Options{Now: fixedClock()})
	bad := callRecord(1)
	bad.Time = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) // beyond what JSON's time encodes
	err := l.AppendAll(context.Background(), []audit.Record{callRecord(0), bad, callRecord(2)})
	if err == nil || !strings.Contains(err.Error(), "record 2 of 3") {
		t.Fatalf("err = %v, want one naming record 2 of 3", err)
	}
	mustIntact(t, verify(t, path), 2)
	recs, _, err := audit.Read(path, audit.Query{})
	if err != nil || len(recs) != 2 || recs[0].DurationMS != 0 || recs[1].DurationMS != 2 {
		t.Fatalf("read %+v, %v; want the records of 0 and 2", recs, err)
	}
}

// TestAppendAllAfterATornLine checks that a batch appended to a file
// that ends mid-line (a crash while writing) starts on a line of its
// own and leaves the torn bytes as they were.
func TestAppendAllAfterATornLine(t *testing.T) {
	t.Parallel()
	l, path := openLog(t, &audit.Options{Now: fixedClock()})
	appendN(t, l, 0, 3)
	l.Close()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, info.Size()-20); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	l, err = audit.Open(path, &audit.Options{Now: fixedClock()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.AppendAll(context.Background(), []audit.Record{callRecord(3), callRecord(4), callRecord(5)}); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(after), string(before)+"\n") {
		t.Fatal("the batch did not start on a line of its own after the torn bytes")
	}
	rep := verify(t, path)
	mustIntact(t, rep, 5)
	if rep.SkippedLines != 1 {
		t.Errorf("skipped %v, want the torn line", rep.Skipped)
	}
}

// TestAppendAllNothing checks that an empty batch writes nothing.
func TestAppendAllNothing(t *testing.T) {
	t.Parallel()
	l, path := openLog(t, nil)
	if err := l.AppendAll(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(path); err != nil || info.Size() != 0 {
		t.Fatalf("after an empty batch: %v, %v", info, err)
	}
}
