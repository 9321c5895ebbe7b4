//go:build unix && !linux

package engine

import "syscall"

// setParentDeathSignal has no equivalent outside Linux.
func setParentDeathSignal(*syscall.SysProcAttr) {}
