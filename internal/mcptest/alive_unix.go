//go:build unix

package mcptest

import (
	"bytes"
	"errors"
	"os"
	"runtime"
	"strconv"
	"syscall"
)

// Alive reports whether the process pid exists and, on Linux, is not a
// zombie. A killed process whose parent has not reaped it yet is a zombie;
// counting it as gone matters when the reaper is a container's init that
// never reaps.
func Alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	if runtime.GOOS != "linux" {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	// The state follows the command name, which is in parentheses and may
	// itself hold parentheses: "pid (comm) S …".
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return true
	}
	state := stat[i+2]
	return state != 'Z' && state != 'X'
}
