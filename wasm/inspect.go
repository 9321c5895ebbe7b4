package wasm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// Value types of the wasm binary format.
const (
	valI32 = 0x7f
	valI64 = 0x7e
)

// funcType is a function signature.
type funcType struct {
	params, results []byte
}

func (t funcType) String() string {
	name := func(vs []byte) string {
		s := make([]string, len(vs))
		for i, v := range vs {
			switch v {
			case valI32:
				s[i] = "i32"
			case valI64:
				s[i] = "i64"
			case 0x7d:
				s[i] = "f32"
			case 0x7c:
				s[i] = "f64"
			default:
				s[i] = fmt.Sprintf("0x%02x", v)
			}
		}
		return "(" + strings.Join(s, ", ") + ")"
	}
	return name(t.params) + " -> " + name(t.results)
}

func (t funcType) is(params, results []byte) bool {
	return string(t.params) == string(params) && string(t.results) == string(results)
}

// shape is what inspect learns of a module without compiling or running
// it: enough to hold it to the ABI.
type shape struct {
	classify, shape bool
	memMinPages     uint32
}

// inspect checks a module's imports and exports against ABI version 1 and
// reports which functions it offers. It reads only the type, import,
// function, memory and export sections; wazero validates the rest when it
// compiles the module.
func inspect(bin []byte, memLimit uint32) (shape, error) {
	var sh shape
	r := &reader{b: bin}
	if string(r.bytes(4)) != "\x00asm" {
		return sh, errors.New("not a wasm binary (bad magic)")
	}
	if v := r.bytes(4); r.err == nil && binary.LittleEndian.Uint32(v) != 1 {
		return sh, fmt.Errorf("unsupported wasm binary version %d", binary.LittleEndian.Uint32(v))
	}
	var (
		types    []funcType
		funcs    []uint32 // type index of every function, imports first
		exports  = map[string]struct{ kind, index uint32 }{}
		memories int
		hasMem   bool
	)
	for r.err == nil && r.off < len(bin) {
		id := r.byte()
		size := r.u32()
		body := r.bytes(int(size))
		if r.err != nil {
			break
		}
		s := &reader{b: body}
		switch id {
		case 1: // type
			for n := s.u32(); n > 0 && s.err == nil; n-- {
				if s.byte() != 0x60 {
					return sh, errors.New("type section: not a function type")
				}
				p := s.bytes(int(s.u32()))
				res := s.bytes(int(s.u32()))
				types = append(types, funcType{params: p, results: res})
			}
		case 2: // import
			for n := s.u32(); n > 0 && s.err == nil; n-- {
				mod, name := s.name(), s.name()
				kind := s.byte()
				if s.err != nil {
					break
				}
				if kind != 0 {
					return sh, fmt.Errorf("imports %s %q.%q: a plugin may import only functions of %s", importKind(kind), mod, name, ImportModuleWASI)
				}
				if mod != ImportModuleWASI {
					return sh, fmt.Errorf("imports %q.%q: a plugin may import only functions of %s", mod, name, ImportModuleWASI)
				}
				funcs = append(funcs, s.u32())
			}
		case 3: // function
			for n := s.u32(); n > 0 && s.err == nil; n-- {
				funcs = append(funcs, s.u32())
			}
		case 5: // memory
			for n := s.u32(); n > 0 && s.err == nil; n-- {
				memories++
				flags := s.byte()
				if flags&^1 != 0 {
					return sh, fmt.Errorf("memory: shared or 64-bit memories are not supported (flags 0x%02x)", flags)
				}
				sh.memMinPages = s.u32()
				if flags&1 != 0 {
					s.u32()
				}
			}
		case 7: // export
			for n := s.u32(); n > 0 && s.err == nil; n-- {
				name := s.name()
				kind := uint32(s.byte())
				exports[name] = struct{ kind, index uint32 }{kind, s.u32()}
				if kind == 2 && name == ExportMemory {
					hasMem = true
				}
			}
		}
		if s.err != nil {
			return sh, fmt.Errorf("section %d: %w", id, s.err)
		}
	}
	if r.err != nil {
		return sh, r.err
	}
	if !hasMem || memories != 1 {
		return sh, fmt.Errorf("must define and export one memory named %q", ExportMemory)
	}
	if memLimit > 0 && sh.memMinPages > memLimit {
		return sh, fmt.Errorf("memory needs at least %d pages, over the limit of %d pages", sh.memMinPages, memLimit)
	}
	sig := func(name string) (funcType, bool, error) {
		e, ok := exports[name]
		if !ok {
			return funcType{}, false, nil
		}
		if e.kind != 0 {
			return funcType{}, true, fmt.Errorf("export %q is not a function", name)
		}
		if int(e.index) >= len(funcs) || int(funcs[e.index]) >= len(types) {
			return funcType{}, true, fmt.Errorf("export %q: bad function index", name)
		}
		return types[funcs[e.index]], true, nil
	}
	for name := range exports {
		if strings.HasPrefix(name, abiMarkerPrefix) && name != ExportABIMarker {
			return sh, fmt.Errorf("exports ABI marker %q but this host speaks ABI version %d (%s)", name, ABIVersion, ExportABIMarker)
		}
	}
	want := []struct {
		name            string
		params, results []byte
		required        bool
		found           *bool
	}{
		{ExportABIMarker, nil, nil, true, nil},
		{ExportAlloc, []byte{valI32}, []byte{valI32}, true, nil},
		{ExportFree, []byte{valI32, valI32}, nil, true, nil},
		{ExportInitialize, nil, nil, false, nil},
		{ExportClassify, []byte{valI32, valI32}, []byte{valI64}, false, &sh.classify},
		{ExportShape, []byte{valI32, valI32}, []byte{valI64}, false, &sh.shape},
	}
	for _, w := range want {
		t, ok, err := sig(w.name)
		if err != nil {
			return sh, err
		}
		if !ok {
			if w.required {
				return sh, fmt.Errorf("missing export %q (ABI version %d)", w.name, ABIVersion)
			}
			continue
		}
		if !t.is(w.params, w.results) {
			return sh, fmt.Errorf("export %q has signature %s, want %s", w.name, t, funcType{w.params, w.results})
		}
		if w.found != nil {
			*w.found = true
		}
	}
	if !sh.classify && !sh.shape {
		return sh, fmt.Errorf("exports neither %q nor %q", ExportClassify, ExportShape)
	}
	return sh, nil
}

func importKind(k byte) string {
	switch k {
	case 1:
		return "a table"
	case 2:
		return "a memory"
	case 3:
		return "a global"
	}
	return fmt.Sprintf("kind %d", k)
}

// reader decodes the wasm binary format; the first error sticks.
type reader struct {
	b   []byte
	off int
	err error
}

var errTruncated = errors.New("truncated wasm binary")

func (r *reader) byte() byte {
	if r.err != nil || r.off >= len(r.b) {
		r.fail()
		return 0
	}
	c := r.b[r.off]
	r.off++
	return c
}

func (r *reader) bytes(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.b)-r.off {
		r.fail()
		return nil
	}
	s := r.b[r.off : r.off+n]
	r.off += n
	return s
}

// u32 reads an unsigned LEB128 number of at most 32 bits.
func (r *reader) u32() uint32 {
	var v uint32
	for shift := 0; shift < 35; shift += 7 {
		c := r.byte()
		if r.err != nil {
			return 0
		}
		v |= uint32(c&0x7f) << shift
		if c&0x80 == 0 {
			return v
		}
	}
	if r.err == nil {
		r.err = errors.New("malformed LEB128 number")
	}
	return 0
}

func (r *reader) name() string { return string(r.bytes(int(r.u32()))) }

func (r *reader) fail() {
	if r.err == nil {
		r.err = errTruncated
	}
}
