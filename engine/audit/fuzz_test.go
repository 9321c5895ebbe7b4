package audit_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/voltmcp/voltmcp/engine/audit"
)

// FuzzRead feeds arbitrary bytes to the readers as a log: the first part
// as a rotated file, the rest as the active file. Verify, Read and Tail
// must not panic, must agree on the number of records, and must count
// every line as a record or a skipped line.
// Run it with: go test ./engine/audit -run '^$' -fuzz FuzzRead -fuzztime 60s
func FuzzRead(f *testing.F) {
	seedDir := f.TempDir()
	l, err := audit.Open(audit.DefaultPath(seedDir), &audit.Options{Now: fixedClock()})
	if err != nil {
		f.Fatal(err)
	}
	appendN(f, l, 0, 3)
	l.Close()
	good, err := os.ReadFile(audit.DefaultPath(seedDir))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)-7])
	f.Add(bytes.Replace(good, []byte(`"seq":2`), []byte(`"seq":9`), 1))
	f.Add([]byte("{\"seq\":1,\"prev\":\"\"}\n{\"seq\":2,\"prev\":\"00\"}\nnot json\n\n{"))
	f.Add([]byte(`{"seq":1,"prev":null,"time":"x"}`))
	f.Add([]byte("\x00\xff\n\n\n{}"))

	dir := f.TempDir()
	path := audit.DefaultPath(dir)
	if err := os.MkdirAll(dir+"/audit", 0o700); err != nil {
		f.Fatal(err)
	}
	rotated := fmt.Sprintf("%s.%012d", path, 1)
	f.Fuzz(func(t *testing.T, data []byte) {
		cut := 0
		if len(data) > 0 {
			cut = int(data[0]) * len(data) / 256
		}
		if err := os.WriteFile(rotated, data[:cut], 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data[cut:], 0o600); err != nil {
			t.Fatal(err)
		}
		rep, err := audit.Verify(path)
		if err != nil {
			t.Fatal(err)
		}
		lines := 0
		for _, fs := range rep.Files {
			lines += fs.Lines
		}
		if int64(lines) != rep.Records+int64(rep.SkippedLines) {
			t.Fatalf("%d lines, %d records, %d skipped", lines, rep.Records, rep.SkippedLines)
		}
		if rep.Intact != (rep.BrokenLinks == 0 && rep.GapCount == 0) {
			t.Fatalf("Intact %v with %d broken links and %d gaps", rep.Intact, rep.BrokenLinks, rep.GapCount)
		}
		recs, _, err := audit.Read(path, audit.Query{})
		if err != nil || int64(len(recs)) != rep.Records {
			t.Fatalf("Read: %d records, Verify: %d (%v)", len(recs), rep.Records, err)
		}
		n := 0
		if err := audit.Tail(context.Background(), path, 5, false, func(audit.Record) error { n++; return nil }); err != nil || n > 5 {
			t.Fatalf("Tail: %d records, %v", n, err)
		}
	})
}
