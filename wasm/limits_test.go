package wasm_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/internal/testwait"
	"github.com/voltmcp/voltmcp/wasm"
)

// growBy1 is a first-call body that grows the memory one page at a time,
// n times, and traps as soon as a memory.grow fails.
func growBy1(n int) []byte {
	var b []byte
	for range n {
		b = append(b, cat(i32c(1), []byte{opMemoryGrow, 0}, i32c(-1), []byte{opI32Eq, opIf, opBlockVoid, opUnreachable, opEnd})...)
	}
	return b
}

// growModule is testdata/grow.wasm: the first call on an instance grows
// the memory from 2 pages to 18, one page at a time, and traps when a
// grow fails (testdata/grow.wat).
func growModule() []byte { return abiModule(goodResult, growBy1(16)) }

// TestGrowTestdata keeps testdata/grow.wasm, which the engine's tests
// configure as a classifier with a memoryPages limit, equal to
// growModule.
func TestGrowTestdata(t *testing.T) {
	path := filepath.Join("testdata", "grow.wasm")
	want := growModule()
	if *update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is out of date: go test ./wasm -run TestGrowTestdata -update", path)
	}
}

// TestLoadOptionsMemoryPages loads one module, whose first call grows its
// memory from 2 to 18 pages (growModule), into one Host twice: under a limit of 8
// pages its call faults for memory; under the Host's limit it answers.
// A module that needs more initial memory than its own limit is refused.
func TestLoadOptionsMemoryPages(t *testing.T) {
	t.Parallel()
	h, fs := newHost(t, wasm.Options{MemoryPages: 64})
	bin := growModule()
	small, err := h.Load(context.Background(), "small", bin, &wasm.LoadOptions{MemoryPages: 8})
	if err != nil {
		t.Fatal(err)
	}
	roomy := load(t, h, "roomy", bin)
	_, err = small.Classify(context.Background(), wasm.ClassifyInput{Server: "s", Tool: "t"})
	var f *wasm.Fault
	if !errors.As(err, &f) || f.Kind != wasm.FaultMemory || f.Module != "small" {
		t.Errorf("growing past its 8 pages: %v; want a memory fault of small", err)
	}
	if c, err := roomy.Classify(context.Background(), wasm.ClassifyInput{Server: "s", Tool: "t"}); err != nil || c.Risk != "write" {
		t.Errorf("growing within the Host's 64 pages: %+v, %v; want the module's answer", c, err)
	}
	if k := fs.kinds(); len(k) != 1 || k[0] != wasm.FaultMemory {
		t.Errorf("OnFault saw %v; want one memory fault", k)
	}
	if _, err := h.Load(context.Background(), "tiny", bin, &wasm.LoadOptions{MemoryPages: 1}); err == nil || !strings.Contains(err.Error(), "at least 2 pages, over the limit of 1") {
		t.Errorf("a module of 2 pages under a limit of 1: %v; want it refused", err)
	}
	if _, err := h.Load(context.Background(), "huge", bin, &wasm.LoadOptions{MemoryPages: 65537}); err == nil {
		t.Error("a limit over 65536 pages was accepted")
	}
}

// TestLoadOptionsTimeout loads one module that loops forever into one
// Host twice: with a timeout of its own and with the Host's. Each call
// ends at its module's timeout, and the fault says which it was.
func TestLoadOptionsTimeout(t *testing.T) {
	t.Parallel()
	h, _ := newHost(t, wasm.Options{Timeout: time.Second, PoolSize: 1})
	bin := abiModule(goodResult, bodyLoop)
	quick, err := h.Load(context.Background(), "quick", bin, &wasm.LoadOptions{Timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	slow := load(t, h, "slow", bin)
	for _, tt := range []struct {
		m    *wasm.Module
		want string
	}{
		{quick, "past the module's timeout of 50ms"},
		{slow, "past the module's timeout of 1s"},
	} {
		// The bound only keeps a broken build from hanging the run.
		ctx, cancel := context.WithDeadline(context.Background(), testwait.Deadline(t))
		_, err := tt.m.Classify(ctx, wasm.ClassifyInput{Server: "s", Tool: "t"})
		cancel()
		var f *wasm.Fault
		if !errors.As(err, &f) || f.Kind != wasm.FaultDeadline || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v; want a deadline fault %q", tt.m.Name(), err, tt.want)
		}
	}
	// The caller's deadline is not the module's timeout.
	// testwait: the deadline under test, which must stop the slow module
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = slow.Classify(ctx, wasm.ClassifyInput{Server: "s", Tool: "t"})
	var f *wasm.Fault
	if !errors.As(err, &f) || f.Kind != wasm.FaultDeadline || strings.Contains(err.Error(), "module's timeout") {
		t.Errorf("past the caller's deadline: %v; want a deadline fault that does not blame the module's timeout", err)
	}
}

// TestPinError refuses a module whose content is not its pin with a
// *PinError naming both digests.
func TestPinError(t *testing.T) {
	t.Parallel()
	h, _ := newHost(t, wasm.Options{})
	_, err := h.Load(context.Background(), "pinned", abiModule(goodResult, nil), &wasm.LoadOptions{SHA256: strings.Repeat("0", 64)})
	var pe *wasm.PinError
	if !errors.As(err, &pe) || pe.Module != "pinned" || pe.Pin != strings.Repeat("0", 64) || len(pe.SHA256) != 64 {
		t.Errorf("%#v; want a *wasm.PinError", err)
	}
}
