//go:build unix

package engine

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

const (
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
)

// setProcessGroup makes the child the leader of a new process group, so
// the group can be signalled as one.
func setProcessGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	setParentDeathSignal(cmd.SysProcAttr)
}

// signalGroup sends sig to every process in the group led by pid.
func signalGroup(pid int, sig syscall.Signal) error {
	err := syscall.Kill(-pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil // the group is already empty
	}
	return err
}

func isSignalExit(err error) bool {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok {
			return ws.Signaled()
		}
	}
	return false
}

func isExecutable(path string) bool {
	info, err := os.Stat(path)
	return err == nil && !info.IsDir() && info.Mode().Perm()&0o111 != 0
}

// killTree kills what the stdio server pid started, once it exited:
// its process group, every process that carries its run mark (on
// Linux: in any session or group, orphaned or not) and what was below
// it in tree, a snapshot taken while it ran.
func killTree(pid int, mark string, tree []procEntry) {
	_ = signalGroup(pid, sigKill)
	killEntries(tree)
	killRun(mark)
}
