//go:build linux

package engine

import "syscall"

// setParentDeathSignal asks the kernel to kill the child if voltmcp dies
// without stopping it, so a crash leaves no server running.
func setParentDeathSignal(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }
