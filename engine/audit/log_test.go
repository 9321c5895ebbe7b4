package audit_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/engine/audit"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// fixedClock returns a clock that starts at a fixed time and moves one
// second a call.
func fixedClock() func() time.Time {
	var mu sync.Mutex
	t := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(time.Second)
		return t
	}
}

// openLog opens a log in a fresh directory.
func openLog(t testing.TB, opts *audit.Options) (*audit.Log, string) {
	t.Helper()
	path := audit.DefaultPath(t.TempDir())
	l, err := audit.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l, path
}

// callRecord is a typical record of a tool call.
func callRecord(i int) audit.Record {
	return audit.Record{
		Kind: audit.KindCall, Workspace: "ws", Session: "s1", Surface: "serve",
		Server: "github", Tool: fmt.Sprintf("tool_%d", i%3), Risk: "write", Status: "ok",
		DurationMS: int64(i), ResultBytes: 1234, ResultSHA256: strings.Repeat("ab", 32),
		Args:     audit.SummarizeArgs(json.RawMessage(`{"repo":"voltmcp/voltmcp","title":"x","labels":["a"]}`)),
		Decision: &audit.Decision{Allowed: true, Reasons: []string{"tool allowed by default"}},
	}
}

func appendN(t testing.TB, l *audit.Log, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		if err := l.Append(context.Background(), callRecord(i)); err != nil {
			t.Fatal(err)
		}
	}
}

func verify(t *testing.T, path string) audit.VerifyReport {
	t.Helper()
	rep, err := audit.Verify(path)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func mustIntact(t *testing.T, rep audit.VerifyReport, records int64) {
	t.Helper()
	if !rep.Intact || rep.Broken != nil || rep.GapCount != 0 {
		t.Fatalf("chain not intact: broken %v, gaps %v", rep.Broken, rep.Gaps)
	}
	if records >= 0 && rep.Records != records {
		t.Fatalf("verified %d records, want %d", rep.Records, records)
	}
}

// lines returns the lines of a file, newlines dropped.
func lines(t *testing.T, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
}

func writeLines(t *testing.T, path string, ls [][]byte) {
	t.Helper()
	if err := os.WriteFile(path, append(bytes.Join(ls, []byte("\n")), '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestChainVerifies(t *testing.T) {
	t.Parallel()
	l, path := openLog(t, &audit.Options{Now: fixedClock()})
	appendN(t, l, 0, 50)
	rep := verify(t, path)
	mustIntact(t, rep, 50)
	seq, hash := l.Head()
	if rep.FirstSeq != 1 || rep.LastSeq != 50 || seq != 50 || rep.LastHash != hash {
		t.Errorf("report seqs %d..%d hash %s, head %d %s", rep.FirstSeq, rep.LastSeq, rep.LastHash, seq, hash)
	}
	recs, probs, err := audit.Read(path, audit.Query{})
	if err != nil || len(probs) != 0 || len(recs) != 50 {
		t.Fatalf("Read: %d records, problems %v, err %v", len(recs), probs, err)
	}
	if recs[0].Prev != "" || recs[0].Seq != 1 || recs[49].Seq != 50 {
		t.Errorf("first record %+v, last seq %d", recs[0], recs[49].Seq)
	}
	if got := recs[3].Time; !got.Equal(time.Date(2026, 5, 1, 12, 0, 4, 0, time.UTC)) || got.Location() != time.UTC {
		t.Errorf("time = %v, want the clock's fourth tick in UTC", got)
	}
	// Seq and Prev are the log's: a caller's values are ignored.
	r := callRecord(0)
	r.Seq, r.Prev = 7, "forged"
	if err := l.Append(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	mustIntact(t, verify(t, path), 51)
}

func TestTamperingIsReportedAtTheRightLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		edit       func(ls [][]byte) [][]byte
		brokenLine int  // the line Verify reports as the first broken link
		gap        bool // a seq gap too
		skipped    int
	}{
		{"byte edited in line 5", func(ls [][]byte) [][]byte {
			ls[4] = bytes.Replace(ls[4], []byte(`"status":"ok"`), []byte(`"status":"oK"`), 1)
			return ls
		}, 6, false, 0},
		{"line 5 made unreadable", func(ls [][]byte) [][]byte {
			ls[4] = ls[4][:len(ls[4])-3]
			return ls
		}, 6, true, 1},
		{"line 5 deleted", func(ls [][]byte) [][]byte {
			return append(ls[:4:4], ls[5:]...)
		}, 5, true, 0},
		{"lines 3 and 4 swapped", func(ls [][]byte) [][]byte {
			ls[2], ls[3] = ls[3], ls[2]
			return ls
		}, 3, true, 0},
		{"first line edited", func(ls [][]byte) [][]byte {
			ls[0] = bytes.Replace(ls[0], []byte(`"github"`), []byte(`"gitlab"`), 1)
			return ls
		}, 2, false, 0},
		{"line inserted", func(ls [][]byte) [][]byte {
			extra := bytes.Replace(ls[6], []byte(`"seq":7`), []byte(`"seq":70`), 1)
			return append(ls[:7:7], append([][]byte{extra}, ls[7:]...)...)
		}, 8, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l, path := openLog(t, &audit.Options{Now: fixedClock()})
			appendN(t, l, 0, 10)
			writeLines(t, path, tc.edit(lines(t, path)))
			rep := verify(t, path)
			if rep.Intact || rep.Broken == nil {
				t.Fatalf("tampering not detected: %+v", rep)
			}
			if rep.Broken.Line != tc.brokenLine || rep.Broken.File != path || rep.Broken.Kind != audit.ProblemBrokenLink {
				t.Errorf("first broken link %v, want line %d", rep.Broken, tc.brokenLine)
			}
			if rep.Broken.Want == rep.Broken.Got || rep.Broken.Got == "" {
				t.Errorf("broken link lacks expected and found hashes: %+v", rep.Broken)
			}
			if (rep.GapCount > 0) != tc.gap {
				t.Errorf("gaps %v, want gap %v", rep.Gaps, tc.gap)
			}
			if rep.SkippedLines != tc.skipped {
				t.Errorf("skipped %v, want %d", rep.Skipped, tc.skipped)
			}
		})
	}
}

func TestRotationCarriesTheChain(t *testing.T) {
	t.Parallel()
	l, path := openLog(t, &audit.Options{Now: fixedClock(), MaxFileBytes: 4 << 10, MaxFiles: -1})
	appendN(t, l, 0, 200)
	rep := verify(t, path)
	mustIntact(t, rep, 200)
	if len(rep.Files) < 5 {
		t.Fatalf("want several files, got %d", len(rep.Files))
	}
	if len(rep.Warnings) != 0 {
		t.Errorf("warnings: %v", rep.Warnings)
	}
	for i, f := range rep.Files {
		info, err := os.Stat(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		if info.Size() > 4<<10 {
			t.Errorf("%s is %d bytes, over the limit", f.Path, info.Size())
		}
		if i < len(rep.Files)-1 {
			if want := fmt.Sprintf("%s.%012d", path, f.FirstSeq); f.Path != want {
				t.Errorf("rotated file %s, want %s", f.Path, want)
			}
			next := rep.Files[i+1]
			last := lines(t, f.Path)
			first := lines(t, next.Path)[0]
			var r audit.Record
			if err := json.Unmarshal(first, &r); err != nil {
				t.Fatal(err)
			}
			sum := sha256hex(last[len(last)-1])
			if r.Prev != sum || r.Seq != f.LastSeq+1 {
				t.Errorf("%s starts with seq %d prev %s, want seq %d prev %s", next.Path, r.Seq, r.Prev, f.LastSeq+1, sum)
			}
		}
	}
	if rep.Files[len(rep.Files)-1].Path != path {
		t.Errorf("the active file is not last: %v", rep.Files)
	}

	// Reopening goes on with the chain.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2, err := audit.Open(path, &audit.Options{MaxFileBytes: 4 << 10, MaxFiles: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	appendN(t, l2, 200, 50)
	rep = verify(t, path)
	mustIntact(t, rep, -1)
	if len(rep.Files) != 4 || rep.FirstSeq <= 1 || rep.LastSeq != 250 {
		t.Errorf("after pruning to 3 rotated files: %d files, seqs %d..%d", len(rep.Files), rep.FirstSeq, rep.LastSeq)
	}
}

func TestCrashBetweenRotationSteps(t *testing.T) {
	t.Parallel()
	// A writer that died after renaming the active file and before
	// creating the next one leaves no active file.
	l, path := openLog(t, &audit.Options{MaxFileBytes: -1})
	appendN(t, l, 0, 10)
	l.Close()
	if err := os.Rename(path, fmt.Sprintf("%s.%012d", path, 1)); err != nil {
		t.Fatal(err)
	}
	l, err := audit.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if seq, _ := l.Head(); seq != 10 {
		t.Fatalf("head seq %d, want 10 from the rotated file", seq)
	}
	appendN(t, l, 10, 5)
	rep := verify(t, path)
	mustIntact(t, rep, 15)
	if len(rep.Files) != 2 {
		t.Errorf("files %v", rep.Files)
	}
}

func TestTornLastLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		cut     int // bytes cut from the end of the file
		records int64
		skipped int
	}{
		{"cut mid-line", 40, 14, 1},
		{"only the newline cut", 1, 15, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l, path := openLog(t, &audit.Options{Now: fixedClock()})
			appendN(t, l, 0, 10)
			l.Close()
			info, _ := os.Stat(path)
			if err := os.Truncate(path, info.Size()-int64(tc.cut)); err != nil {
				t.Fatal(err)
			}
			before, _ := os.ReadFile(path)

			// Readers skip the torn line and report it; the rest verifies.
			rep := verify(t, path)
			mustIntact(t, rep, tc.records-5)
			if rep.SkippedLines != tc.skipped {
				t.Fatalf("skipped %v, want %d", rep.Skipped, tc.skipped)
			}
			if tc.skipped > 0 && (rep.Skipped[0].Kind != audit.ProblemTorn || rep.Skipped[0].Line != 10) {
				t.Errorf("skipped %v, want a torn line 10", rep.Skipped)
			}

			l, err := audit.Open(path, &audit.Options{Now: fixedClock()})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			probs := l.Problems()
			if (len(probs) > 0) != (tc.skipped > 0) {
				t.Errorf("Problems = %v", probs)
			}
			appendN(t, l, 10, 5)
			after, _ := os.ReadFile(path)
			if !bytes.HasPrefix(after, before) {
				t.Fatal("the torn bytes were rewritten")
			}
			rep = verify(t, path)
			mustIntact(t, rep, tc.records)
			if rep.SkippedLines != tc.skipped {
				t.Errorf("skipped %v after appends", rep.Skipped)
			}
			if tc.skipped > 0 && rep.Skipped[0].Kind != audit.ProblemCorrupt {
				t.Errorf("the completed torn line reads as %v", rep.Skipped[0])
			}
			recs, rprobs, err := audit.Read(path, audit.Query{})
			if err != nil || int64(len(recs)) != tc.records || len(rprobs) != tc.skipped {
				t.Errorf("Read: %d records, %v, %v", len(recs), rprobs, err)
			}
			for i, r := range recs {
				if r.Seq != int64(i+1) {
					t.Fatalf("record %d has seq %d", i, r.Seq)
				}
			}
		})
	}
}

func TestConcurrentAppends(t *testing.T) {
	t.Parallel()
	l, path := openLog(t, &audit.Options{MaxFileBytes: 16 << 10, MaxFiles: -1})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				if err := l.Append(context.Background(), callRecord(g*1000+i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	rep := verify(t, path)
	mustIntact(t, rep, 800)
	if len(rep.Files) < 2 {
		t.Errorf("no rotation happened: %v", rep.Files)
	}
}

func TestTwoWritersShareOneChain(t *testing.T) {
	t.Parallel()
	switch runtime.GOOS {
	case "linux", "darwin", "freebsd", "netbsd", "openbsd", "dragonfly":
	default:
		t.Skip("no flock: one writer per log")
	}
	// Two Logs on one path stand for two processes: each has its own
	// open files and its own flock.
	opts := &audit.Options{MaxFileBytes: 8 << 10, MaxFiles: -1}
	a, path := openLog(t, opts)
	b, err := audit.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var wg sync.WaitGroup
	for _, l := range []*audit.Log{a, b, a, b} {
		wg.Go(func() { appendN(t, l, 0, 100) })
	}
	wg.Wait()
	rep := verify(t, path)
	mustIntact(t, rep, 400)
	if len(rep.Files) < 3 {
		t.Errorf("want rotations, got %d files", len(rep.Files))
	}
}

func TestShrunkLogStaysVisible(t *testing.T) {
	t.Parallel()
	l, path := openLog(t, nil)
	appendN(t, l, 0, 10)
	ls := lines(t, path)
	writeLines(t, path, ls[:6]) // someone removes the last four records
	appendN(t, l, 10, 1)
	probs := l.Problems()
	if len(probs) != 1 || probs[0].Kind != audit.ProblemShrunk {
		t.Fatalf("Problems = %v, want log_shrunk", probs)
	}
	rep := verify(t, path)
	if rep.Intact || rep.Broken == nil || rep.Broken.Line != 7 {
		t.Errorf("the removal does not show: %+v", rep)
	}
}

func TestPermissions(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "agent")
	path := audit.DefaultPath(dir)
	l, err := audit.Open(path, &audit.Options{MaxFileBytes: 2 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	appendN(t, l, 0, 30)
	info, err := os.Stat(filepath.Dir(path))
	if err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("audit dir mode %v (%v), want 0700", info.Mode().Perm(), err)
	}
	n := 0
	err = filepath.WalkDir(filepath.Dir(path), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", d.Name(), info.Mode().Perm())
		}
		return nil
	})
	if err != nil || n < 3 {
		t.Errorf("walked %d files: %v", n, err)
	}

	// An existing file with a wider mode is narrowed.
	l.Close()
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	l, err = audit.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if info, _ := os.Stat(path); info.Mode().Perm() != 0o600 {
		t.Errorf("reopened file has mode %v", info.Mode().Perm())
	}
}

func TestCanarySecretsNeverReachDisk(t *testing.T) {
	t.Parallel()
	const canary = "sk-CANARY-7f3a9c"
	redact := func(s string) string { return strings.ReplaceAll(s, canary, "[redacted]") }
	l, path := openLog(t, &audit.Options{Redact: redact, MaxFileBytes: 2 << 10, MaxFiles: -1})
	type custom struct {
		Token string            `json:"token"`
		Env   map[string]string `json:"env"`
	}
	for i := range 20 {
		r := audit.Record{
			Args:     map[string]string{canary: canary, "k": "v" + canary},
			Decision: &audit.Decision{Reasons: []string{"token " + canary + " denied"}},
			Detail: map[string]any{canary: canary, "n": i, "nested": []any{map[string]any{"x": canary}},
				"custom": custom{Token: canary, Env: map[string]string{canary: "1"}}},
		}
		// Every string field, the ones added later included, holds it
		// (Prev is the log's own).
		v := reflect.ValueOf(&r).Elem()
		for j := range v.NumField() {
			if f := v.Field(j); f.Kind() == reflect.String && v.Type().Field(j).Name != "Prev" {
				f.SetString(canary)
			}
		}
		if err := l.Append(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	// Arguments are summarized without values, even with no redaction.
	args := audit.SummarizeArgs(json.RawMessage(`{"token":"` + canary + `","n":[1,2]}`))
	if err := l.Append(context.Background(), audit.Record{Kind: audit.KindCall, Args: args}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	files := 0
	filepath.WalkDir(filepath.Dir(path), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(canary)) {
			t.Errorf("%s holds the canary", d.Name())
		}
		return nil
	})
	if files < 2 {
		t.Errorf("only %d files written", files)
	}
	mustIntact(t, verify(t, path), 21)
}

func TestHugeRecordIsShrunk(t *testing.T) {
	t.Parallel()
	l, path := openLog(t, nil)
	big := strings.Repeat("x", 2*audit.MaxLineBytes)
	args := map[string]string{}
	for i := range 1000 {
		args[fmt.Sprint("k", i)] = "string(1)"
	}
	if err := l.Append(context.Background(), audit.Record{Kind: audit.KindPluginFault, Server: big, Args: args,
		Detail: map[string]any{"output": big}}); err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 0, 2)
	for _, ln := range lines(t, path) {
		if len(ln) > audit.MaxLineBytes {
			t.Fatalf("a line of %d bytes was written", len(ln))
		}
	}
	recs, probs, err := audit.Read(path, audit.Query{Kind: audit.KindPluginFault})
	if err != nil || len(probs) != 0 || len(recs) != 1 {
		t.Fatalf("Read: %d, %v, %v", len(recs), probs, err)
	}
	if recs[0].Detail["shrunk"] == nil || len(recs[0].Args) > 65 || len(recs[0].Server) > 2<<10 {
		t.Errorf("record not shrunk: detail %v, %d args", recs[0].Detail, len(recs[0].Args))
	}
	mustIntact(t, verify(t, path), 3)
}

func TestAppendAfterClose(t *testing.T) {
	t.Parallel()
	l, _ := openLog(t, nil)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Append(context.Background(), callRecord(0)); !errors.Is(err, audit.ErrClosed) {
		t.Errorf("Append after Close: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	l2, _ := openLog(t, nil)
	if err := l2.Append(ctx, callRecord(0)); !errors.Is(err, context.Canceled) {
		t.Errorf("Append with a cancelled context: %v", err)
	}
}

func TestMissingLog(t *testing.T) {
	t.Parallel()
	path := audit.DefaultPath(t.TempDir())
	if _, err := audit.Verify(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Verify: %v", err)
	}
	if _, _, err := audit.Read(path, audit.Query{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Read: %v", err)
	}
	if err := audit.Tail(context.Background(), path, 10, false, func(audit.Record) error { return nil }); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Tail: %v", err)
	}
}

func TestSummarizeArgs(t *testing.T) {
	t.Parallel()
	many := map[string]int{}
	for i := range 70 {
		many[fmt.Sprintf("k%02d", i)] = i
	}
	manyJSON, _ := json.Marshal(many)
	for _, tc := range []struct {
		in   string
		want map[string]string
	}{
		{``, nil},
		{`null`, nil},
		{`{"q":"héllo","n":1.5,"b":true,"z":null,"a":[1,2,3],"o":{"x":1,"y":2}}`,
			map[string]string{"q": "string(5)", "n": "number", "b": "bool", "z": "null", "a": "array(3)", "o": "object(2)"}},
		{`[1,2]`, map[string]string{"(args)": "array(2)"}},
		{`"secret"`, map[string]string{"(args)": "string(6)"}},
		{`{"a":`, map[string]string{"(args)": "invalid JSON (5 bytes)"}},
		{`{} {}`, map[string]string{"(args)": "invalid JSON (5 bytes)"}},
		{`{"` + strings.Repeat("k", 100) + `":1}`, map[string]string{strings.Repeat("k", 61) + "…": "number"}},
	} {
		got := audit.SummarizeArgs(json.RawMessage(tc.in))
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("SummarizeArgs(%.40q) = %v, want %v", tc.in, got, tc.want)
		}
	}
	got := audit.SummarizeArgs(manyJSON)
	if len(got) != 65 || got["…"] != "6 more keys" || got["k00"] != "number" || got["k64"] != "" {
		t.Errorf("70 keys summarized as %d entries, … = %q", len(got), got["…"])
	}
}

func TestReadQuery(t *testing.T) {
	t.Parallel()
	l, path := openLog(t, &audit.Options{Now: fixedClock(), MaxFileBytes: 4 << 10})
	appendN(t, l, 0, 30) // times 12:00:01 .. 12:00:30; tools tool_0..tool_2
	for _, kind := range []string{audit.KindTrust, audit.KindPinChange} {
		if err := l.Append(context.Background(), audit.Record{Kind: kind, Server: "github", Status: "denied"}); err != nil {
			t.Fatal(err)
		}
	}
	base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		q     audit.Query
		seqs  []int64 // first and last seq; nil for none
		count int
	}{
		{"all", audit.Query{}, []int64{1, 32}, 32},
		{"tool", audit.Query{Tool: "tool_1"}, []int64{2, 29}, 10},
		{"kind", audit.Query{Kind: audit.KindTrust}, []int64{31, 31}, 1},
		{"status", audit.Query{Status: "denied"}, []int64{31, 32}, 2},
		{"server none", audit.Query{Server: "gitlab"}, nil, 0},
		{"since until", audit.Query{Since: base.Add(10 * time.Second), Until: base.Add(20 * time.Second)}, []int64{10, 19}, 10},
		{"limit keeps the newest", audit.Query{Kind: audit.KindCall, Limit: 3}, []int64{28, 30}, 3},
	} {
		recs, probs, err := audit.Read(path, tc.q)
		if err != nil || len(probs) != 0 {
			t.Fatalf("%s: %v %v", tc.name, probs, err)
		}
		if len(recs) != tc.count {
			t.Errorf("%s: %d records, want %d", tc.name, len(recs), tc.count)
			continue
		}
		if tc.count > 0 && (recs[0].Seq != tc.seqs[0] || recs[len(recs)-1].Seq != tc.seqs[1]) {
			t.Errorf("%s: seqs %d..%d, want %v", tc.name, recs[0].Seq, recs[len(recs)-1].Seq, tc.seqs)
		}
	}
}

func TestTail(t *testing.T) {
	t.Parallel()
	l, path := openLog(t, &audit.Options{MaxFileBytes: 2 << 10, MaxFiles: -1})
	appendN(t, l, 0, 25)

	var got []int64
	collect := func(r audit.Record) error { got = append(got, r.Seq); return nil }
	if err := audit.Tail(context.Background(), path, 12, false, collect); err != nil {
		t.Fatal(err)
	}
	if len(got) != 12 || got[0] != 14 || got[11] != 25 {
		t.Fatalf("tail -n 12 gave %v", got)
	}
	got = nil
	if err := audit.Tail(context.Background(), path, 100, false, collect); err != nil || len(got) != 25 {
		t.Fatalf("tail -n 100 gave %d records: %v", len(got), err)
	}

	// Follow across several rotations while another goroutine appends.
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Patience)
	defer cancel()
	done := errors.New("done")
	got = nil
	errc := make(chan error, 1)
	started := make(chan struct{})
	go func() {
		errc <- audit.Tail(ctx, path, 2, true, func(r audit.Record) error {
			got = append(got, r.Seq)
			if len(got) == 2 {
				close(started)
			}
			if r.Seq == 125 {
				return done
			}
			return nil
		})
	}()
	select {
	case <-started:
	case err := <-errc:
		t.Fatalf("Tail ended early: %v", err)
	}
	for i := 25; i < 125; i++ {
		appendN(t, l, i, 1)
		if i%10 == 0 {
			time.Sleep(pollInterval / 4)
		}
	}
	if err := <-errc; !errors.Is(err, done) {
		t.Fatalf("Tail: %v", err)
	}
	if len(got) != 102 || got[0] != 24 {
		t.Fatalf("followed %d records from %v", len(got), got[:min(len(got), 3)])
	}
	for i := 1; i < len(got); i++ {
		if got[i] != got[i-1]+1 {
			t.Fatalf("seq %d follows %d", got[i], got[i-1])
		}
	}
}

// pollInterval mirrors the package's poll interval, to pace the writer
// in TestTail so that rotations happen between polls and within them.
const pollInterval = 200 * time.Millisecond

func sha256hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// TestHoldLock checks that a log holding its lock between appends keeps
// other writers out until it lets go (Close, or HoldLock after taking
// it), and that each writer then goes on from the other's last record.
// It also checks WithBeforeWait: its hook runs once when an append
// waits for the lock, and not when it waits for nothing.
func TestHoldLock(t *testing.T) {
	t.Parallel()
	path := audit.DefaultPath(t.TempDir())
	holder, err := audit.Open(path, &audit.Options{HoldLock: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	other, err := audit.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	var waits atomic.Int32
	counting := audit.WithBeforeWait(context.Background(), func() { waits.Add(1) })
	for range 2 {
		if err := holder.Append(counting, audit.Record{Kind: audit.KindCall, Tool: "held"}); err != nil {
			t.Fatal(err)
		}
	}
	if n := waits.Load(); n != 0 {
		t.Errorf("the before-wait hook ran %d times for appends that waited for nothing", n)
	}
	// testwait: the deadline under test, which must end the wait
	ctx, cancel := context.WithTimeout(counting, 50*time.Millisecond)
	defer cancel()
	if err := other.Append(ctx, audit.Record{Kind: audit.KindCall, Tool: "other"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("another writer appended while the lock was held: %v", err)
	}
	if n := waits.Load(); n != 1 {
		t.Errorf("the before-wait hook ran %d times for an append that waited for the lock, want 1", n)
	}
	if err := holder.Close(); err != nil {
		t.Fatal(err)
	}
	if err := other.Append(context.Background(), audit.Record{Kind: audit.KindCall, Tool: "other"}); err != nil {
		t.Fatal(err)
	}

	// A short hold lets go by itself; the holder then catches up with
	// what the other wrote meanwhile.
	brief, err := audit.Open(path, &audit.Options{HoldLock: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer brief.Close()
	for i := range 3 {
		if err := brief.Append(context.Background(), audit.Record{Kind: audit.KindCall, Tool: "brief"}); err != nil {
			t.Fatal(err)
		}
		if err := other.Append(context.Background(), audit.Record{Kind: audit.KindCall, Tool: fmt.Sprint("other", i)}); err != nil {
			t.Fatal(err)
		}
	}
	// The hold ends by itself: another writer then appends without
	// waiting for it.
	records := int64(9)
	deadline := testwait.Deadline(t)
	for {
		var waited atomic.Bool
		ctx := audit.WithBeforeWait(context.Background(), func() { waited.Store(true) })
		if err := other.Append(ctx, audit.Record{Kind: audit.KindCall, Tool: "after"}); err != nil {
			t.Fatal(err)
		}
		records++
		if !waited.Load() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("another writer still waits long after a hold of 1ms")
		}
		time.Sleep(time.Millisecond)
	}
	mustIntact(t, verify(t, path), records)
}
