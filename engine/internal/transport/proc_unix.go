//go:build unix

package transport

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
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

// describeExit says how a process ended: "exit status 3", "signal
// SIGSEGV".
func describeExit(ps *os.ProcessState) string {
	if ps == nil {
		return "unknown status"
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "signal " + signalName(ws.Signal())
	}
	return "exit status " + strconv.Itoa(ps.ExitCode())
}

// signalName is a signal's name as kill(1) spells it.
func signalName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGABRT:
		return "SIGABRT"
	case syscall.SIGBUS:
		return "SIGBUS"
	case syscall.SIGFPE:
		return "SIGFPE"
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGILL:
		return "SIGILL"
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGPIPE:
		return "SIGPIPE"
	case syscall.SIGQUIT:
		return "SIGQUIT"
	case syscall.SIGSEGV:
		return "SIGSEGV"
	case syscall.SIGSYS:
		return "SIGSYS"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGTRAP:
		return "SIGTRAP"
	case syscall.SIGUSR1:
		return "SIGUSR1"
	case syscall.SIGUSR2:
		return "SIGUSR2"
	case syscall.SIGXCPU:
		return "SIGXCPU"
	case syscall.SIGXFSZ:
		return "SIGXFSZ"
	}
	return strconv.Itoa(int(sig)) + " (" + sig.String() + ")"
}
