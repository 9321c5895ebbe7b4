//go:build linux

package transport

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// setParentDeathSignal asks the kernel to kill the child if voltmcp dies
// without stopping it, so a crash leaves no server running. What the
// child starts in turn is the reaper's (reaper_linux.go).
func setParentDeathSignal(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }

// procEntry is a process as /proc shows it: its parent, and its start
// time, which tells it from a later process given the same PID.
type procEntry struct {
	pid, ppid int
	start     uint64
}

// readStat reads a live process's parent and start time from
// /proc/<pid>/stat; ok is false for a process gone or a zombie.
func readStat(pid int) (e procEntry, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return e, false
	}
	// "pid (comm) state ppid …": comm may hold anything, parentheses too.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return e, false
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 of proc_pid_stat(5), the state; f[1] the parent;
	// f[19] field 22, the start time.
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return e, false
	}
	e.pid = pid
	e.ppid, _ = strconv.Atoi(f[1])
	e.start, err = strconv.ParseUint(f[19], 10, 64)
	return e, err == nil
}

// pids lists the processes in /proc.
func pids() []int {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	out := make([]int, 0, len(names))
	for _, n := range names {
		if pid, err := strconv.Atoi(n); err == nil && pid > 0 {
			out = append(out, pid)
		}
	}
	return out
}

// descendants returns the live processes below pid, by parent.
func descendants(pid int) []procEntry {
	kids := map[int][]procEntry{}
	for _, p := range pids() {
		if e, ok := readStat(p); ok {
			kids[e.ppid] = append(kids[e.ppid], e)
		}
	}
	var out []procEntry
	queue := []int{pid}
	for len(queue) > 0 && len(out) < 1<<16 {
		for _, e := range kids[queue[0]] {
			out = append(out, e)
			queue = append(queue, e.pid)
		}
		queue = queue[1:]
	}
	return out
}

// killEntries kills each process of es still running as the process it
// was (the same start time), not another given its PID since.
func killEntries(es []procEntry) {
	for _, e := range es {
		if now, ok := readStat(e.pid); ok && now.start == e.start {
			_ = syscall.Kill(e.pid, syscall.SIGKILL)
		}
	}
}

// runMark returns the run mark in process pid's environment, or "" (no
// mark, gone, or another user's).
func runMark(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return ""
	}
	key := []byte(RunEnv + "=")
	for len(b) > 0 {
		entry := b
		if i := bytes.IndexByte(b, 0); i >= 0 {
			entry, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if v, ok := bytes.CutPrefix(entry, key); ok {
			return string(v)
		}
	}
	return ""
}

// killMarked kills every process, other than this one, whose run mark
// match accepts, and goes on until a look finds none (one may be
// forking as it is killed), at most killRounds times. It reports how
// many it signalled.
func killMarked(match func(mark string) bool) int {
	const killRounds = 20
	self, n := os.Getpid(), 0
	for range killRounds {
		found := 0
		for _, pid := range pids() {
			if pid == self {
				continue
			}
			if m := runMark(pid); m != "" && match(m) {
				if _, live := readStat(pid); live {
					_ = syscall.Kill(pid, syscall.SIGKILL)
					found++
				}
			}
		}
		if found == 0 {
			break
		}
		n += found
		time.Sleep(5 * time.Millisecond) // let the killed go
	}
	return n
}

// killRun kills every process that carries run mark mark.
func killRun(mark string) {
	if mark != "" {
		killMarked(func(m string) bool { return m == mark })
	}
}

// selfID is this process's PID and start time, "<pid>.<start>": with the
// start time, a later process given the same PID is not mistaken for it.
func selfID() string {
	pid := os.Getpid()
	e, _ := readStat(pid)
	return strconv.Itoa(pid) + "." + strconv.FormatUint(e.start, 10)
}

// gatewayGone reports whether the gateway a run mark names
// ("<pid>.<start>.…") is no longer running.
func gatewayGone(mark string) bool {
	f := strings.SplitN(mark, ".", 3)
	if len(f) < 3 {
		return false // not a mark of ours: leave it
	}
	pid, err1 := strconv.Atoi(f[0])
	start, err2 := strconv.ParseUint(f[1], 10, 64)
	if err1 != nil || err2 != nil || pid <= 0 {
		return false
	}
	e, ok := readStat(pid)
	return !ok || e.start != start
}

// sweepDeadRuns kills what gateways that died without stopping their
// servers (kill -9, a crash) left running: every process whose run mark
// names a gateway no longer running.
func sweepDeadRuns() int { return killMarked(gatewayGone) }
