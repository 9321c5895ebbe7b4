//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package output

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/internal/testwait"
)

// TestOutputFIFORefused plants a FIFO with no writer under a valid output
// id: a blocking open of it never returns, and read_cache with it. The
// read answers unknown at once, and the store keeps serving.
func TestOutputFIFORefused(t *testing.T) {
	s, _ := testOutputStore(t, time.Hour, 0)
	good := mustPut(t, s, "x\n")
	fifo := newOutputID()
	if err := syscall.Mkfifo(filepath.Join(s.wsDir(), fifo), 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.Read(fifo, ReadRequest{})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrUnknown) {
			t.Fatalf("read of a FIFO: %v, want unknown", err)
		}
	case <-time.After(testwait.Patience):
		t.Fatal("read of a FIFO in the output store blocked")
	}
	if res := mustRead(t, s, good, ReadRequest{}); res.Content != "x\n" {
		t.Fatalf("read after the FIFO: %q", res.Content)
	}
}
