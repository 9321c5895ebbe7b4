//go:build linux

package pollio

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"
)

// stallChildEnv makes the test binary the server of
// TestStopTheWorldStall, reading stdin as its value says: "blocking" or
// "polled".
const stallChildEnv = "POLLIO_TEST_STALL_CHILD"

func TestMain(m *testing.M) {
	if how := os.Getenv(stallChildEnv); how != "" {
		stallChild(how == "polled")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// stallChild echoes each line of stdin, the way an MCP server on stdio
// works: one goroutine reads, another handles each message, allocating,
// so that garbage collections start while the reader enters its read.
func stallChild(polled bool) {
	var in io.Reader = os.Stdin
	if polled {
		r, restore := Reader(os.Stdin, os.Stdout)
		defer restore()
		in = r
	}
	lines := make(chan string)
	go func() {
		r := bufio.NewReader(in)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				close(lines)
				return
			}
			lines <- line
		}
	}()
	var keep [][]byte
	for line := range lines {
		for range 20 {
			keep = append(keep, make([]byte, 32<<10))
			if len(keep) > 64 {
				keep = keep[:0]
			}
		}
		if _, err := io.WriteString(os.Stdout, line); err != nil {
			return
		}
	}
}

// stallStats is what one ping-pong run saw.
type stallStats struct {
	trips  int
	worst  time.Duration
	stalls int // round trips over stallThreshold
}

const stallThreshold = 500 * time.Millisecond

// pingPong starts a stall child and sends it lines, one at a time, until
// d has passed.
func pingPong(how string, d time.Duration) (stallStats, error) {
	var st stallStats
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), stallChildEnv+"="+how)
	w, err := cmd.StdinPipe()
	if err != nil {
		return st, err
	}
	r, err := cmd.StdoutPipe()
	if err != nil {
		return st, err
	}
	if err := cmd.Start(); err != nil {
		return st, err
	}
	defer cmd.Wait()
	defer w.Close()
	br := bufio.NewReader(r)
	for end := time.Now().Add(d); time.Now().Before(end); st.trips++ {
		start := time.Now()
		if _, err := fmt.Fprintf(w, "ping %d\n", st.trips); err != nil {
			return st, err
		}
		if _, err := br.ReadString('\n'); err != nil {
			return st, err
		}
		took := time.Since(start)
		st.worst = max(st.worst, took)
		if took > stallThreshold {
			st.stalls++
		}
	}
	return st, nil
}

// TestStopTheWorldStall reproduces the runtime stall package pollio
// avoids (docs/benchmarks.md): two servers, one reading a blocking
// stdin, then one reading through Reader, each answer lines for
// VOLTMCP_STALL_DURATION (say 200s; the test is skipped without it). It
// fails if the server reading through the poller ever takes over 500 ms
// to answer, and logs how often the blocking one did: with Go 1.26, on
// the 2-core VM of docs/benchmarks.md, three times in 200 s, the worst
// for a minute.
func TestStopTheWorldStall(t *testing.T) {
	d, err := time.ParseDuration(os.Getenv("VOLTMCP_STALL_DURATION"))
	if err != nil {
		t.Skip("set VOLTMCP_STALL_DURATION (a Go duration such as 150s) to run this experiment")
	}
	hows := []string{"blocking", "polled"}
	stats := make([]stallStats, len(hows))
	errs := make([]error, len(hows))
	// One after the other, each server alone with its client.
	for i, how := range hows {
		stats[i], errs[i] = pingPong(how, d)
	}
	for i, how := range hows {
		if errs[i] != nil {
			t.Fatalf("%s stdin: %v", how, errs[i])
		}
		t.Logf("%s stdin: %d round trips, worst %v, %d over %v", how, stats[i].trips, stats[i].worst, stats[i].stalls, stallThreshold)
	}
	if polled := stats[1]; polled.stalls > 0 {
		t.Errorf("the server reading through the poller stalled %d times (worst %v)", polled.stalls, polled.worst)
	}
}
