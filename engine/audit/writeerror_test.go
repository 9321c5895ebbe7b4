package audit

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestAppendReportsAWriteFailureAndRecovers replaces the active file with
// a directory: appends fail with a WriteError naming the records that
// may be lost, and succeed again once the path is a file again.
func TestAppendReportsAWriteFailureAndRecovers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	if err := l.Append(ctx, Record{Kind: KindCall}); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		err = l.AppendAll(ctx, []Record{{Kind: KindCall}, {Kind: KindCall}})
		var we *WriteError
		if !errors.As(err, &we) || we.Records != 2 {
			t.Fatalf("append to a directory: %v", err)
		}
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := l.Append(ctx, Record{Kind: KindAuditGap, Detail: map[string]any{"lost": 4, "since": "then", "error": "is a directory"}}); err != nil {
		t.Fatalf("append once the path is free again: %v", err)
	}
	if err := l.Append(ctx, Record{Kind: KindCall}); err != nil {
		t.Fatal(err)
	}
	rep, err := Verify(path)
	if err != nil {
		t.Fatal(err)
	}
	// The first record went with the file that was removed: the chain
	// says so (a broken link), and the gap record says 4 were lost.
	if rep.Intact || rep.LostRecords != 4 || len(rep.Lost) != 1 {
		t.Fatalf("verify: %+v", rep)
	}
}
