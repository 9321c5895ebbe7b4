package audit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLast writes a log across rotated files, with lines that are not
// records among them, and reads the last records of one server back
// from its end: newest first, at most n, across files, and within the
// byte budget it is given.
func TestLast(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit", "audit.jsonl")
	l, err := Open(path, &Options{MaxFileBytes: 4096, MaxFiles: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const total = 300
	for i := 1; i <= total; i++ {
		r := Record{Kind: KindCall, Server: []string{"a", "b", "c"}[i%3], Tool: fmt.Sprint("t", i), Status: "completed", CallID: fmt.Sprint("call_", i)}
		if i%50 == 0 {
			r.Reason = strings.Repeat("x", 5000) // a line longer than a rotated file
		}
		if err := l.Append(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	rot, _ := listRotated(path)
	if len(rot) < 10 {
		t.Fatalf("%d rotated files: the test wants many", len(rot))
	}
	// A line being written, and a corrupt one, at the end of the active
	// file: skipped.
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("not a record\n{\"seq\":999,\"prev\":\"\",\"kind\":\"call\",\"ser")
	f.Close()

	server := func(id string) func(Record) bool {
		return func(r Record) bool { return r.Kind == KindCall && r.Server == id }
	}
	for _, tc := range []struct {
		name   string
		n      int
		budget int64
		server string
		want   int // records
	}{
		{"a few", 5, 1 << 20, "a", 5},
		{"across files", 60, 1 << 20, "b", 60},
		{"more than there are", 500, 1 << 20, "c", 100},
		{"a small budget", 500, 16 << 10, "a", -1}, // some, not all
		{"no budget", 5, 0, "a", 0},
		{"none", 5, 0, "z", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := Last(path, tc.n, tc.budget, server(tc.server))
			if err != nil {
				t.Fatal(err)
			}
			if tc.want >= 0 && len(recs) != tc.want {
				t.Fatalf("%d records, want %d", len(recs), tc.want)
			}
			if tc.want < 0 && (len(recs) == 0 || len(recs) >= 100) {
				t.Fatalf("%d records within a 16 KiB budget", len(recs))
			}
			// Newest first, one after the other for this server.
			for i, r := range recs {
				if r.Server != tc.server {
					t.Fatalf("record %+v", r)
				}
				if i > 0 && r.Seq >= recs[i-1].Seq {
					t.Fatalf("not newest first: %d after %d", r.Seq, recs[i-1].Seq)
				}
				if i > 0 && recs[i-1].Seq-r.Seq != 3 {
					t.Fatalf("a record was skipped between seq %d and %d", r.Seq, recs[i-1].Seq)
				}
			}
			if len(recs) > 0 && recs[0].Seq < total-2 {
				t.Errorf("the newest is seq %d", recs[0].Seq)
			}
		})
	}
	if recs, err := Last(filepath.Join(t.TempDir(), "none.jsonl"), 5, 1<<20, server("a")); err != nil || len(recs) != 0 {
		t.Errorf("no log: %v %v", recs, err)
	}
}
