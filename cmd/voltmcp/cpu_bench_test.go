package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// processCPU returns the CPU time the threads of process pid have run,
// from Linux's per-thread scheduler statistics, and false where these
// cannot be read. Threads that ended are not counted: the Go runtime
// keeps its threads.
func processCPU(pid int) (time.Duration, bool) {
	tasks, err := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "schedstat"))
	if err != nil || len(tasks) == 0 {
		return 0, false
	}
	var total time.Duration
	for _, task := range tasks {
		data, err := os.ReadFile(task)
		if err != nil {
			continue // the thread ended meanwhile
		}
		fields := strings.Fields(string(data))
		if len(fields) == 0 {
			return 0, false
		}
		ns, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, false
		}
		total += time.Duration(ns)
	}
	return total, true
}
