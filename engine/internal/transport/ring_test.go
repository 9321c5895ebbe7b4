package transport

import "testing"

func TestRing(t *testing.T) {
	r := NewRing(8)
	r.Write(nil)
	if len(r.Bytes()) != 0 || r.buf != nil {
		t.Error("an empty write allocated or stored")
	}
	r.Write([]byte("abc"))
	r.Write([]byte("defghij"))
	if got := string(r.Bytes()); got != "cdefghij" {
		t.Errorf("ring = %q", got)
	}
	r.Write([]byte("0123456789xyz"))
	if got := string(r.Bytes()); got != "56789xyz" || r.Total() != 23 {
		t.Errorf("ring = %q total %d", got, r.Total())
	}
}
