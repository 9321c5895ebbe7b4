package safefile_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/safefile"
)

func TestReadFileFollowsLinksUnlessNoFollow(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.json")
	if err := os.WriteFile(real, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(real, link); err != nil {
		t.Skip(err)
	}
	if b, err := safefile.ReadFile(link, nil); err != nil || string(b) != "{}" {
		t.Fatalf("ReadFile(link) = %q, %v", b, err)
	}
	_, err := safefile.ReadFile(link, &safefile.ReadOptions{NoFollow: true})
	var nr *safefile.NotRegularError
	if !errors.As(err, &nr) || nr.Kind != "symlink" {
		t.Fatalf("ReadFile(link, NoFollow) = %v, want not a regular file (symlink)", err)
	}
	if _, err := safefile.ReadFile(filepath.Join(dir, "missing"), nil); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := safefile.ReadFile(empty, nil); err != nil || b == nil || len(b) != 0 {
		t.Fatalf("empty file = %v, %v; want a non-nil empty slice", b, err)
	}
}

func TestReadFileCapsAndPrivate(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, make([]byte, 100), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := safefile.ReadFile(p, &safefile.ReadOptions{MaxSize: 99})
	var tl *safefile.TooLargeError
	if !errors.As(err, &tl) || tl.Size != 100 || tl.Limit != 99 || !errors.Is(err, safefile.ErrTooLarge) {
		t.Fatalf("over the cap: %v", err)
	}
	if b, err := safefile.ReadFile(p, &safefile.ReadOptions{MaxSize: 100}); err != nil || len(b) != 100 {
		t.Fatalf("at the cap: %d bytes, %v", len(b), err)
	}
	if runtime.GOOS != "windows" {
		if _, err := safefile.ReadFile(p, &safefile.ReadOptions{Private: true}); !errors.Is(err, safefile.ErrNotPrivate) {
			t.Fatalf("0644 file read as private: %v", err)
		}
	}
}

func TestWriteFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	p := filepath.Join(dir, "f.json")
	if err := safefile.WriteFile(p, []byte("one"), nil); err != nil {
		t.Fatal(err)
	}
	if err := safefile.WriteFile(p, []byte("two"), &safefile.WriteOptions{Mode: 0o640}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	info, _ := os.Stat(p)
	if err != nil || string(b) != "two" {
		t.Fatalf("read back %q, %v", b, err)
	}
	if runtime.GOOS != "windows" && info.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v", info.Mode())
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("left-over files: %v", ents)
	}
}

// TestUpdateAcrossProcesses starts processes that each add their own
// lines to one file at once, and checks that no addition was lost: the
// read-modify-write of each runs inside the lock, beside the file or,
// with WriteOptions.LockFile, in another directory, which then leaves
// nothing beside the file.
func TestUpdateAcrossProcesses(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no flock")
	}
	if p := os.Getenv("SAFEFILE_UPDATE_FILE"); p != "" {
		return // the child's work is done by TestMain
	}
	t.Run("beside", func(t *testing.T) { updateAcrossProcesses(t, "") })
	t.Run("elsewhere", func(t *testing.T) {
		updateAcrossProcesses(t, filepath.Join(t.TempDir(), "locks", "shared.lock"))
	})
}

func updateAcrossProcesses(t *testing.T, lockFile string) {
	dir := t.TempDir()
	p := filepath.Join(dir, "shared.txt")
	const procs, each = 6, 20
	var cmds []*exec.Cmd
	for i := range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestUpdateAcrossProcesses$")
		cmd.Env = append(os.Environ(), "SAFEFILE_UPDATE_FILE="+p, "SAFEFILE_UPDATE_ID="+strconv.Itoa(i),
			"SAFEFILE_UPDATE_N="+strconv.Itoa(each), "SAFEFILE_UPDATE_LOCK="+lockFile)
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
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(b))
	if len(lines) != procs*each {
		t.Fatalf("%d lines, want %d: updates were lost", len(lines), procs*each)
	}
	if lockFile == "" {
		return
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("beside the file: %v, want only the file", ents)
	}
	if _, err := os.Stat(lockFile); err != nil {
		t.Errorf("the lock file: %v", err)
	}
}

func TestMain(m *testing.M) {
	if p := os.Getenv("SAFEFILE_UPDATE_FILE"); p != "" {
		id := os.Getenv("SAFEFILE_UPDATE_ID")
		n, _ := strconv.Atoi(os.Getenv("SAFEFILE_UPDATE_N"))
		for i := range n {
			opts := &safefile.WriteOptions{LockFile: os.Getenv("SAFEFILE_UPDATE_LOCK")}
			err := safefile.Update(context.Background(), p, opts, func(old []byte) ([]byte, error) {
				// Widen the window between read and write, as a slow
				// parse would.
				time.Sleep(time.Millisecond)
				return fmt.Appendf(old, "%s-%d\n", id, i), nil
			})
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestUpdateLeavesFileOnError(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if err := safefile.Update(context.Background(), p, nil, func([]byte) ([]byte, error) { return []byte("x"), boom }); err != boom {
		t.Fatalf("err = %v", err)
	}
	if err := safefile.Update(context.Background(), p, nil, func(old []byte) ([]byte, error) {
		if string(old) != "keep" {
			t.Errorf("old = %q", old)
		}
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "keep" {
		t.Fatalf("file = %q", b)
	}
	var sawNil bool
	missing := filepath.Join(t.TempDir(), "new")
	if err := safefile.Update(context.Background(), missing, nil, func(old []byte) ([]byte, error) {
		sawNil = old == nil
		return []byte("new"), nil
	}); err != nil || !sawNil {
		t.Fatalf("missing file: old nil %v, err %v", sawNil, err)
	}
}

func TestLockEndsWithContext(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no flock")
	}
	p := filepath.Join(t.TempDir(), "f")
	unlock, err := safefile.Lock(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// flock locks are per open file description: a second open in this
	// process waits like another process would.
	if _, err := safefile.Lock(ctx, p); !errors.Is(err, context.Canceled) {
		t.Fatalf("second Lock = %v, want context.Canceled", err)
	}
	// LockAt names the lock file itself: the same one is the same lock.
	if _, err := safefile.LockAt(ctx, p+".lock"); !errors.Is(err, context.Canceled) {
		t.Fatalf("LockAt of the same lock file = %v, want context.Canceled", err)
	}
}

func TestPathless(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
		is   error
	}{
		{&safefile.NotRegularError{Path: "/a/b", Kind: "fifo"}, "not a regular file (fifo)", safefile.ErrNotRegular},
		{&safefile.TooLargeError{Path: "/a/b", Size: 10, Limit: 5}, "10 bytes; the limit is 5", safefile.ErrTooLarge},
		{&fs.PathError{Op: "open", Path: "/a/b", Err: fs.ErrPermission}, fs.ErrPermission.Error(), fs.ErrPermission},
	} {
		got := safefile.Pathless(fmt.Errorf("wrapped: %w", c.err))
		if got.Error() != c.want || !errors.Is(got, c.is) {
			t.Errorf("Pathless(%v) = %v", c.err, got)
		}
	}
}
