package wasm

import (
	"bytes"
	"testing"
)

// FuzzInstrument feeds instrument arbitrary bytes after a wasm header: it
// must never panic, and whatever it accepts must keep every section but
// the code section byte for byte.
func FuzzInstrument(f *testing.F) {
	f.Add([]byte{10, 4, 1, 2, 0, 0x0b})
	f.Add([]byte{10, 5, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add([]byte{1, 4, 1, 0x60, 0, 0, 10, 6, 1, 4, 1, 1, 0x7f, 0x0b})
	f.Fuzz(func(t *testing.T, body []byte) {
		bin := append([]byte("\x00asm\x01\x00\x00\x00"), body...)
		out, err := instrument(bin)
		if err != nil {
			return
		}
		if !bytes.Equal(out[:8], bin[:8]) || len(out) < len(bin) {
			t.Fatalf("instrument changed the header or shrank the module: %x -> %x", bin, out)
		}
	})
}
