package wasm_test

import (
	"fmt"

	"github.com/voltmcp/voltmcp/wasm"
)

// This file assembles tiny wasm modules from sections, for the ABI's edge
// cases: no toolchain, no WAT, just the binary format.

// Value types and opcodes used by the test modules.
const (
	i32 = 0x7f
	i64 = 0x7e

	opUnreachable = 0x00
	opBlockVoid   = 0x40
	opLoop        = 0x03
	opIf          = 0x04
	opEnd         = 0x0b
	opBr          = 0x0c
	opReturn      = 0x0f
	opCall        = 0x10
	opDrop        = 0x1a
	opI32Load     = 0x28
	opI32Store    = 0x36
	opMemoryGrow  = 0x40
	opI32Const    = 0x41
	opI64Const    = 0x42
	opI32Eqz      = 0x45
	opI32Eq       = 0x46
)

// sig is a function signature.
type sig struct{ params, results []byte }

var (
	sigVoid     = sig{}
	sigAlloc    = sig{[]byte{i32}, []byte{i32}}
	sigFree     = sig{[]byte{i32, i32}, nil}
	sigCall     = sig{[]byte{i32, i32}, []byte{i64}}
	sigI32      = sig{nil, []byte{i32}}
	sigBadAlloc = sig{[]byte{i64}, []byte{i32}}
)

// wimport is an imported function.
type wimport struct {
	module, name string
	sig          sig
}

// wfunc is a defined function; body is its code without the final end.
type wfunc struct {
	export string
	sig    sig
	locals []byte // one local of each type listed
	body   []byte
}

// wdata is an active data segment.
type wdata struct {
	offset uint32
	bytes  []byte
}

// wmodule is a module to assemble.
type wmodule struct {
	imports     []wimport
	funcs       []wfunc
	memPages    uint32
	noMemory    bool
	data        []wdata
	extraExport []string // exported as aliases of function 0 of funcs
}

func uleb(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}

func sleb(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func name(b []byte, s string) []byte { return append(uleb(b, uint64(len(s))), s...) }

func section(out []byte, id byte, body []byte) []byte {
	out = append(out, id)
	out = uleb(out, uint64(len(body)))
	return append(out, body...)
}

func vec(n int) []byte { return uleb(nil, uint64(n)) }

// bytes assembles the module.
func (m wmodule) bytes() []byte {
	out := []byte("\x00asm\x01\x00\x00\x00")
	var sigs []sig
	for _, im := range m.imports {
		sigs = append(sigs, im.sig)
	}
	for _, f := range m.funcs {
		sigs = append(sigs, f.sig)
	}
	types := vec(len(sigs))
	for _, s := range sigs {
		types = append(types, 0x60)
		types = append(uleb(types, uint64(len(s.params))), s.params...)
		types = append(uleb(types, uint64(len(s.results))), s.results...)
	}
	out = section(out, 1, types)
	if len(m.imports) > 0 {
		imps := vec(len(m.imports))
		for i, im := range m.imports {
			imps = name(name(imps, im.module), im.name)
			imps = uleb(append(imps, 0), uint64(i))
		}
		out = section(out, 2, imps)
	}
	fns := vec(len(m.funcs))
	for i := range m.funcs {
		fns = uleb(fns, uint64(len(m.imports)+i))
	}
	out = section(out, 3, fns)
	if !m.noMemory {
		out = section(out, 5, uleb(append(vec(1), 0), uint64(max(m.memPages, 1))))
	}
	var exps [][]byte
	for i, f := range m.funcs {
		if f.export != "" {
			exps = append(exps, uleb(append(name(nil, f.export), 0), uint64(len(m.imports)+i)))
		}
	}
	for _, e := range m.extraExport {
		exps = append(exps, uleb(append(name(nil, e), 0), uint64(len(m.imports))))
	}
	if !m.noMemory {
		exps = append(exps, append(name(nil, "memory"), 2, 0))
	}
	ex := vec(len(exps))
	for _, e := range exps {
		ex = append(ex, e...)
	}
	out = section(out, 7, ex)
	code := vec(len(m.funcs))
	for _, f := range m.funcs {
		body := vec(len(f.locals))
		for _, l := range f.locals {
			body = append(body, 1, l)
		}
		body = append(append(body, f.body...), opEnd)
		code = append(uleb(code, uint64(len(body))), body...)
	}
	out = section(out, 10, code)
	if len(m.data) > 0 {
		data := vec(len(m.data))
		for _, d := range m.data {
			data = append(data, 0, opI32Const)
			data = sleb(data, int64(d.offset))
			data = append(data, opEnd)
			data = append(uleb(data, uint64(len(d.bytes))), d.bytes...)
		}
		out = section(out, 11, data)
	}
	return out
}

// Memory layout of the ABI test modules: the "used" flag at 8, results at
// resultAt, inputs at inputAt.
const (
	flagAt   = 8
	resultAt = 64
	inputAt  = 4096
)

func i32c(v int32) []byte { return sleb([]byte{opI32Const}, int64(v)) }
func i64c(v int64) []byte { return sleb([]byte{opI64Const}, v) }
func packed(ptr, n uint32) int64 {
	return int64(uint64(ptr)<<32 | uint64(n))
}
func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

// abiModule is a minimal ABI module whose classify and shape return
// result from memory, except that the first call on each instance runs
// first instead (first must return or trap itself; nil means none). The
// first-call trick proves a faulted instance is never reused: a reused
// instance would answer normally the second time.
func abiModule(result string, first []byte, opts ...func(*wmodule)) []byte {
	call := cat(
		i32c(flagAt), []byte{opI32Load, 2, 0, opI32Eqz, opIf, opBlockVoid},
		i32c(flagAt), i32c(1), []byte{opI32Store, 2, 0},
		first,
		[]byte{opEnd},
		i64c(packed(resultAt, uint32(len(result)))),
	)
	if first == nil {
		call = i64c(packed(resultAt, uint32(len(result))))
	}
	m := wmodule{
		memPages: 2,
		funcs: []wfunc{
			{export: wasm.ExportABIMarker, sig: sigVoid},
			{export: wasm.ExportAlloc, sig: sigAlloc, body: i32c(inputAt)},
			{export: wasm.ExportFree, sig: sigFree},
			{export: wasm.ExportClassify, sig: sigCall, body: call},
			{export: wasm.ExportShape, sig: sigCall, body: call},
		},
		data: []wdata{{resultAt, []byte(result)}},
	}
	for _, o := range opts {
		o(&m)
	}
	return m.bytes()
}

// Bodies for the first call of abiModule.
var (
	bodyTrap     = []byte{opUnreachable}
	bodyLoop     = []byte{opLoop, opBlockVoid, opBr, 0, opEnd, opUnreachable}
	bodyMemBomb  = cat([]byte{opLoop, opBlockVoid}, i32c(8), []byte{opMemoryGrow, 0}, i32c(-1), []byte{opI32Eq, opIf, opBlockVoid, opUnreachable, opEnd, opBr, 0, opEnd, opUnreachable})
	bodyGarbage  = cat(i64c(packed(resultAt+200, 9)), []byte{opReturn})
	bodyHuge     = cat(i64c(packed(resultAt, 1<<30)), []byte{opReturn})
	bodyOutside  = cat(i64c(packed(0xffff0000, 100)), []byte{opReturn})
	garbageBytes = wdata{resultAt + 200, []byte("\xffnot json")}
)

// withFunc changes the function exported as name.
func withFunc(name string, f func(*wfunc)) func(*wmodule) {
	return func(m *wmodule) {
		for i := range m.funcs {
			if m.funcs[i].export == name {
				f(&m.funcs[i])
				return
			}
		}
		panic(fmt.Sprintf("no function %s", name))
	}
}

// without drops the function exported as name.
func without(name string) func(*wmodule) {
	return func(m *wmodule) {
		for i := range m.funcs {
			if m.funcs[i].export == name {
				m.funcs[i].export = ""
			}
		}
	}
}
