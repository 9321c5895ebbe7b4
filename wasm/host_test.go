package wasm_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/wasm"
)

// testCacheDir is a compilation cache the package's tests share, so the
// built-in module compiles once per test run rather than once per test.
var testCacheDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "wasm-test-cache-")
	if err != nil {
		panic(err)
	}
	testCacheDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// faults records the faults a Host reports.
type faults struct {
	mu   sync.Mutex
	list []wasm.Fault
}

func (f *faults) add(x wasm.Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.list = append(f.list, x)
}

func (f *faults) kinds() []wasm.FaultKind {
	f.mu.Lock()
	defer f.mu.Unlock()
	var k []wasm.FaultKind
	for _, x := range f.list {
		k = append(k, x.Kind)
	}
	return k
}

// newHost starts a Host on the shared cache and closes it with the test.
func newHost(t testing.TB, o wasm.Options) (*wasm.Host, *faults) {
	t.Helper()
	var fs faults
	if o.CacheDir == "" {
		o.CacheDir = testCacheDir
	}
	if o.Timeout == 0 {
		// Generous: a Go guest under the race detector on a busy machine
		// is slow; the deadline tests set their own.
		o.Timeout = 30 * time.Second
	}
	if o.OnFault == nil {
		o.OnFault = fs.add
	}
	h, err := wasm.NewHost(context.Background(), &o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return h, &fs
}

func load(t testing.TB, h *wasm.Host, name string, bin []byte) *wasm.Module {
	t.Helper()
	m, err := h.Load(context.Background(), name, bin, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

const goodResult = `{"risk":"write","reason":"test module"}`

func TestLoadChecksTheABI(t *testing.T) {
	t.Parallel()
	h, _ := newHost(t, wasm.Options{MemoryPages: 64})
	good := abiModule(goodResult, nil)
	sum := sha256.Sum256(good)
	pin := hex.EncodeToString(sum[:])
	tests := []struct {
		name, pin string
		bin       []byte
		want      string // substring of the error; "" means it loads
	}{
		{"good", "", good, ""},
		{"good pinned", strings.ToUpper(pin), good, ""},
		{"pin mismatch", strings.Repeat("0", 64), good, "does not match its pin " + strings.Repeat("0", 64)},
		{"not wasm", "", []byte("#!/bin/sh\n"), "bad magic"},
		{"truncated", "", good[:len(good)-3], "truncated"},
		{"no marker", "", abiModule(goodResult, nil, without(wasm.ExportABIMarker)), `missing export "voltmcp_abi_v1"`},
		{"wrong ABI version", "", abiModule(goodResult, nil, withFunc(wasm.ExportABIMarker, func(f *wfunc) { f.export = "voltmcp_abi_v2" })), `exports ABI marker "voltmcp_abi_v2"`},
		{"no alloc", "", abiModule(goodResult, nil, without(wasm.ExportAlloc)), `missing export "voltmcp_alloc"`},
		{"no free", "", abiModule(goodResult, nil, without(wasm.ExportFree)), `missing export "voltmcp_free"`},
		{"neither function", "", abiModule(goodResult, nil, without(wasm.ExportClassify), without(wasm.ExportShape)), "exports neither"},
		{"bad alloc signature", "", abiModule(goodResult, nil, withFunc(wasm.ExportAlloc, func(f *wfunc) { f.sig = sigBadAlloc; f.body = i32c(0) })), `"voltmcp_alloc" has signature (i64) -> (i32), want (i32) -> (i32)`},
		{"bad classify signature", "", abiModule(goodResult, nil, withFunc(wasm.ExportClassify, func(f *wfunc) { f.sig = sigI32; f.body = i32c(0) })), `"classify" has signature () -> (i32)`},
		{"no memory", "", abiModule(goodResult, nil, func(m *wmodule) { m.noMemory = true; m.data = nil }), `export one memory named "memory"`},
		{"memory over limit", "", abiModule(goodResult, nil, func(m *wmodule) { m.memPages = 65 }), "at least 65 pages, over the limit of 64"},
		{"env import", "", abiModule(goodResult, nil, func(m *wmodule) { m.imports = []wimport{{"env", "abort", sigVoid}} }), `imports "env"."abort"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := h.Load(context.Background(), "mod-"+tt.name, tt.bin, &wasm.LoadOptions{SHA256: tt.pin})
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !m.CanClassify() || !m.CanShape() || m.Name() != "mod-"+tt.name || m.SHA256() != pin {
					t.Errorf("module %s: classify %v shape %v sha %s", m.Name(), m.CanClassify(), m.CanShape(), m.SHA256())
				}
				return
			}
			if err == nil {
				t.Fatalf("loaded; want an error with %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "mod-"+tt.name) {
				t.Errorf("error %q; want it to name the module and contain %q", err, tt.want)
			}
		})
	}
	// A pin mismatch names both hashes.
	_, err := h.Load(context.Background(), "pinned", good, &wasm.LoadOptions{SHA256: strings.Repeat("a", 64)})
	if err == nil || !strings.Contains(err.Error(), pin) || !strings.Contains(err.Error(), strings.Repeat("a", 64)) {
		t.Errorf("pin mismatch error %v; want both hashes", err)
	}
}

func TestGoodModuleAnswers(t *testing.T) {
	t.Parallel()
	h, fs := newHost(t, wasm.Options{MemoryPages: 64})
	m := load(t, h, "good", abiModule(goodResult, nil))
	for range 3 {
		c, err := m.Classify(context.Background(), wasm.ClassifyInput{Server: "s", Tool: "t"})
		if err != nil {
			t.Fatal(err)
		}
		if c != (wasm.Classification{Risk: "write", Reason: "test module", Module: "good"}) {
			t.Errorf("got %+v", c)
		}
	}
	if k := fs.kinds(); len(k) != 0 {
		t.Errorf("faults %v", k)
	}
}

// TestFaults runs one module per fault. Each faults on the first call of
// every instance and answers normally after: so a second fault proves the
// first instance was closed, not reused. Between the two, the built-in
// module must keep answering.
func TestFaults(t *testing.T) {
	t.Parallel()
	const pages = 64
	h, fs := newHost(t, wasm.Options{MemoryPages: pages, PoolSize: 1})
	builtin, err := h.Builtin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		bin    []byte
		kind   wasm.FaultKind
		errSub string
	}{
		// The caller's deadline; TestShapeFaultFallsBack covers Options.Timeout.
		{"infinite loop", abiModule(goodResult, bodyLoop), wasm.FaultDeadline, "deadline"},
		{"memory bomb", abiModule(goodResult, bodyMemBomb), wasm.FaultMemory, "unreachable"},
		{"trap", abiModule(goodResult, bodyTrap), wasm.FaultTrap, "unreachable"},
		{"garbage output", abiModule(goodResult, bodyGarbage, func(m *wmodule) { m.data = append(m.data, garbageBytes) }), wasm.FaultMalformed, "invalid character"},
		{"oversized output", abiModule(goodResult, bodyHuge), wasm.FaultOversized, "over the limit"},
		{"output outside memory", abiModule(goodResult, bodyOutside), wasm.FaultMalformed, "outside memory"},
		{"bad risk", abiModule(`{"risk":"safe","reason":"trust me"}`, nil), wasm.FaultMalformed, `risk "safe"`},
		{"empty reason", abiModule(`{"risk":"read","reason":"\u200b"}`, nil), wasm.FaultMalformed, "empty reason"},
		{"allocator fails", abiModule(goodResult, nil, withFunc(wasm.ExportAlloc, func(f *wfunc) { f.body = i32c(0) })), wasm.FaultMemory, "returned 0"},
		{"allocator lies", abiModule(goodResult, nil, withFunc(wasm.ExportAlloc, func(f *wfunc) { f.body = i32c(-8) })), wasm.FaultMalformed, "outside memory"},
		{"trap in free", abiModule(goodResult, nil, withFunc(wasm.ExportFree, func(f *wfunc) { f.body = bodyTrap })), wasm.FaultTrap, "voltmcp_free"},
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := load(t, h, tt.name, tt.bin)
			before := len(fs.kinds())
			for i := range 2 {
				// testwait: the deadline under test (FaultDeadline)
				cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
				if tt.kind != wasm.FaultDeadline {
					cctx, cancel = context.WithCancel(ctx)
				}
				_, err := m.Classify(cctx, wasm.ClassifyInput{Server: "s", Tool: "t"})
				cancel()
				var f *wasm.Fault
				if !errors.As(err, &f) {
					t.Fatalf("call %d: error %v; want a *wasm.Fault", i, err)
				}
				if f.Module != tt.name || f.Kind != tt.kind || !strings.Contains(f.Error(), tt.errSub) {
					t.Errorf("call %d: fault %s %q (%v); want kind %s containing %q", i, f.Module, f.Kind, f, tt.kind, tt.errSub)
				}
				// The gateway keeps serving.
				c, err := builtin.Classify(ctx, wasm.ClassifyInput{Server: "s", Tool: "list_things"})
				if err != nil || c.Risk != wasm.RiskRead {
					t.Fatalf("built-in after the fault: %+v, %v", c, err)
				}
			}
			if got := fs.kinds()[before:]; len(got) != 2 || got[0] != tt.kind || got[1] != tt.kind {
				t.Errorf("OnFault saw %v; want two %s", got, tt.kind)
			}
			// The chain falls back to unknown, naming the module and fault.
			// Only the deadline case gets a deadline: under -race on a
			// loaded machine a memory bomb can take longer than it.
			chain := &wasm.Chain{Classifiers: []*wasm.Module{m}}
			cctx, cancel := context.WithCancel(ctx)
			if tt.kind == wasm.FaultDeadline {
				// testwait: the deadline under test (FaultDeadline)
				cctx, cancel = context.WithTimeout(ctx, 300*time.Millisecond)
			}
			defer cancel()
			c := chain.Classify(cctx, wasm.ClassifyInput{Server: "s", Tool: "t"})
			if c.Risk != wasm.RiskUnknown || !strings.Contains(c.Reason, tt.name+" "+string(tt.kind)) {
				t.Errorf("chain: %+v", c)
			}
		})
	}
}

// TestShapeFaultFallsBack checks that a faulting shaper is skipped and the
// hard cap still applies.
func TestShapeFaultFallsBack(t *testing.T) {
	t.Parallel()
	h, _ := newHost(t, wasm.Options{MemoryPages: 64, Timeout: 200 * time.Millisecond})
	ctx := context.Background()
	trap := load(t, h, "trapper", abiModule(goodResult, bodyTrap))
	loop := load(t, h, "looper", abiModule(goodResult, bodyLoop))
	chain := &wasm.Chain{Shapers: []*wasm.Module{trap, loop}}
	out := chain.Shape(ctx, wasm.ShapeInput{Tool: "t", Content: []wasm.Content{{Type: "text", Text: "one\ntwo\nthree"}},
		Limits: wasm.Limits{MaxLines: 2}})
	if len(out.Content) != 1 || out.Content[0].Text != "one\ntwo" {
		t.Errorf("content %+v", out.Content)
	}
	want := []string{"skipped shaper trapper trap", "skipped shaper looper deadline", "cut to the output cap (2 lines)"}
	if strings.Join(out.Notes, "|") != strings.Join(want, "|") {
		t.Errorf("notes %q; want %q", out.Notes, want)
	}
}

// TestShapeResultRules checks that a shaper can neither forge nor reorder
// non-text items.
func TestShapeResultRules(t *testing.T) {
	t.Parallel()
	h, _ := newHost(t, wasm.Options{MemoryPages: 64})
	ctx := context.Background()
	in := wasm.ShapeInput{Tool: "t", Content: []wasm.Content{
		{Type: "image", MIMEType: "image/png", Size: 10},
		{Type: "text", Text: "hi"},
		{Type: "audio", MIMEType: "audio/wav", Size: 20},
	}}
	tests := []struct{ name, result, want string }{
		{"drop and rewrite", `{"content":[{"type":"text","text":"x"},{"type":"audio","mime_type":"audio/wav","size":20}],"notes":["ok\u001b[31m"]}`, ""},
		{"forged image", `{"content":[{"type":"image","mime_type":"image/png","size":11}]}`, "not one of the input's"},
		{"reordered", `{"content":[{"type":"audio","mime_type":"audio/wav","size":20},{"type":"image","mime_type":"image/png","size":10}]}`, "not one of the input's"},
		{"untyped", `{"content":[{"text":"x"}]}`, "has no type"},
		{"no content", `{"notes":[]}`, "no content"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := load(t, h, tt.name, abiModule(tt.result, nil))
			out, err := m.Shape(ctx, in)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if len(out.Content) != 2 || len(out.Notes) != 1 || out.Notes[0] != "ok" {
					t.Errorf("got %+v", out)
				}
				return
			}
			var f *wasm.Fault
			if !errors.As(err, &f) || f.Kind != wasm.FaultMalformed || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v; want a malformed fault containing %q", err, tt.want)
			}
		})
	}
}

// sandboxProbe is a classify that tries to reach out through WASI: open a
// file through the first would-be preopened directory, read the
// environment and the arguments, accept a socket connection. Any success
// traps; when everything fails it answers.
func sandboxProbe() []byte {
	const (
		pathAt = 2048
		outAt  = 2100
	)
	path := "etc/passwd"
	body := cat(
		// path_open(fd 3, 0, path, len, 0, all rights, all rights, 0, &fd) must fail.
		i32c(3), i32c(0), i32c(pathAt), i32c(int32(len(path))), i32c(0), i64c(-1), i64c(-1), i32c(0), i32c(outAt),
		[]byte{opCall, 0, opI32Eqz, opIf, opBlockVoid, opUnreachable, opEnd},
		// environ_sizes_get(&n, &size): n must be 0.
		i32c(outAt), i32c(outAt+4), []byte{opCall, 1, opDrop},
		i32c(outAt), []byte{opI32Load, 2, 0, opIf, opBlockVoid, opUnreachable, opEnd},
		// args_sizes_get(&n, &size): n must be 0.
		i32c(outAt), i32c(outAt+4), []byte{opCall, 2, opDrop},
		i32c(outAt), []byte{opI32Load, 2, 0, opIf, opBlockVoid, opUnreachable, opEnd},
		// sock_accept(fd 3, 0, &fd) must fail.
		i32c(3), i32c(0), i32c(outAt), []byte{opCall, 3, opI32Eqz, opIf, opBlockVoid, opUnreachable, opEnd},
		// fd_prestat_get(fd 3, &buf) must fail: there are no preopens.
		i32c(3), i32c(outAt), []byte{opCall, 4, opI32Eqz, opIf, opBlockVoid, opUnreachable, opEnd},
		i64c(packed(resultAt, uint32(len(`{"risk":"read","reason":"sandbox held"}`)))),
	)
	return abiModule(`{"risk":"read","reason":"sandbox held"}`, nil, func(m *wmodule) {
		m.imports = []wimport{
			{"wasi_snapshot_preview1", "path_open", sig{[]byte{i32, i32, i32, i32, i32, i64, i64, i32, i32}, []byte{i32}}},
			{"wasi_snapshot_preview1", "environ_sizes_get", sig{[]byte{i32, i32}, []byte{i32}}},
			{"wasi_snapshot_preview1", "args_sizes_get", sig{[]byte{i32, i32}, []byte{i32}}},
			{"wasi_snapshot_preview1", "sock_accept", sig{[]byte{i32, i32, i32}, []byte{i32}}},
			{"wasi_snapshot_preview1", "fd_prestat_get", sig{[]byte{i32, i32}, []byte{i32}}},
		}
		m.data = append(m.data, wdata{pathAt, []byte(path)})
		withFunc(wasm.ExportClassify, func(f *wfunc) { f.body = body })(m)
	})
}

func TestSandbox(t *testing.T) {
	t.Parallel()
	h, fs := newHost(t, wasm.Options{MemoryPages: 64})
	m := load(t, h, "probe", sandboxProbe())
	c, err := m.Classify(context.Background(), wasm.ClassifyInput{Tool: "t"})
	if err != nil {
		t.Fatalf("the probe reached something: %v", err)
	}
	if c.Reason != "sandbox held" {
		t.Errorf("got %+v", c)
	}
	if k := fs.kinds(); len(k) != 0 {
		t.Errorf("faults %v", k)
	}
}

func TestCallerCancelIsNotReported(t *testing.T) {
	t.Parallel()
	h, fs := newHost(t, wasm.Options{MemoryPages: 64, Timeout: 10 * time.Second})
	m := load(t, h, "looper", abiModule(goodResult, bodyLoop))
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		time.Sleep(20 * time.Millisecond)
		cancel()
	}()
	_, err := m.Classify(ctx, wasm.ClassifyInput{Tool: "t"})
	var f *wasm.Fault
	if !errors.As(err, &f) || f.Kind != wasm.FaultCanceled {
		t.Fatalf("error %v; want a canceled fault", err)
	}
	if k := fs.kinds(); len(k) != 0 {
		t.Errorf("OnFault saw %v; a caller's cancel is not the module's fault", k)
	}
}

func TestUnsupportedAndClosed(t *testing.T) {
	t.Parallel()
	h, fs := newHost(t, wasm.Options{MemoryPages: 64})
	ctx := context.Background()
	m := load(t, h, "classifier-only", abiModule(goodResult, nil, without(wasm.ExportShape)))
	if m.CanShape() || !m.CanClassify() {
		t.Fatalf("classify %v shape %v", m.CanClassify(), m.CanShape())
	}
	_, err := m.Shape(ctx, wasm.ShapeInput{})
	var f *wasm.Fault
	if !errors.As(err, &f) || f.Kind != wasm.FaultUnsupported {
		t.Errorf("error %v; want unsupported", err)
	}
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Classify(ctx, wasm.ClassifyInput{}); !errors.As(err, &f) || f.Kind != wasm.FaultClosed {
		t.Errorf("after Close: %v; want closed", err)
	}
	if _, err := h.Load(ctx, "late", abiModule(goodResult, nil), nil); err == nil {
		t.Error("Load after Close succeeded")
	}
	if k := fs.kinds(); len(k) != 0 {
		t.Errorf("OnFault saw %v", k)
	}
}

// TestConcurrentCalls runs many calls at once on a small pool, for the race
// detector and the pool's bound.
func TestConcurrentCalls(t *testing.T) {
	t.Parallel()
	h, fs := newHost(t, wasm.Options{PoolSize: 2})
	ctx := context.Background()
	m, err := h.Builtin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	trap := load(t, h, "trapper", abiModule(goodResult, bodyTrap))
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 5 {
				c, err := m.Classify(ctx, wasm.ClassifyInput{Tool: "create_issue"})
				if err != nil || c.Risk != wasm.RiskWrite {
					t.Errorf("goroutine %d: %+v %v", i, c, err)
				}
				if _, err := trap.Classify(ctx, wasm.ClassifyInput{Tool: "x"}); err == nil {
					t.Errorf("goroutine %d: trap module answered", i)
				}
			}
		})
	}
	wg.Wait()
	if n := len(fs.kinds()); n != 40 {
		t.Errorf("%d faults; want 40", n)
	}
}
