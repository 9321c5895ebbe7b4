package wasm

import (
	"bytes"
	"testing"
)

// FuzzInstrument feeds instrument arbitrary bytes after a wasm header: it
// must never panic, and whatever it accepts must keep the header and
// every section but the code and memory sections byte for byte, and
// never shrink the code.
func FuzzInstrument(f *testing.F) {
	f.Add([]byte{10, 4, 1, 2, 0, 0x0b})
	f.Add([]byte{10, 5, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add([]byte{1, 4, 1, 0x60, 0, 0, 10, 6, 1, 4, 1, 1, 0x7f, 0x0b})
	f.Add([]byte{5, 3, 1, 0, 2, 10, 4, 1, 2, 0, 0x0b})
	f.Add([]byte{5, 4, 1, 1, 2, 0x80, 10, 4, 1, 2, 0, 0x0b})
	f.Fuzz(func(t *testing.T, body []byte) {
		bin := append([]byte("\x00asm\x01\x00\x00\x00"), body...)
		out, err := instrument(bin, 64)
		if err != nil {
			return
		}
		if !bytes.Equal(out[:8], bin[:8]) {
			t.Fatalf("instrument changed the header: %x -> %x", bin, out)
		}
		inOther, inCode := splitSections(t, bin)
		outOther, outCode := splitSections(t, out)
		if !bytes.Equal(inOther, outOther) || len(outCode) < len(inCode) {
			t.Fatalf("instrument changed a section other than code and memory, or shrank the code: %x -> %x", bin, out)
		}
	})
}

// splitSections returns the sections of a module that instrument keeps
// as they are, and the code sections' bodies.
func splitSections(t *testing.T, bin []byte) (other, code []byte) {
	r := &reader{b: bin, off: 8}
	for r.err == nil && r.off < len(bin) {
		start := r.off
		id := r.byte()
		body := r.bytes(int(r.u32()))
		switch {
		case r.err != nil:
			t.Fatalf("instrument accepted or wrote a truncated module: %x", bin)
		case id == 10:
			code = append(code, body...)
		case id != 5:
			other = append(other, bin[start:r.off]...)
		}
	}
	return other, code
}

// TestLimitMemory writes the page limit as a memory's maximum, keeping a
// lower maximum the module declares.
func TestLimitMemory(t *testing.T) {
	for _, tt := range []struct {
		name     string
		sec      []byte
		limit    uint32
		want     []byte
		wantFail bool
	}{
		{"no maximum", []byte{1, 0, 2}, 64, []byte{1, 1, 2, 64}, false},
		{"higher maximum", []byte{1, 1, 2, 0x80, 0x02}, 64, []byte{1, 1, 2, 64}, false},
		{"lower maximum", []byte{1, 1, 2, 8}, 64, []byte{1, 1, 2, 8}, false},
		{"large limit", []byte{1, 0, 2}, 65536, []byte{1, 1, 2, 0x80, 0x80, 0x04}, false},
		{"minimum over the limit", []byte{1, 0, 65}, 64, nil, true},
		{"shared", []byte{1, 3, 1, 2}, 64, nil, true},
		{"trailing bytes", []byte{1, 0, 2, 0}, 64, nil, true},
		{"truncated", []byte{1, 1, 2}, 64, nil, true},
	} {
		got, err := limitMemory(tt.sec, tt.limit)
		if (err != nil) != tt.wantFail || !bytes.Equal(got, tt.want) {
			t.Errorf("%s: limitMemory(%x, %d) = %x, %v; want %x, failure %v", tt.name, tt.sec, tt.limit, got, err, tt.want, tt.wantFail)
		}
	}
}
