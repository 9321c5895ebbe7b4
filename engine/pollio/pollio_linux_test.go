//go:build linux

package pollio

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/internal/testwait"
)

// blockingPipe returns a pipe whose ends are in blocking mode, as an
// agent hands one to a server (os.Pipe makes non-blocking ones).
func blockingPipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	var fds [2]int
	if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	r, w = os.NewFile(uintptr(fds[0]), "r"), os.NewFile(uintptr(fds[1]), "w")
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

func nonblocking(t *testing.T, f *os.File) bool {
	t.Helper()
	fd, ok := fileDescriptor(f)
	if !ok {
		t.Fatal("no descriptor")
	}
	flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFL, 0)
	if errno != 0 {
		t.Fatal(errno)
	}
	return flags&syscall.O_NONBLOCK != 0
}

func TestReader(t *testing.T) {
	r, w := blockingPipe(t)
	in, restore := Reader(r, io.Discard)
	if _, ok := in.(*os.File); !ok {
		t.Fatalf("a blocking pipe was not made pollable: got %T", in)
	}
	if !nonblocking(t, r) {
		t.Error("the pipe is not in non-blocking mode")
	}
	if _, err := w.Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	if n, err := in.Read(buf); err != nil || string(buf[:n]) != "hello\n" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	// Closing the reader ends a read that waits, and leaves the
	// descriptor it was made from open.
	done := make(chan error, 1)
	go func() {
		_, err := in.Read(buf)
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a read after Close returned data")
		}
	case <-time.After(testwait.Patience):
		t.Fatal("Close did not end the read")
	}
	restore()
	if nonblocking(t, r) {
		t.Error("restore left the pipe in non-blocking mode")
	}
	if _, err := w.Write([]byte("still open\n")); err != nil {
		t.Fatal(err)
	}
	if n, err := r.Read(buf); err != nil || string(buf[:n]) != "still open\n" {
		t.Fatalf("the original descriptor read %q, %v", buf[:n], err)
	}
}

func TestReaderLeavesOthersAlone(t *testing.T) {
	file, err := os.Create(filepath.Join(t.TempDir(), "input"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	r, _ := blockingPipe(t)
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	sock := os.NewFile(uintptr(fds[0]), "sock")
	defer sock.Close()
	defer syscall.Close(fds[1])
	for _, tc := range []struct {
		name    string
		in      io.Reader
		out     io.Writer
		changed *os.File // a file whose mode must stay blocking
	}{
		{"regular-file", file, io.Discard, file},
		{"not-a-file", bytes.NewReader(nil), io.Discard, nil},
		{"socket-both-ways", sock, sock, sock},
		{"pipe-to-itself", r, r, r},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, restore := Reader(tc.in, tc.out)
			defer restore()
			if f, ok := got.(*os.File); ok {
				t.Fatalf("made %s pollable", f.Name())
			}
			if tc.changed != nil && nonblocking(t, tc.changed) {
				t.Error("the mode changed")
			}
		})
	}
}

// TestWriter checks that a blocking pipe on stdout is written through
// a non-blocking duplicate whose mode restore puts back, and that a
// stdout that is also stderr or stdin is left alone.
func TestWriter(t *testing.T) {
	r, w := blockingPipe(t)
	out, restore := Writer(w, bytes.NewReader(nil), io.Discard)
	if _, ok := out.(*os.File); !ok {
		t.Fatalf("a blocking pipe was not made pollable: got %T", out)
	}
	if !nonblocking(t, w) {
		t.Error("the pipe is not in non-blocking mode")
	}
	if _, err := out.Write([]byte("answer\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	if n, err := r.Read(buf); err != nil || string(buf[:n]) != "answer\n" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	restore()
	if nonblocking(t, w) {
		t.Error("restore left the pipe in non-blocking mode")
	}
	if _, err := w.Write([]byte("still open\n")); err != nil {
		t.Fatal(err)
	}

	r2, w2 := blockingPipe(t)
	for name, others := range map[string][2]any{"also-stderr": {bytes.NewReader(nil), w2}, "also-stdin": {r2, io.Discard}} {
		t.Run(name, func(t *testing.T) {
			got, restore := Writer(w2, others[0].(io.Reader), others[1].(io.Writer))
			defer restore()
			if f, ok := got.(*os.File); ok {
				t.Fatalf("made %s pollable", f.Name())
			}
			if nonblocking(t, w2) {
				t.Error("the mode changed")
			}
		})
	}
}
