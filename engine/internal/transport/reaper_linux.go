//go:build linux

package transport

import (
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// reaperEnv, set in the environment of the engine's reaper (and only
// there), holds the run prefix of the engine whose servers it stops.
const reaperEnv = "VOLTMCP_REAPER_FOR"

// A process started with reaperEnv naming its parent's run is a reaper,
// whatever program links this package: it runs the reaper and exits
// before main. With any other environment this does nothing.
func init() {
	if v, ok := os.LookupEnv(reaperEnv); ok && reaperOf(v) {
		os.Exit(runReaper(v))
	}
}

// reaperOf reports whether this process was started as the reaper of
// run prefix: by the gateway the prefix names.
func reaperOf(prefix string) bool {
	pid, _, ok := strings.Cut(prefix, ".")
	n, err := strconv.Atoi(pid)
	return ok && err == nil && n == os.Getppid()
}

// runReaper is the reaper's life. It outlives its gateway: when the
// gateway's end of its stdin closes, because the gateway stopped or was
// killed (even with SIGKILL, which no process can catch), it kills every
// process whose run mark is one of the gateway's, and exits. The
// gateway's own servers die with it (their parent-death signal); what
// they started does not, in another session or not, and that is what a
// reaper is for. It first kills what gateways that died before left
// behind, should their reapers have died too.
func runReaper(prefix string) int {
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE, syscall.SIGQUIT)
	sweepDeadRuns()
	_, _ = io.Copy(io.Discard, os.Stdin)
	killMarked(func(m string) bool { return strings.HasPrefix(m, prefix+".") })
	return 0
}

// reaper is the gateway's end of its reaper process: the write end of
// the reaper's stdin, which only the gateway holds.
type reaper struct {
	mu     sync.Mutex
	closed bool
	cmd    *exec.Cmd
	w      *os.File
}

// start starts the reaper of run prefix, once. A reaper that cannot
// start leaves the gateway without one: what a killed gateway leaves
// behind is then stopped by the next gateway's reaper (sweepDeadRuns).
func (r *reaper) start(prefix string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.cmd != nil {
		return
	}
	pr, pw, err := os.Pipe() // close-on-exec: no server inherits the write end
	if err != nil {
		return
	}
	// This very program: whatever links this package runs the reaper (see
	// init), even if its file was replaced since it started.
	cmd := &exec.Cmd{Path: "/proc/self/exe", Args: []string{"voltmcp-reaper"},
		Env: []string{reaperEnv + "=" + prefix}, Stdin: pr, Dir: "/",
		// A group of its own: a signal to the gateway's group (a
		// terminal's Ctrl-C, an agent stopping its tools) does not reach
		// it, and it has no parent-death signal.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true}}
	err = cmd.Start()
	pr.Close()
	if err != nil {
		pw.Close()
		return
	}
	r.cmd, r.w = cmd, pw
}

// stop ends the reaper: it finds nothing left to kill (the gateway has
// stopped its servers) and exits.
func (r *reaper) stop() {
	r.mu.Lock()
	r.closed = true
	cmd, w := r.cmd, r.w
	r.cmd, r.w = nil, nil
	r.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = w.Close()
	done := make(chan struct{})
	go func() {
		waitExit(cmd.Process.Pid)
		_ = cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}
