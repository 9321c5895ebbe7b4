package audit_test

import (
	"context"
	"testing"

	"github.com/voltmcp/voltmcp/engine/audit"
)

// BenchmarkAppend measures one append of a typical call record, without
// and with fsync.
func BenchmarkAppend(b *testing.B) {
	for _, tc := range []struct {
		name string
		sync bool
	}{{"nosync", false}, {"fsync", true}} {
		b.Run(tc.name, func(b *testing.B) {
			l, _ := openLog(b, &audit.Options{Sync: tc.sync})
			r := callRecord(1)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := l.Append(ctx, r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkVerify100k verifies a log of 100,000 call records (about 42 MB
// in three files).
func BenchmarkVerify100k(b *testing.B) {
	l, path := openLog(b, nil)
	appendN(b, l, 0, 100_000)
	l.Close()
	b.ReportAllocs()
	for b.Loop() {
		rep, err := audit.Verify(path)
		if err != nil || !rep.Intact || rep.Records != 100_000 {
			b.Fatalf("%v %v %d", err, rep.Intact, rep.Records)
		}
	}
}
