package wasm

import (
	"errors"
	"fmt"
)

// entryCheck is the instruction sequence put at the start of every
// function body: an empty loop, "loop end". It does nothing, but wazero,
// with termination on context done, checks at every loop header whether
// the module was closed, and closes it when the call's context is done.
const entryCheck = "\x03\x40\x0b"

// instrument returns a copy of a module whose every function body starts
// with entryCheck, so that a deadline is checked on every function entry
// as well as on every loop back-edge.
//
// wazero checks the deadline only at loop headers, in its compiler and its
// interpreter alike. A guest without a loop never looks: a function that
// calls itself twice per level, forty levels deep, makes 2^40 calls and
// runs for hours against a one-second deadline, and since wazero's
// compiled code is never preempted, the Go runtime cannot stop the world
// for a garbage collection meanwhile, so the whole process, signal
// handling included, waits with it. Every unbounded run of wasm code goes
// through either a back-edge or a call (recursion, mutual recursion, a
// tail call or a fan-out of calls), so with a check at both, the run that
// remains between two checks is one function body of straight-line code,
// bounded by the module's size.
//
// The empty loop does not move any branch: it closes before the body's
// own instructions start, so their label depths are unchanged. Only the
// code section changes; offsets in custom sections such as DWARF line
// tables, which no call depends on, may then point a little off.
//
// instrument also writes memPages, the module's page limit, as the
// maximum of its memory (or keeps the module's own maximum when that is
// lower), so that memory.grow past the limit fails in this module
// whatever the runtime's limit.
func instrument(bin []byte, memPages uint32) ([]byte, error) {
	r := &reader{b: bin}
	r.bytes(8) // magic and version, checked by inspect
	out := make([]byte, 0, len(bin)+len(bin)/16+64)
	out = append(out, bin[:8]...)
	for r.err == nil && r.off < len(bin) {
		start := r.off
		id := r.byte()
		size := r.u32()
		body := r.bytes(int(size))
		if r.err != nil {
			break
		}
		if id == 5 {
			mem, err := limitMemory(body, memPages)
			if err != nil {
				return nil, fmt.Errorf("memory section: %w", err)
			}
			out = append(out, id)
			out = appendU32(out, uint32(len(mem)))
			out = append(out, mem...)
			continue
		}
		if id != 10 {
			out = append(out, bin[start:r.off]...)
			continue
		}
		code, err := instrumentCode(body)
		if err != nil {
			return nil, fmt.Errorf("code section: %w", err)
		}
		out = append(out, id)
		out = appendU32(out, uint32(len(code)))
		out = append(out, code...)
	}
	if r.err != nil {
		return nil, r.err
	}
	return out, nil
}

// limitMemory rewrites the body of a memory section so that every memory
// has a maximum of at most limit pages: the lower of its own maximum, if
// it declares one, and limit. inspect has held the section to one
// memory, neither shared nor 64-bit, whose minimum is within limit.
func limitMemory(sec []byte, limit uint32) ([]byte, error) {
	s := &reader{b: sec}
	n := s.u32()
	out := appendU32(make([]byte, 0, len(sec)+5), n)
	for i := uint32(0); i < n && s.err == nil; i++ {
		flags := s.byte()
		lo := s.u32()
		hi := limit
		if flags&1 != 0 {
			hi = min(s.u32(), limit)
		}
		if s.err != nil {
			break
		}
		if flags&^1 != 0 || lo > hi {
			return nil, fmt.Errorf("memory %d: flags 0x%02x, minimum %d pages, limit %d pages", i, flags, lo, hi)
		}
		out = append(out, flags|1)
		out = appendU32(out, lo)
		out = appendU32(out, hi)
	}
	if s.err != nil {
		return nil, s.err
	}
	if s.off != len(sec) {
		return nil, errors.New("trailing bytes")
	}
	return out, nil
}

// instrumentCode rewrites the body of a code section.
func instrumentCode(sec []byte) ([]byte, error) {
	s := &reader{b: sec}
	n := s.u32()
	if s.err != nil || uint64(n) > uint64(len(sec)) { // each body takes two bytes at least
		return nil, fmt.Errorf("%d function bodies in %d bytes", n, len(sec))
	}
	out := make([]byte, 0, len(sec)+int(n)*(len(entryCheck)+1)+8)
	out = appendU32(out, n)
	for i := uint32(0); i < n && s.err == nil; i++ {
		fn := s.bytes(int(s.u32()))
		if s.err != nil {
			break
		}
		f := &reader{b: fn}
		for groups := f.u32(); groups > 0 && f.err == nil; groups-- {
			f.u32()  // count
			f.byte() // type
		}
		if f.err != nil {
			return nil, fmt.Errorf("function %d: locals: %w", i, f.err)
		}
		out = appendU32(out, uint32(len(fn)+len(entryCheck)))
		out = append(out, fn[:f.off]...)
		out = append(out, entryCheck...)
		out = append(out, fn[f.off:]...)
	}
	if s.err != nil {
		return nil, s.err
	}
	if s.off != len(sec) {
		return nil, errors.New("trailing bytes")
	}
	return out, nil
}

// appendU32 appends v as unsigned LEB128.
func appendU32(b []byte, v uint32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
