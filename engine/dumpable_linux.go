//go:build linux

package engine

import (
	"fmt"
	"syscall"
)

// hardenProcess makes the process non-dumpable and core-less, so that a
// child running as the same user cannot read the gateway's environment
// (/proc/<pid>/environ), memory (/proc/<pid>/mem) or file descriptors, nor
// ptrace it, and no core file holds its secrets. The children the engine
// starts are not affected: the kernel makes a process dumpable again when
// it executes a new program.
func hardenProcess() error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_DUMPABLE, 0, 0); errno != 0 {
		return fmt.Errorf("engine: prctl(PR_SET_DUMPABLE, 0): %w", errno)
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_CORE, &lim); err != nil {
		return fmt.Errorf("engine: getrlimit(RLIMIT_CORE): %w", err)
	}
	if lim.Cur != 0 {
		// The soft limit only: a server may raise its own again.
		lim.Cur = 0
		if err := syscall.Setrlimit(syscall.RLIMIT_CORE, &lim); err != nil {
			return fmt.Errorf("engine: setrlimit(RLIMIT_CORE, 0): %w", err)
		}
	}
	return nil
}
