package audit_test

import (
	"bufio"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/engine/audit"
)

// startChild starts this test binary as a child that works on the log
// at path, chosen by env, and waits for it to say it is ready.
func startChild(t *testing.T, env, path string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), env+"="+path, "GORACE=atexit_sleep_ms=0")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make([]byte, len(childReady))
	if _, err := io.ReadFull(bufio.NewReader(out), ready); err != nil || string(ready) != childReady {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("the child did not start: %q %v", ready, err)
	}
	return cmd
}

// TestKill9 runs this test binary as a child that appends in a tight loop,
// kills it with SIGKILL at a random moment, and checks the log after each
// kill: every file reads, the chain verifies across whatever the kill tore,
// and a new writer goes on from there.
func TestKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	t.Parallel()
	path := audit.DefaultPath(t.TempDir())
	var last int64
	torn := 0
	for round := range 8 {
		cmd := startChild(t, envChild, path)
		time.Sleep(time.Duration(rand.IntN(150)+10) * time.Millisecond)
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()

		rep, err := audit.Verify(path)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if !rep.Intact {
			t.Fatalf("round %d: chain broken: %v, gaps %v", round, rep.Broken, rep.Gaps)
		}
		if rep.LastSeq < last || (rep.Records > 0 && rep.FirstSeq != 1) || rep.Records != rep.LastSeq {
			t.Fatalf("round %d: seqs %d..%d, %d records, after %d before", round, rep.FirstSeq, rep.LastSeq, rep.Records, last)
		}
		last = rep.LastSeq
		torn += rep.SkippedLines
		for _, p := range rep.Skipped {
			if p.Kind != audit.ProblemTorn && p.Kind != audit.ProblemCorrupt {
				t.Errorf("round %d: unexpected problem %v", round, p)
			}
		}
		recs, _, err := audit.Read(path, audit.Query{})
		if err != nil || int64(len(recs)) != rep.Records {
			t.Fatalf("round %d: Read gave %d records, Verify %d: %v", round, len(recs), rep.Records, err)
		}
		t.Logf("round %d: %d records in %d files, %d lines skipped", round, rep.Records, len(rep.Files), rep.SkippedLines)
	}

	if last == 0 {
		t.Fatal("the children appended nothing")
	}
	// A writer in this process goes on after the last kill.
	l, err := audit.Open(path, childOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after the last kill, Open reported %v", l.Problems())
	appendN(t, l, 0, 3)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := audit.Verify(path)
	if err != nil || !rep.Intact || rep.LastSeq != last+3 {
		t.Fatalf("after reopening: intact %v, last seq %d, want %d: %v", rep.Intact, rep.LastSeq, last+3, err)
	}
	t.Logf("%d torn or corrupt lines over 8 kills", torn)
}
