//go:build unix && !linux

package transport

import (
	"os"
	"strconv"
	"syscall"
)

// setParentDeathSignal has no equivalent outside Linux.
func setParentDeathSignal(*syscall.SysProcAttr) {}

// procEntry is a process of a tree; outside Linux, no tree is known.
type procEntry struct{}

// descendants knows no tree outside Linux: the process group is all a
// stop reaches there.
func descendants(int) []procEntry { return nil }

func killEntries([]procEntry) {}

// killRun finds no marked process outside Linux (no /proc).
func killRun(string) {}

// selfID is this process's PID.
func selfID() string { return strconv.Itoa(os.Getpid()) + ".0" }

// reaper has no work outside Linux: no process is found by its run mark
// there.
type reaper struct{}

func (*reaper) start(string) {}
func (*reaper) stop()        {}
