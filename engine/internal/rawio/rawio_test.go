package rawio_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/engine/internal/rawio"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

func pipe(t *testing.T) (r, w io.ReadWriteCloser) {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r, w = rawio.Wrap(pr), rawio.Wrap(pw)
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// TestPipe sends more than a pipe holds through a wrapped pipe, so that
// both ends wait in the poller, and checks every byte arrives in order,
// then io.EOF once the writer closes.
func TestPipe(t *testing.T) {
	r, w := pipe(t)
	if runtime.GOOS == "linux" {
		if _, ok := r.(*os.File); ok {
			t.Fatal("a pipe from os.Pipe was not wrapped")
		}
	}
	want := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	errc := make(chan error, 1)
	go func() {
		n, err := w.Write(want)
		if err == nil && n != len(want) {
			err = io.ErrShortWrite
		}
		errc <- errors.Join(err, w.Close())
	}()
	time.Sleep(20 * time.Millisecond) // the writer fills the pipe and waits
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, not the %d written", len(got), len(want))
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// TestReadWaits checks that a read on an empty pipe waits for data, and
// that Close ends a read that waits.
func TestReadWaits(t *testing.T) {
	r, w := pipe(t)
	got := make(chan string, 1)
	go func() {
		buf := make([]byte, 16)
		n, _ := r.Read(buf)
		got <- string(buf[:n])
	}()
	time.Sleep(20 * time.Millisecond)
	if _, err := w.Write([]byte("late")); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "late" {
		t.Fatalf("read %q", s)
	}
	done := make(chan error, 1)
	go func() {
		_, err := r.Read(make([]byte, 16))
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	r.Close()
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrClosed) {
			t.Errorf("a read ended by Close: %v", err)
		}
	case <-time.After(testwait.Patience):
		t.Fatal("Close did not end a waiting read")
	}
}

// TestBrokenPipe checks that a write whose reader is gone fails with
// EPIPE, rather than the process dying of SIGPIPE.
func TestBrokenPipe(t *testing.T) {
	r, w := pipe(t)
	r.Close()
	_, err := w.Write([]byte("nobody reads this"))
	if !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("write to a pipe without a reader: %v", err)
	}
}

// TestLeavesOthersAlone checks that a file in blocking mode (a regular
// file) is returned as it is.
func TestLeavesOthersAlone(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "plain"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := rawio.Wrap(f); got != io.ReadWriteCloser(f) {
		t.Errorf("a regular file was wrapped: %T", got)
	}
}
