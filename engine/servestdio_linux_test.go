package engine

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/voltmcp/voltmcp/internal/testwait"
)

// TestServeStdioReadsThroughThePoller gives ServeStdio the ends of two
// pipes in blocking mode, as an agent gives a server its stdin and
// stdout. While it waits for a message, stdin's open file must be in
// non-blocking mode, which is how its reads wait in Go's poller rather
// than in the kernel (package pollio). Its context ends while the peer
// writes nothing: ServeStdio must return promptly, leave no read behind
// (a read blocked in the kernel outlives the close of its descriptor and
// would take the next byte), and put the blocking mode back.
func TestServeStdioReadsThroughThePoller(t *testing.T) {
	t.Parallel()
	e := start(t, workspace(t, map[string]server{}, nil))
	pipe := func() (r, w *os.File) {
		var fds [2]int
		if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		return os.NewFile(uintptr(fds[0]), "r"), os.NewFile(uintptr(fds[1]), "w")
	}
	inR, inW := pipe()
	outR, outW := pipe()
	defer inW.Close()
	defer outR.Close()
	// A second descriptor of stdin's open file, whose mode is the one
	// ServeStdio changes and must put back.
	probe, err := syscall.Dup(int(inR.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(probe)
	nonblocking := func() bool {
		flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(probe), syscall.F_GETFL, 0)
		if errno != 0 {
			t.Fatal(errno)
		}
		return flags&syscall.O_NONBLOCK != 0
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.ServeStdio(ctx, inR, outW) }()
	for deadline := testwait.Deadline(t); !nonblocking(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			cancel()
			inW.Close() // lets a read blocked in the kernel end
			<-done
			t.Fatal("stdin stayed in blocking mode while ServeStdio read it: its reads block in the kernel, not in the poller")
		}
	}
	time.Sleep(50 * time.Millisecond) // let it reach its read; not a bound
	cancel()
	select {
	case <-done:
	case <-time.After(testwait.Patience):
		inW.Close()
		<-done
		t.Fatal("ServeStdio still read 10s after its context ended")
	}
	if nonblocking() {
		t.Error("stdin's open file is still in non-blocking mode after ServeStdio returned")
	}
	if _, err := inW.Write([]byte{'\n'}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if n, err := unreadBytes(probe); err != nil || n != 1 {
		t.Errorf("a byte written after ServeStdio returned: %d left unread (%v); want 1, no read left behind", n, err)
	}
}

// unreadBytes is how many bytes wait in the pipe fd reads (FIONREAD).
func unreadBytes(fd int) (int, error) {
	var n int32
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TIOCINQ, uintptr(unsafe.Pointer(&n))); errno != 0 {
		return 0, errno
	}
	return int(n), nil
}
