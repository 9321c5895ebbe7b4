//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package audit

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/internal/testwait"
	"github.com/voltmcp/voltmcp/safefile"
)

// TestReadersRefuseFIFO puts a FIFO with no writer where the log is:
// Verify, Read and Tail fail at once with an error that names it, where a
// blocking open would wait for ever.
func TestReadersRefuseFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, read := range map[string]func() error{
		"Verify": func() error { _, err := Verify(path); return err },
		"Read":   func() error { _, _, err := Read(path, Query{}); return err },
		"Tail":   func() error { return Tail(t.Context(), path, 10, false, func(Record) error { return nil }) },
	} {
		done := make(chan error, 1)
		go func() { done <- read() }()
		select {
		case err := <-done:
			if !errors.Is(err, safefile.ErrNotRegular) {
				t.Errorf("%s of a FIFO: %v, want not a regular file", name, err)
			}
		case <-time.After(testwait.Patience):
			t.Fatalf("%s of a FIFO blocked", name)
		}
	}
}
