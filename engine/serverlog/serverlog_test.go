package serverlog_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/engine/serverlog"
	"github.com/voltmcp/voltmcp/internal/testwait"
	"github.com/voltmcp/voltmcp/safefile"
)

// The child of TestRotationUnderTwoWriters writes its lines when these
// are set.
const (
	envChildLog = "SERVERLOG_TEST_LOG"
	envChildID  = "SERVERLOG_TEST_ID"
	envChildN   = "SERVERLOG_TEST_N"
	childMax    = 4 << 10
)

func TestMain(m *testing.M) {
	if path := os.Getenv(envChildLog); path != "" {
		n, _ := strconv.Atoi(os.Getenv(envChildN))
		id := os.Getenv(envChildID)
		w := serverlog.New(path, serverlog.Options{Server: "srv", Scrub: func(s string) string { return s }, MaxBytes: childMax})
		for i := range n {
			// One line a write, each written before the next, so that
			// the two processes interleave at every line.
			fmt.Fprintf(w, "%s %06d %s\n", id, i, strings.Repeat("x", 60))
			if err := w.Flush(); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// records reads the log at path, both generations.
func records(t *testing.T, path string) []serverlog.Record {
	t.Helper()
	var out []serverlog.Record
	if err := serverlog.Read(path, func(r serverlog.Record) error { out = append(out, r); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRotationUnderTwoWriters has two processes write one server's log
// at once, each line on its own, with a cap that rotates the log every
// few dozen lines: no line is torn or mixed with another, no file grows
// past the cap, and what the two generations hold is, for each writer,
// the unbroken run of its last lines: no rotation lost a file of lines
// that another had just started.
func TestRotationUnderTwoWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "logs", "srv.log")
	const n = 400
	var cmds []*exec.Cmd
	for _, id := range []string{"A", "B"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMain$")
		cmd.Env = append(os.Environ(), envChildLog+"="+path, envChildID+"="+id, envChildN+"="+strconv.Itoa(n))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{path, path + ".1"} {
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if info.Size() > childMax {
			t.Errorf("%s: %d bytes, over the cap of %d", filepath.Base(p), info.Size(), childMax)
		}
		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %#o", filepath.Base(p), info.Mode().Perm())
		}
	}
	last := map[string]int{"A": -1, "B": -1}
	for _, r := range records(t, path) {
		var id string
		var i int
		if _, err := fmt.Sscanf(r.Text, "%s %d", &id, &i); err != nil || r.Kind != serverlog.KindStderr || r.Server != "srv" || len(r.Text) != 2+6+1+60 {
			t.Fatalf("a torn or foreign record: %+v", r)
		}
		if last[id] >= 0 && i != last[id]+1 {
			t.Errorf("writer %s: line %d after %d: lines lost or out of order", id, i, last[id])
		}
		last[id] = i
	}
	// A writer that finished well before the other may have had all its
	// lines rotated away; one that has lines kept has its last.
	if last["A"] < 0 && last["B"] < 0 {
		t.Fatal("no line kept")
	}
	for id, i := range last {
		if i >= 0 && i != n-1 {
			t.Errorf("writer %s: the last line kept is %d, want %d", id, i, n-1)
		}
	}
	// The older generation is a file that was full when it was rotated,
	// not one a second rotation made of a file just started.
	if info, err := os.Stat(path + ".1"); err != nil || info.Size() < childMax/2 {
		t.Errorf("the older generation: %v, %d bytes of %d", err, info.Size(), childMax)
	}
}

// TestNonRegularLogNeverBlocks plants a FIFO, a symlink and a directory
// where a log or its lock file goes: writing never blocks and never
// follows the link, the writer says why it failed, and reading says so
// too.
func TestNonRegularLogNeverBlocks(t *testing.T) {
	for _, c := range []struct {
		name   string
		plant  func(path string) error
		target string // the file planted: the log or its lock
		want   string
	}{
		{"fifo", func(p string) error { return syscall.Mkfifo(p, 0o600) }, "", "fifo"},
		{"fifo lock", func(p string) error { return syscall.Mkfifo(p, 0o600) }, ".lock", "fifo"},
		{"symlink", func(p string) error { return os.Symlink(filepath.Join(filepath.Dir(p), "elsewhere"), p) }, "", "symlink"},
		{"directory", func(p string) error { return os.Mkdir(p, 0o700) }, "", "directory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "srv.log")
			if err := c.plant(path + c.target); err != nil {
				t.Fatal(err)
			}
			w := serverlog.New(path, serverlog.Options{Server: "srv", Scrub: func(s string) string { return s }})
			done := make(chan error, 1)
			go func() {
				fmt.Fprintln(w, "a line")
				w.Record(serverlog.KindError, "an error")
				done <- w.Flush()
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(testwait.Patience):
				t.Fatal("writing the log blocked")
			}
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "srv.log") {
				t.Errorf("error %v, want one that names the file and says %q", err, c.want)
			}
			if w.Err() == nil {
				t.Error("Err is nil after a failed write")
			}
			if _, err := os.Lstat(filepath.Join(dir, "elsewhere")); err == nil {
				t.Error("the log followed the link")
			}
			if c.target == "" {
				rerr := make(chan error, 1)
				go func() { rerr <- serverlog.Read(path, func(serverlog.Record) error { return nil }) }()
				select {
				case err := <-rerr:
					if err == nil {
						t.Error("reading a planted log succeeded")
					}
				case <-time.After(testwait.Patience):
					t.Fatal("reading the log blocked")
				}
			}
		})
	}
}

// TestLinesScrubbedCleanedAndCut writes lines as a server would (split
// across writes, with escapes, a secret in its encoded forms, a secret
// across the cut of a long line, no final newline): what the file holds
// is whole JSON records, without the secret in any form, cleaned, cut
// at MaxLineBytes, in a private file of a private directory.
func TestLinesScrubbedCleanedAndCut(t *testing.T) {
	const secret = "sk-CANARY-serverlog-0123456789"
	encoded := []string{secret, "c2stQ0FOQVJZLXNlcnZlcmxvZy0wMTIzNDU2Nzg5", "736b2d43414e4152592d7365727665726c6f672d30313233343536373839"}
	scrub := func(s string) string {
		for _, v := range encoded {
			s = strings.ReplaceAll(s, v, "[redacted]")
		}
		return s
	}
	path := filepath.Join(t.TempDir(), "agent", "mcp", "logs", "srv.log")
	w := serverlog.New(path, serverlog.Options{Server: "srv", Scrub: scrub})
	across := strings.Repeat("a", serverlog.MaxLineBytes-10) + secret + strings.Repeat("b", 100)
	for _, part := range []string{
		"plain one\n", "split ", "over writes\n",
		"token=" + secret + " b64=" + encoded[1] + " hex=" + encoded[2] + "\n",
		"\x1b[31mred\x1b[0m \x1b]8;;http://evil\x07link\x1b]8;;\x07 \x00nul\r\n",
		across + "\n",
		strings.Repeat("z", 200<<10) + "\n",
		"no newline yet",
	} {
		fmt.Fprint(w, part)
	}
	w.Record(serverlog.KindError, "connect: "+secret+" refused")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range encoded {
		if strings.Contains(string(raw), v) || strings.Contains(string(raw), secret[:20]) {
			t.Errorf("the secret is in the log: %q", v)
		}
	}
	if strings.Contains(string(raw), "no newline yet") {
		t.Error("a line without its newline was written")
	}
	for _, p := range []string{path, filepath.Dir(path)} {
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		want := os.FileMode(0o600)
		if info.IsDir() {
			want = 0o700
		}
		if info.Mode().Perm() != want {
			t.Errorf("%s: mode %#o, want %#o", p, info.Mode().Perm(), want)
		}
	}
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	sc.Buffer(nil, 1<<20)
	var texts []string
	for sc.Scan() {
		var r serverlog.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("not a record: %q", sc.Text())
		}
		if r.Time.IsZero() || r.Server != "srv" {
			t.Errorf("record %+v", r)
		}
		if len(r.Text) > serverlog.MaxLineBytes+len("…") {
			t.Errorf("a record of %d bytes", len(r.Text))
		}
		texts = append(texts, r.Kind+": "+r.Text)
	}
	want := []string{"stderr: plain one", "stderr: split over writes", "stderr: token=[redacted] b64=[redacted] hex=[redacted]", "stderr: red link nul"}
	for i, w := range want {
		if i >= len(texts) || texts[i] != w {
			t.Fatalf("records %q, want them to start %q", texts, want)
		}
	}
	if len(texts) != 7 || !strings.HasSuffix(texts[4], "…") || !strings.HasSuffix(texts[5], "…") || texts[6] != "error: connect: [redacted] refused" {
		t.Errorf("records %q", texts)
	}
}

// TestFollowAcrossRotation follows a log that is rotated every few
// lines: the follower sees every line once, in order.
func TestFollowAcrossRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "srv.log")
	w := serverlog.New(path, serverlog.Options{Server: "srv", Scrub: func(s string) string { return s }, MaxBytes: 512})
	fmt.Fprintln(w, "before 0")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(testwait.Context(t))
	var mu sync.Mutex
	var seen []string
	done := make(chan error, 1)
	go func() {
		done <- serverlog.Follow(ctx, path, func(r serverlog.Record) error {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, r.Text)
			return nil
		})
	}()
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(seen) }
	testwait.For(t, "the first line", func() bool { return count() == 1 })
	const n = 12
	for i := range n {
		fmt.Fprintf(w, "line %02d %s\n", i, strings.Repeat("x", 100))
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		testwait.For(t, "line "+strconv.Itoa(i), func() bool { return count() >= i+2 })
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + ".1"); err != nil {
		t.Fatalf("the log never rotated: %v", err)
	}
	if len(seen) != n+1 || seen[0] != "before 0" {
		t.Fatalf("seen %d lines: %q", len(seen), seen)
	}
	for i := range n {
		if !strings.HasPrefix(seen[i+1], fmt.Sprintf("line %02d ", i)) {
			t.Errorf("line %d is %q", i, seen[i+1])
		}
	}
}

// TestRemove deletes a log, its older generation and its lock.
func TestRemove(t *testing.T) {
	dir := t.TempDir()
	path := serverlog.Path(dir, "ident")
	if found, err := serverlog.Remove(path); found || err != nil {
		t.Fatalf("Remove of no log: %v %v", found, err)
	}
	for _, p := range []string{path, path + ".1", path + ".lock"} {
		if err := safefile.WriteFile(p, []byte("{}\n"), nil); err != nil {
			t.Fatal(err)
		}
	}
	if found, err := serverlog.Remove(path); !found || err != nil {
		t.Fatalf("Remove: %v %v", found, err)
	}
	entries, _ := os.ReadDir(serverlog.Dir(dir))
	if len(entries) != 0 {
		t.Errorf("left %v", entries)
	}
}
