package output

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// fakeClock is an injectable now.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// testOutputStore returns a store in a fresh directory with a fake clock.
func testOutputStore(t testing.TB, ttl time.Duration, maxBytes int64) (*Store, *fakeClock) {
	t.Helper()
	clock := newFakeClock()
	dir := filepath.Join(t.TempDir(), "mcp", "outputs")
	return NewStore(dir, "workspace-a", &StoreOptions{TTL: ttl, MaxBytes: maxBytes, Now: clock.now}), clock
}

func mustPut(t testing.TB, s *Store, data string) string {
	t.Helper()
	id, err := s.Put(Source{Server: "srv"}, "tool", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func mustRead(t testing.TB, s *Store, id string, req ReadRequest) ReadResult {
	t.Helper()
	res, err := s.Read(id, req)
	if err != nil {
		t.Fatalf("read %+v: %v", req, err)
	}
	return res
}

func TestNewStoreDefaults(t *testing.T) {
	for _, opts := range []*StoreOptions{nil, {}, {TTL: -1, MaxBytes: -1}} {
		s := NewStore(t.TempDir(), "w", opts)
		if s.ttl != DefaultTTL || s.maxBytes != DefaultMaxBytes || s.now == nil {
			t.Errorf("NewStore(%+v): ttl %v, maxBytes %d, now set %v", opts, s.ttl, s.maxBytes, s.now != nil)
		}
	}
}

// multiByteText mixes 1-, 2-, 3- and 4-byte runes, short lines and one
// long line without a newline.
func multiByteText() string {
	var b strings.Builder
	for i := range 400 {
		b.WriteString(strconv.Itoa(i))
		b.WriteString(" aé€😀 ")
		b.WriteString(strings.Repeat("ж", i%17))
		b.WriteString("\n")
	}
	b.WriteString(strings.Repeat("日本語😀", 3000)) // ~39 KB, no newline
	b.WriteString("\ntail é\n")
	return b.String()
}

var outputIDRE = regexp.MustCompile(`^mcpout_[a-z2-7]{26}$`)

func TestOutputIDs(t *testing.T) {
	s, _ := testOutputStore(t, 0, 0)
	seen := map[string]bool{}
	chars := map[rune]int{}
	for i := range 2000 {
		var id string
		if i < 50 {
			id = mustPut(t, s, "x") // ids from put have the same form
		} else {
			id = newOutputID()
		}
		if !outputIDRE.MatchString(id) || !validOutputID(id) {
			t.Fatalf("malformed id %q", id)
		}
		if seen[id] {
			t.Fatalf("duplicate id %q", id)
		}
		seen[id] = true
		for _, c := range id[len(outputIDPrefix):] {
			chars[c]++
		}
	}
	// 52,000 random characters over 32 symbols: each about 1,625 times.
	if len(chars) != 32 {
		t.Fatalf("ids use %d distinct characters, want 32", len(chars))
	}
	for c, n := range chars {
		if n < 1200 || n > 2100 {
			t.Errorf("character %q appears %d times in 52,000: not uniform", c, n)
		}
	}
}

func TestOutputFileModes(t *testing.T) {
	s, _ := testOutputStore(t, 0, 0)
	// A directory left wider than it should be is narrowed.
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(s.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	id := mustPut(t, s, "secret output\n")
	for _, c := range []struct {
		path string
		mode fs.FileMode
	}{
		{s.dir, 0o700 | fs.ModeDir},
		{s.wsDir(), 0o700 | fs.ModeDir},
		{filepath.Join(s.wsDir(), id), 0o600},
	} {
		info, err := os.Lstat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode() != c.mode {
			t.Errorf("%s: mode %v, want %v", filepath.Base(c.path), info.Mode(), c.mode)
		}
	}
	// Nothing else is left in the directory (no temporary file).
	entries, err := os.ReadDir(s.wsDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != id {
		t.Errorf("directory holds %v, want only %s", entries, id)
	}
}

func TestOutputRoundTrip(t *testing.T) {
	s, _ := testOutputStore(t, 0, 0)
	for _, c := range []struct {
		name  string
		data  string
		lines int
	}{
		{"empty", "", 0},
		{"one line no newline", "hello", 1},
		{"one line", "hello\n", 1},
		{"json", `{"a": [1, 2, 3], "b": "é"}`, 1},
		{"multi-byte", multiByteText(), 402},
		{"blank lines", "\n\n\n", 3},
		{"binary", "\x00\xff\xfe\n\x80", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			id, err := s.Put(Source{Server: "github"}, "search_code", []byte(c.data))
			if err != nil {
				t.Fatal(err)
			}
			res := mustRead(t, s, id, ReadRequest{Limit: 1 << 20})
			want := ReadResult{Content: c.data, TotalBytes: int64(len(c.data)), TotalLines: c.lines, Server: "github", Tool: "search_code"}
			if res != want {
				t.Errorf("read = %+v\nwant   %+v", res, want)
			}
		})
	}
}

func TestOutputPagingByOffset(t *testing.T) {
	s, _ := testOutputStore(t, 0, 0)
	data := multiByteText()
	id := mustPut(t, s, data)
	for _, limit := range []int64{64, 65, 66, 67, 100, 1000, 4099, 51200, int64(len(data)), int64(len(data)) + 1} {
		t.Run(strconv.FormatInt(limit, 10), func(t *testing.T) {
			var got strings.Builder
			var off int64
			pages := 0
			for {
				res := mustRead(t, s, id, ReadRequest{Offset: off, Limit: limit})
				pages++
				if res.Offset != off {
					t.Fatalf("page %d starts at %d, asked %d", pages, res.Offset, off)
				}
				if int64(len(res.Content)) > limit {
					t.Fatalf("page %d: %d bytes over limit %d", pages, len(res.Content), limit)
				}
				if !utf8.ValidString(res.Content) {
					t.Fatalf("page %d at %d: split rune", pages, off)
				}
				if res.TotalBytes != int64(len(data)) {
					t.Fatalf("TotalBytes %d, want %d", res.TotalBytes, len(data))
				}
				got.WriteString(res.Content)
				if !res.Truncated {
					if res.NextOffset != 0 {
						t.Fatalf("last page: NextOffset %d, want 0", res.NextOffset)
					}
					break
				}
				if res.NextOffset != off+int64(len(res.Content)) || len(res.Content) == 0 {
					t.Fatalf("page %d: NextOffset %d after %d bytes at %d", pages, res.NextOffset, len(res.Content), off)
				}
				off = res.NextOffset
			}
			if got.String() != data {
				t.Fatalf("pages do not make up the output exactly (%d bytes, want %d)", got.Len(), len(data))
			}
			if limit >= int64(len(data)) && pages != 1 {
				t.Errorf("%d pages with a limit over the size", pages)
			}
		})
	}

	// Pages end on a line when a newline is in their last tenth.
	res := mustRead(t, s, id, ReadRequest{Limit: 1000})
	if !strings.HasSuffix(res.Content, "\n") {
		t.Errorf("page does not end on a line: %q", res.Content[len(res.Content)-20:])
	}
	// An offset in the middle of a rune starts at the next one.
	mid := int64(strings.Index(data, "€") + 1)
	res = mustRead(t, s, id, ReadRequest{Offset: mid, Limit: 64})
	if res.Offset != mid+2 || !utf8.ValidString(res.Content) || !strings.HasPrefix(data[res.Offset:], res.Content) {
		t.Errorf("mid-rune offset %d: page at %d %q", mid, res.Offset, res.Content)
	}
	// The end is an empty last page; past it is an error.
	res = mustRead(t, s, id, ReadRequest{Offset: int64(len(data))})
	if res.Content != "" || res.Truncated || res.NextOffset != 0 {
		t.Errorf("at the end: %+v", res)
	}
	if _, err := s.Read(id, ReadRequest{Offset: int64(len(data)) + 1}); err == nil || !strings.Contains(err.Error(), "past the end") {
		t.Errorf("past the end: %v", err)
	}
}

func TestOutputLineRange(t *testing.T) {
	s, _ := testOutputStore(t, 0, 0)
	var lines []string
	for i := 1; i <= 50; i++ {
		lines = append(lines, "line "+strconv.Itoa(i)+" é")
	}
	data := strings.Join(lines, "\n") // no final newline
	id := mustPut(t, s, data)
	join := func(from, to int) string { // 1-based inclusive
		s := strings.Join(lines[from-1:to], "\n")
		if to < len(lines) {
			s += "\n"
		}
		return s
	}
	for _, c := range []struct {
		name       string
		start, end int
		limit      int64
		want       string
		truncated  bool
		err        string
	}{
		{name: "one line", start: 3, end: 3, want: join(3, 3)},
		{name: "range", start: 10, end: 14, want: join(10, 14)},
		{name: "to the end", start: 48, want: join(48, 50)},
		{name: "from the start", end: 2, want: join(1, 2)},
		{name: "last line", start: 50, end: 50, want: join(50, 50)},
		{name: "end past the last line", start: 49, end: 99, want: join(49, 50)},
		{name: "bounded by limit", start: 1, end: 50, limit: 95, want: join(1, 9), truncated: true},
		{name: "start past the end", start: 51, err: "past the end"},
		{name: "start after end", start: 5, end: 4, err: "after end line"},
		{name: "negative", start: -1, err: "negative"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := s.Read(id, ReadRequest{StartLine: c.start, EndLine: c.end, Limit: c.limit, Offset: 7})
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Content != c.want || res.Truncated != c.truncated {
				t.Fatalf("lines %d-%d: %q (truncated %v), want %q (truncated %v)", c.start, c.end, res.Content, res.Truncated, c.want, c.truncated)
			}
			if start := max(c.start, 1); res.Offset != int64(len(join(1, start-1))) && start > 1 {
				t.Errorf("Offset %d, want the start of line %d", res.Offset, start)
			}
			if c.truncated && res.NextOffset != res.Offset+int64(len(res.Content)) {
				t.Errorf("NextOffset %d", res.NextOffset)
			}
		})
	}
}

func TestOutputPatternFilter(t *testing.T) {
	s, _ := testOutputStore(t, 0, 0)
	data := "ok start\nerror: disk é\nok\nok\nERROR: net\nerror: again 😀\nok end"
	id := mustPut(t, s, data)
	for _, c := range []struct {
		name       string
		req        ReadRequest
		want       string
		truncated  bool
		err        string
		nextOffset int64
	}{
		{name: "matches", req: ReadRequest{Pattern: "^error"}, want: "2: error: disk é\n6: error: again 😀\n"},
		{name: "case-insensitive", req: ReadRequest{Pattern: "(?i)^error"}, want: "2: error: disk é\n5: ERROR: net\n6: error: again 😀\n"},
		{name: "last line without newline", req: ReadRequest{Pattern: "end$"}, want: "7: ok end\n"},
		{name: "no match", req: ReadRequest{Pattern: "panic"}, want: ""},
		{name: "in a line range", req: ReadRequest{Pattern: "error", StartLine: 3, EndLine: 6}, want: "6: error: again 😀\n"},
		{name: "from an offset", req: ReadRequest{Pattern: "error", Offset: int64(strings.Index(data, "ok\nok"))}, want: "6: error: again 😀\n"},
		{name: "bad regexp", req: ReadRequest{Pattern: "a(b"}, err: "invalid pattern"},
		{name: "pattern too long", req: ReadRequest{Pattern: strings.Repeat("a", maxReadPattern+1)}, err: "pattern is over"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := s.Read(id, c.req)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Content != c.want || res.Truncated != c.truncated {
				t.Fatalf("%q (truncated %v), want %q", res.Content, res.Truncated, c.want)
			}
			if res.TotalLines != 7 || res.TotalBytes != int64(len(data)) {
				t.Errorf("totals %d lines %d bytes", res.TotalLines, res.TotalBytes)
			}
		})
	}

	// Paging the matches of a large output with a small limit yields each
	// matching line once, in order, each page within the limit.
	var b strings.Builder
	var want strings.Builder
	for i := 1; i <= 3000; i++ {
		if i%7 == 0 {
			line := "match " + strconv.Itoa(i) + " ü" + strings.Repeat("x", i%50)
			b.WriteString(line + "\n")
			want.WriteString(strconv.Itoa(i) + ": " + line + "\n")
		} else {
			b.WriteString("other " + strconv.Itoa(i) + "\n")
		}
	}
	big := mustPut(t, s, b.String())
	for _, limit := range []int64{100, 200, 4096} {
		var got strings.Builder
		var off int64
		for pages := 0; ; pages++ {
			res := mustRead(t, s, big, ReadRequest{Pattern: "^match", Offset: off, Limit: limit})
			if int64(len(res.Content)) > limit {
				t.Fatalf("limit %d: page of %d bytes", limit, len(res.Content))
			}
			got.WriteString(res.Content)
			if !res.Truncated {
				break
			}
			if res.NextOffset <= off || pages > 10000 {
				t.Fatalf("limit %d: no progress at %d", limit, off)
			}
			off = res.NextOffset
		}
		if got.String() != want.String() {
			t.Errorf("limit %d: paged matches differ (%d bytes, want %d)", limit, got.Len(), want.Len())
		}
	}

	// A single matching line longer than the limit is cut to fit, on a
	// rune, and the next page goes on after it.
	long := mustPut(t, s, "a\n"+strings.Repeat("é", 1000)+"\nb é\n")
	res := mustRead(t, s, long, ReadRequest{Pattern: "é", Limit: 64})
	if len(res.Content) > 64 || !strings.HasPrefix(res.Content, "2: éé") || !utf8.ValidString(res.Content) || !res.Truncated {
		t.Fatalf("long match: %q %+v", res.Content, res)
	}
	res = mustRead(t, s, long, ReadRequest{Pattern: "é", Limit: 64, Offset: res.NextOffset})
	if res.Content != "3: b é\n" || res.Truncated {
		t.Errorf("after the long match: %q", res.Content)
	}
}

func TestOutputLimit(t *testing.T) {
	s, _ := testOutputStore(t, 0, 0)
	data := strings.Repeat("0123456789abcdé\n", 10000)
	id := mustPut(t, s, data)
	for _, c := range []struct {
		name string
		req  ReadRequest
		want int64 // the limit in force
		err  string
	}{
		{name: "default", req: ReadRequest{}, want: defaultReadLimit},
		{name: "small", req: ReadRequest{Limit: 64}, want: 64},
		{name: "lines", req: ReadRequest{Limit: 300, StartLine: 5}, want: 300},
		{name: "pattern", req: ReadRequest{Limit: 300, Pattern: "é"}, want: 300},
		{name: "too small", req: ReadRequest{Limit: 10}, err: "at least 64"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := s.Read(id, c.req)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n := int64(len(res.Content)); n > c.want || n < c.want*8/10 || !res.Truncated {
				t.Errorf("%d bytes (truncated %v), want at most %d and not much less", n, res.Truncated, c.want)
			}
		})
	}
}

func TestOutputTTLExpiry(t *testing.T) {
	const ttl = time.Hour
	s, clock := testOutputStore(t, ttl, 0)
	old := mustPut(t, s, "old\n")
	clock.add(30 * time.Minute)
	young := mustPut(t, s, "young\n")
	clock.add(30*time.Minute - time.Nanosecond)
	mustRead(t, s, old, ReadRequest{}) // one nanosecond left
	clock.add(time.Nanosecond)
	if _, err := s.Read(old, ReadRequest{}); !errors.Is(err, ErrUnknown) {
		t.Fatalf("expired: %v", err)
	}
	mustRead(t, s, young, ReadRequest{})

	// sweep removes what expired, and a put does too, without a read.
	clock.add(29 * time.Minute)
	other := mustPut(t, s, "other\n")
	clock.add(time.Minute)
	s.Sweep()
	if _, err := os.Stat(filepath.Join(s.wsDir(), young)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("expired output still on disk after sweep: %v", err)
	}
	mustRead(t, s, other, ReadRequest{})
	clock.add(time.Hour)
	mustPut(t, s, "newer\n")
	if _, err := os.Stat(filepath.Join(s.wsDir(), other)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("expired output still on disk after put: %v", err)
	}
}

func TestOutputSweepOtherWorkspaces(t *testing.T) {
	s, clock := testOutputStore(t, time.Hour, 0)
	b := NewStore(s.dir, "workspace-b", &StoreOptions{TTL: 90 * 24 * time.Hour, Now: clock.now})
	c := NewStore(s.dir, "workspace-c", &StoreOptions{TTL: time.Hour, Now: clock.now})
	idB := mustPut(t, b, "b\n")
	clock.add(20 * 24 * time.Hour)
	idC := mustPut(t, c, "c\n")
	clock.add(10 * 24 * time.Hour)
	s.Sweep() // b's output is 30 days old: abandoned; c's is 10 days old
	if _, err := os.Stat(b.wsDir()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("abandoned workspace directory left: %v", err)
	}
	if _, err := os.Stat(filepath.Join(c.wsDir(), idC)); err != nil {
		t.Errorf("recent output of another workspace removed: %v", err)
	}
	if _, err := b.Read(idB, ReadRequest{}); !errors.Is(err, ErrUnknown) {
		t.Errorf("read after sweep: %v", err)
	}
}

// dirSize sums the sizes of the files in dir.
func dirSize(t *testing.T, dir string) int64 {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		n += info.Size()
	}
	return n
}

func TestOutputQuotaEviction(t *testing.T) {
	const quota = 10_000
	s, clock := testOutputStore(t, 0, quota)
	chunk := strings.Repeat("é", 1500) // 3,000 bytes, plus a header
	var ids []string
	for range 3 {
		ids = append(ids, mustPut(t, s, chunk))
		clock.add(time.Second)
	}
	// Touching the first would not save it: eviction goes by creation.
	mustRead(t, s, ids[0], ReadRequest{})
	ids = append(ids, mustPut(t, s, chunk))
	if _, err := s.Read(ids[0], ReadRequest{}); !errors.Is(err, ErrUnknown) {
		t.Fatalf("oldest output not evicted: %v", err)
	}
	for _, id := range ids[1:] {
		mustRead(t, s, id, ReadRequest{})
	}
	if n := dirSize(t, s.wsDir()); n > quota {
		t.Errorf("store holds %d bytes, quota %d", n, quota)
	}
	// A bigger one evicts as many as it needs, oldest first.
	clock.add(time.Second)
	bigger := mustPut(t, s, strings.Repeat("x", 6000))
	for i, id := range append(ids[1:], bigger) {
		_, err := s.Read(id, ReadRequest{})
		if wantGone := i < 2; wantGone != errors.Is(err, ErrUnknown) {
			t.Errorf("output %d: read error %v, evicted want %v", i+1, err, wantGone)
		}
	}
	if n := dirSize(t, s.wsDir()); n > quota {
		t.Errorf("store holds %d bytes, quota %d", n, quota)
	}
}

func TestOutputOverQuotaSingle(t *testing.T) {
	const quota = 4096
	s, _ := testOutputStore(t, 0, quota)
	first := mustPut(t, s, "small\n")
	data := strings.Repeat("line ü 0123456789\n", 1000)
	id := mustPut(t, s, data)
	res := mustRead(t, s, id, ReadRequest{Limit: 1 << 20})
	if res.TotalBytes >= int64(len(data)) || res.TotalBytes < quota/2 || res.Truncated {
		t.Fatalf("stored %d of %d bytes (truncated %v)", res.TotalBytes, len(data), res.Truncated)
	}
	if !strings.HasPrefix(data, res.Content) || !utf8.ValidString(res.Content) || !strings.HasSuffix(res.Content, "\n") {
		t.Errorf("stored content is not a prefix cut on a line")
	}
	if res.TotalLines != strings.Count(res.Content, "\n") {
		t.Errorf("TotalLines %d", res.TotalLines)
	}
	if n := dirSize(t, s.wsDir()); n > quota {
		t.Errorf("store holds %d bytes, quota %d", n, quota)
	}
	if _, err := s.Read(first, ReadRequest{}); !errors.Is(err, ErrUnknown) {
		t.Errorf("the output before was not evicted to make room: %v", err)
	}
	raw, err := os.ReadFile(filepath.Join(s.wsDir(), id))
	if err != nil {
		t.Fatal(err)
	}
	header := string(raw[:bytes.IndexByte(raw, '\n')])
	for _, want := range []string{`"originalBytes":` + strconv.Itoa(len(data)), `"originalLines":1000`, `exceeded the cache quota of 4096 bytes`} {
		if !strings.Contains(header, want) {
			t.Errorf("meta %s lacks %s", header, want)
		}
	}
}

func TestOutputOtherWorkspaceRefused(t *testing.T) {
	a, clock := testOutputStore(t, 0, 0)
	b := NewStore(a.dir, "workspace-b", &StoreOptions{Now: clock.now})
	id := mustPut(t, a, "a's output\n")
	_, errUnknown := b.Read(newOutputID(), ReadRequest{})
	_, errOther := b.Read(id, ReadRequest{})
	if errOther == nil || errUnknown == nil || errOther.Error() != errUnknown.Error() || !errors.Is(errOther, ErrUnknown) {
		t.Fatalf("other workspace's id: %v; unknown id: %v", errOther, errUnknown)
	}
	// Even a file moved into b's directory is refused: its header names a.
	mustPut(t, b, "make b's directory\n")
	if err := os.Rename(filepath.Join(a.wsDir(), id), filepath.Join(b.wsDir(), id)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Read(id, ReadRequest{}); err == nil || err.Error() != errUnknown.Error() {
		t.Errorf("moved file: %v", err)
	}
	if _, err := a.Read(id, ReadRequest{}); err == nil || err.Error() != errUnknown.Error() {
		t.Errorf("after the move: %v", err)
	}
}

func TestOutputBadIDsAndFiles(t *testing.T) {
	s, clock := testOutputStore(t, time.Hour, 0)
	good := mustPut(t, s, "x\n")
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("voltmcp-output/1 {}\nsecret"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{
		"", "../x", "mcpout_../../etc", "mcpout_../../../../etc/passwd", "/etc/passwd",
		"mcpout_" + strings.Repeat("a", 25), "mcpout_" + strings.Repeat("a", 27),
		"mcpout_" + strings.Repeat("A", 26), "MCPOUT_" + strings.Repeat("a", 26),
		"mcpout_" + strings.Repeat("a", 24) + "1a", "mcpout_" + strings.Repeat("a", 25) + "/",
		"mcpout_" + strings.Repeat("a", 25) + "\x00", good + "/..", "./" + good, good[:len(good)-1] + "é",
	} {
		if _, err := s.Read(id, ReadRequest{}); !errors.Is(err, ErrInvalidID) {
			t.Errorf("read(%q): %v, want invalid id", id, err)
		}
	}

	unknown := func(name string, id string) {
		t.Helper()
		if _, err := s.Read(id, ReadRequest{}); !errors.Is(err, ErrUnknown) {
			t.Errorf("%s: %v, want unknown", name, err)
		}
	}
	write := func(id, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(s.wsDir(), id), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	unknown("never stored", newOutputID())
	// A link under a valid name is not followed.
	link := newOutputID()
	if err := os.Symlink(secret, filepath.Join(s.wsDir(), link)); err != nil {
		t.Fatal(err)
	}
	unknown("symlink", link)
	hardlinked := newOutputID()
	if err := os.Link(filepath.Join(s.wsDir(), good), filepath.Join(s.wsDir(), hardlinked)); err != nil {
		t.Fatal(err)
	}
	mustRead(t, s, hardlinked, ReadRequest{}) // same file, same workspace: fine
	dir := newOutputID()
	if err := os.Mkdir(filepath.Join(s.wsDir(), dir), 0o700); err != nil {
		t.Fatal(err)
	}
	unknown("directory", dir)
	for name, content := range map[string]string{
		"empty":        "",
		"no header":    "just text\n",
		"bad json":     "voltmcp-output/1 {\n",
		"other format": `voltmcp-output/1 {"format":2,"workspace":"` + s.wsHash + `","bytes":0,"created":` + strconv.FormatInt(clock.now().UnixNano(), 10) + "}\n",
		"cut short":    `voltmcp-output/1 {"format":1,"workspace":"` + s.wsHash + `","bytes":10,"created":` + strconv.FormatInt(clock.now().UnixNano(), 10) + "}\nabc",
	} {
		id := newOutputID()
		write(id, content)
		unknown(name, id)
	}
	// A well-formed file written by hand reads: the checks above are
	// what made the others fail.
	id := newOutputID()
	write(id, `voltmcp-output/1 {"format":1,"workspace":"`+s.wsHash+`","bytes":3,"lines":1,"created":`+strconv.FormatInt(clock.now().UnixNano(), 10)+"}\nabc")
	if res := mustRead(t, s, id, ReadRequest{}); res.Content != "abc" {
		t.Errorf("hand-written file: %q", res.Content)
	}
}

func TestOutputNeverShowsHostPath(t *testing.T) {
	root := t.TempDir()
	clock := newFakeClock()
	s := NewStore(filepath.Join(root, "mcp", "outputs"), root, &StoreOptions{TTL: time.Hour, Now: clock.now})
	id := mustPut(t, s, "data at "+"somewhere\n")
	check := func(what, text string) {
		t.Helper()
		if strings.Contains(text, root) || strings.Contains(text, s.wsHash) {
			t.Errorf("%s shows a host path: %s", what, text)
		}
	}
	check("id", id)
	for _, req := range []ReadRequest{
		{}, {Offset: 1 << 40}, {StartLine: 99}, {StartLine: 3, EndLine: 2}, {Pattern: "("}, {Limit: 1}, {Offset: -1},
	} {
		res, err := s.Read(id, req)
		if err != nil {
			check("error", err.Error())
		}
		check("result", res.Content+res.Server+res.Tool)
	}
	for _, bad := range []string{"../x", root, newOutputID()} {
		_, err := s.Read(bad, ReadRequest{})
		check("error", err.Error())
	}
	clock.add(time.Hour)
	_, err := s.Read(id, ReadRequest{})
	check("expired error", err.Error())

	// A store that cannot write says why without where.
	blocker := filepath.Join(root, "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	broken := NewStore(filepath.Join(blocker, "outputs"), root, &StoreOptions{Now: clock.now})
	if _, err := broken.Put(Source{Server: "srv"}, "tool", []byte("x")); err == nil {
		t.Fatal("put under a file succeeded")
	} else {
		check("put error", err.Error())
		if !strings.Contains(err.Error(), "not a directory") {
			t.Errorf("put error %q does not say why", err)
		}
	}
	broken.Sweep() // nothing to do, no panic
}

func TestOutputConcurrentPutRead(t *testing.T) {
	s, _ := testOutputStore(t, 0, 64<<10)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 30 {
				data := strings.Repeat(strconv.Itoa(g)+"é", 500+i)
				id, err := s.Put(Source{Server: "srv"}, "tool", []byte(data))
				if err != nil {
					t.Error(err)
					return
				}
				res, err := s.Read(id, ReadRequest{Limit: 1 << 20})
				if err != nil && !errors.Is(err, ErrUnknown) { // evicted by another
					t.Error(err)
					return
				}
				if err == nil && res.Content != data {
					t.Error("read another output's data")
					return
				}
				if i%10 == 0 {
					s.Sweep()
				}
			}
		})
	}
	wg.Wait()
	if n := dirSize(t, s.wsDir()); n > 64<<10 {
		t.Errorf("store holds %d bytes, quota %d", n, 64<<10)
	}
}

func BenchmarkOutputPutRead(b *testing.B) {
	s, _ := testOutputStore(b, 0, 0)
	data := []byte(strings.Repeat("a line of tool output, with é and 😀 in it\n", (1<<20)/46))
	data = append(data, strings.Repeat("x", (1<<20)-len(data))...)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		id, err := s.Put(Source{Server: "srv"}, "tool", data)
		if err != nil {
			b.Fatal(err)
		}
		res, err := s.Read(id, ReadRequest{Limit: defaultReadLimit})
		if err != nil {
			b.Fatal(err)
		}
		if res.TotalBytes != int64(len(data)) || len(res.Content) == 0 {
			b.Fatal("short read")
		}
	}
}
