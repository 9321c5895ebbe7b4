//go:build linux

package transport

import (
	"os"
	"syscall"
	"unsafe"
)

const (
	sysPidfdOpen = 434 // pidfd_open(2), the same number on every architecture
	pPidfd       = 3   // P_PIDFD, waitid's id type for a process descriptor
)

// waitExit waits in Go's poller until the process pid has exited, and
// leaves it to be reaped: the (*exec.Cmd).Wait that follows then returns
// at once. Wait alone holds a thread in waitid for the child's whole
// life, and with Go 1.26 and 1.27 a goroutine that enters a blocking system call
// just as the garbage collector stops the world can hold the stop, and
// every goroutine of the gateway with it, until the call returns (see
// package pollio). waitExit reports false, having waited for nothing,
// when the kernel cannot open a process descriptor (Linux before 5.3) or
// the poller cannot wait on one; Wait then waits as it always did.
func waitExit(pid int) bool {
	pidfd, _, errno := syscall.RawSyscall(sysPidfdOpen, uintptr(pid), syscall.O_NONBLOCK, 0)
	if errno != 0 {
		return false
	}
	// NewFile sees the non-blocking mode and registers the descriptor
	// with the poller, which reports it readable once the process exits.
	f := os.NewFile(pidfd, "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	err = rc.Read(func(fd uintptr) bool {
		// Whether the process has exited, without reaping it.
		var info [128]byte // siginfo_t
		_, _, e := syscall.RawSyscall6(syscall.SYS_WAITID, pPidfd, fd, uintptr(unsafe.Pointer(&info[0])),
			syscall.WEXITED|syscall.WNOHANG|syscall.WNOWAIT, 0, 0)
		if e != 0 {
			return true // Wait reports what is wrong
		}
		return siginfoPid(&info) != 0 // 0: still running, wait
	})
	return err == nil
}

// siginfoPid is the si_pid field of a siginfo_t: after three 32-bit
// fields, at the alignment of a pointer.
func siginfoPid(info *[128]byte) int32 {
	const off = (12 + unsafe.Sizeof(uintptr(0)) - 1) &^ (unsafe.Sizeof(uintptr(0)) - 1)
	return *(*int32)(unsafe.Pointer(&info[off]))
}
