package npmpeers

import (
	"encoding/binary"
	"testing"
)

func TestLoopbackHex(t *testing.T) {
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("the cases are written for a little-endian host")
	}
	for _, c := range []struct {
		hex  string
		want bool
	}{
		{"0100007F", true},                          // 127.0.0.1
		{"00000000", false},                         // 0.0.0.0
		{"7F030201", false},                         // 1.2.3.127
		{"00000000000000000000000001000000", true},  // ::1
		{"00000000000000000000000000000000", false}, // ::
		{"0000000000000000FFFF00000100007F", true},  // ::ffff:127.0.0.1
		{"0000000000000000FFFF00000A00000A", false}, // ::ffff:10.0.0.10
		{"nothex", false},
	} {
		if got := loopbackHex(c.hex); got != c.want {
			t.Errorf("loopbackHex(%s) = %v, want %v", c.hex, got, c.want)
		}
	}
}
