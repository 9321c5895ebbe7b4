package wasm_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/internal/testwait"
	"github.com/voltmcp/voltmcp/wasm"
)

var update = flag.Bool("update", false, "rewrite testdata/recurse.wasm and testdata/grow.wasm")

const (
	opLocalGet = 0x20
	opI32Sub   = 0x6b
)

// sigRec is (n i32) -> ().
var sigRec = sig{[]byte{i32}, nil}

// recBody is the body of a function that, given n > 0, calls function
// callee twice with n-1: no loop anywhere, 2^n calls in all.
func recBody(callee uint32) []byte {
	call := cat([]byte{opLocalGet, 0}, i32c(1), []byte{opI32Sub, opCall}, uleb(nil, uint64(callee)))
	return cat([]byte{opLocalGet, 0, opIf, opBlockVoid}, call, call, []byte{opEnd})
}

// withRecursion adds a function that recurses two calls per level, and
// makes the first call run it depth levels deep. imports is how many
// functions the module imports (they come first in the index space).
func withRecursion(depth int32, imports int) (first []byte, opt func(*wmodule)) {
	idx := uint32(imports + 5) // after abiModule's five functions
	first = cat(i32c(depth), []byte{opCall}, uleb(nil, uint64(idx)))
	return first, func(m *wmodule) {
		m.funcs = append(m.funcs, wfunc{sig: sigRec, body: recBody(idx)})
	}
}

// withFanOut adds depth distinct functions, each calling the next one
// twice: no loop and no recursion, yet 2^depth calls.
func withFanOut(depth int) (first []byte, opt func(*wmodule)) {
	base := uint32(5)
	first = cat(i32c(1), []byte{opCall}, uleb(nil, uint64(base)))
	return first, func(m *wmodule) {
		for i := range depth {
			body := []byte{}
			if i < depth-1 {
				call := cat(i32c(1), []byte{opCall}, uleb(nil, uint64(base+uint32(i)+1)))
				body = cat(call, call)
			}
			m.funcs = append(m.funcs, wfunc{sig: sigRec, body: body})
		}
	}
}

// withHostLoop makes the first call loop on a WASI call forever.
func withHostLoop() (first []byte, opt func(*wmodule)) {
	first = []byte{opLoop, opBlockVoid, opCall, 0, opDrop, opBr, 0, opEnd, opUnreachable}
	return first, func(m *wmodule) {
		m.imports = []wimport{{wasm.ImportModuleWASI, "sched_yield", sigI32}}
	}
}

// recurseModule is testdata/recurse.wasm: classify and shape recurse two
// calls per level, 40 levels deep, with no loop (testdata/recurse.wat).
func recurseModule() []byte {
	first, opt := withRecursion(40, 0)
	return abiModule(goodResult, first, opt)
}

// TestRecurseTestdata keeps testdata/recurse.wasm, which the CLI's tests
// configure as a hanging classifier, equal to recurseModule.
func TestRecurseTestdata(t *testing.T) {
	path := filepath.Join("testdata", "recurse.wasm")
	want := recurseModule()
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
		t.Fatalf("%s is out of date: go test ./wasm -run TestRecurseTestdata -update", path)
	}
}

// TestDeadlineHoldsForAnyGuestShape runs guests that never reach their
// end, in shapes without a loop back-edge (binary recursion, a fan-out of
// distinct functions, an _initialize that recurses) and with one (a
// memory.grow loop, a host-call loop), against a one-second deadline. Each call must end with a
// deadline fault; the bound of a minute only keeps a broken build from
// hanging the test run.
func TestDeadlineHoldsForAnyGuestShape(t *testing.T) {
	t.Parallel()
	h, _ := newHost(t, wasm.Options{Timeout: time.Second, PoolSize: 1, MemoryPages: 1024})
	rec, recOpt := withRecursion(40, 0)
	fan, fanOpt := withFanOut(40)
	host, hostOpt := withHostLoop()
	_, initOpt := withRecursion(40, 0)
	hangingInit := func(m *wmodule) {
		initOpt(m)
		m.funcs = append(m.funcs, wfunc{export: wasm.ExportInitialize, sig: sigVoid, body: cat(i32c(40), []byte{opCall, 5})})
	}
	growForever := cat([]byte{opLoop, opBlockVoid}, i32c(0), []byte{opMemoryGrow, 0, opDrop, opBr, 0, opEnd, opUnreachable})
	tests := []struct {
		name string
		bin  []byte
	}{
		{"binary recursion", abiModule(goodResult, rec, recOpt)},
		{"fan-out of calls", abiModule(goodResult, fan, fanOpt)},
		{"memory.grow loop", abiModule(goodResult, growForever)},
		{"host-call loop", abiModule(goodResult, host, hostOpt)},
		// Starting the instance has a deadline of its own (five seconds).
		{"_initialize recursion", abiModule(goodResult, nil, hangingInit)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := load(t, h, tt.name, tt.bin)
			for _, export := range []string{wasm.ExportClassify, wasm.ExportShape} {
				done := make(chan error, 1)
				go func() {
					var err error
					if export == wasm.ExportClassify {
						_, err = m.Classify(context.Background(), wasm.ClassifyInput{Server: "s", Tool: "t"})
					} else {
						_, err = m.Shape(context.Background(), wasm.ShapeInput{Server: "s", Tool: "t", Limits: wasm.Limits{MaxBytes: 100}})
					}
					done <- err
				}()
				select {
				case err := <-done:
					var f *wasm.Fault
					if !errors.As(err, &f) || f.Kind != wasm.FaultDeadline {
						t.Errorf("%s: %v; want a deadline fault", export, err)
					}
				case <-time.After(time.Until(testwait.Deadline(t))):
					t.Fatalf("%s: still running %s past its one-second deadline", export, testwait.Patience)
				}
			}
		})
	}
}

// statefulShaper is a module whose shape answers with the previous
// call's input, kept in its memory, and remembers this call's: the first
// call on an instance echoes its own input. A ShapeInput read as a Shaped
// is a valid answer (its content, unknown fields ignored), so a reused
// instance hands one call's content to the next.
func statefulShaper() []byte {
	const (
		lenAt  = 16
		prevAt = 40960
		outAt  = 81920
	)
	memCopy := []byte{0xfc, 0x0a, 0, 0}
	body := cat(
		i32c(lenAt), []byte{opI32Load, 2, 0, 0x21, 2}, // local 2 = length of the kept input
		i32c(outAt), i32c(prevAt), []byte{opLocalGet, 2}, memCopy,
		i32c(prevAt), []byte{opLocalGet, 0, opLocalGet, 1}, memCopy,
		i32c(lenAt), []byte{opLocalGet, 1, opI32Store, 2, 0},
		[]byte{opLocalGet, 2, opI32Eqz, opIf, i64},
		[]byte{opLocalGet, 0, 0xad}, i64c(32), []byte{0x86, opLocalGet, 1, 0xad, 0x84},
		[]byte{0x05}, i64c(packed(outAt, 0)), []byte{opLocalGet, 2, 0xad, 0x84},
		[]byte{opEnd},
	)
	return abiModule(goodResult, nil, withFunc(wasm.ExportShape, func(f *wfunc) {
		f.locals = []byte{i32}
		f.body = body
	}))
}

// TestShaperKeepsNoStateBetweenServers shapes server a's output, which
// holds a secret, and server b's, in turns, with a shaper that answers
// each call with the previous call's input. Neither server's answer may
// hold the other's output.
func TestShaperKeepsNoStateBetweenServers(t *testing.T) {
	t.Parallel()
	h, _ := newHost(t, wasm.Options{PoolSize: 1})
	m := load(t, h, "stateful", statefulShaper())
	chain := &wasm.Chain{Shapers: []*wasm.Module{m}}
	const canary = "sk-live-server-a-canary-7f3e"
	ctx := context.Background()
	lim := wasm.Limits{MaxBytes: 1000, MaxLines: 10}
	a := chain.Shape(ctx, wasm.ShapeInput{Server: "a", Tool: "t", Content: []wasm.Content{{Type: "text", Text: "token " + canary}}, Limits: lim})
	if len(a.Content) != 1 || a.Content[0].Text != "token "+canary {
		t.Fatalf("server a: %+v", a)
	}
	for i := range 3 {
		b := chain.Shape(ctx, wasm.ShapeInput{Server: "b", Tool: "t", Content: []wasm.Content{{Type: "text", Text: "hello from b"}}, Limits: lim})
		if len(b.Content) != 1 || strings.Contains(b.Content[0].Text, canary) {
			t.Fatalf("server b, call %d: %+v; server a's output reached it", i, b)
		}
		a = chain.Shape(ctx, wasm.ShapeInput{Server: "a", Tool: "t", Content: []wasm.Content{{Type: "text", Text: "token " + canary}}, Limits: lim})
		if len(a.Content) != 1 || strings.Contains(a.Content[0].Text, "hello from b") {
			t.Fatalf("server a, call %d: %+v; server b's output reached it", i, a)
		}
	}
}

// TestIdleInstancesServeInterleavedServers shapes for six servers in
// turn, twice: each server's second call finds its own idle instance (the
// stateful shaper answers with that instance's previous input), rather
// than a fresh one because the other servers' calls closed it. Calls of
// several servers interleave whenever servers are discovered at once, and
// a fresh instance of the built-in Go guest costs milliseconds.
func TestIdleInstancesServeInterleavedServers(t *testing.T) {
	t.Parallel()
	h, _ := newHost(t, wasm.Options{PoolSize: 1})
	m := load(t, h, "stateful", statefulShaper())
	chain := &wasm.Chain{Shapers: []*wasm.Module{m}}
	ctx := context.Background()
	lim := wasm.Limits{MaxBytes: 1000, MaxLines: 10}
	shape := func(server, text string) string {
		r := chain.Shape(ctx, wasm.ShapeInput{Server: server, Tool: "t", Content: []wasm.Content{{Type: "text", Text: text}}, Limits: lim})
		if len(r.Content) != 1 {
			t.Fatalf("server %s: %+v", server, r)
		}
		return r.Content[0].Text
	}
	const servers = 6
	for i := range servers {
		shape(fmt.Sprintf("s%d", i), fmt.Sprintf("s%d first", i))
	}
	for i := range servers {
		server := fmt.Sprintf("s%d", i)
		if got, want := shape(server, server+" second"), server+" first"; got != want {
			t.Errorf("server %s's second call: %q, want %q from its idle instance", server, got, want)
		}
	}
}
