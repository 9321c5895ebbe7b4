package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// roundTripDetail is how plainDetail used to work, and the definition of
// its result: the whole Detail through json.Marshal and back (numbers as
// json.Number), then redacted.
func roundTripDetail(d map[string]any, redact func(string) string) map[string]any {
	out := func() map[string]any {
		b, err := json.Marshal(d)
		if err != nil {
			return nil
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var out map[string]any
		if err := dec.Decode(&out); err != nil {
			return nil
		}
		return out
	}()
	if out == nil {
		out = map[string]any{detailErrorKey: detailErrorText}
	}
	if redact == nil {
		return out
	}
	return redactValue(out, redact).(map[string]any)
}

type plainTestStruct struct {
	S   string         `json:"s"`
	N   int            `json:"n,omitempty"`
	F   float64        `json:"f"`
	M   map[string]any `json:"m,omitempty"`
	Ptr *plainTestStruct
}

type plainTestString string

// plainTestStrings hold secrets, HTML, escapes and invalid UTF-8, and no
// two become the same string once redacted.
func plainTestStrings() []string {
	return []string{
		"", "a", "plain text", "sk-SECRET", "token sk-SECRET here", "<b>&amp;</b>", "\u2028\u2029", "\t\n\"\\",
		"a\xff", "a\xfe", "\xed\xa0\x80", "\xc3", "héllo", "日本", "\x00\x1f", strings.Repeat("z", 300),
	}
}

// randomValue makes a value of any shape a caller may put in a Detail,
// with strings from strs.
func randomValue(r *rand.Rand, depth int, strs []string) any {
	n := 26
	if depth <= 0 {
		n = 19 // scalars only
	}
	str := func() string { return strs[r.IntN(len(strs))] }
	switch r.IntN(n) {
	case 0:
		return nil
	case 1:
		return str()
	case 2:
		return r.IntN(2) == 0
	case 3:
		return []json.Number{"", "0", "-0", "12.5e3", "1E+2", "01", "1x", "-", "1.", ".5", "1e", "1e+"}[r.IntN(12)]
	case 4:
		return int(r.Int64()) * []int{1, -1}[r.IntN(2)]
	case 5:
		return int8(r.Int())
	case 6:
		return int16(r.Int())
	case 7:
		return int32(r.Int())
	case 8:
		return []int64{math.MinInt64, math.MaxInt64, 0, r.Int64()}[r.IntN(4)]
	case 9:
		return uint(r.Uint64())
	case 10:
		return uint8(r.Uint64())
	case 11:
		return uint16(r.Uint64())
	case 12:
		return uint32(r.Uint64())
	case 13:
		return []uint64{math.MaxUint64, 0, r.Uint64()}[r.IntN(3)]
	case 14:
		fs := []float64{0, math.Copysign(0, -1), 1.5, 3, 1e21, 1e20, 1e-6, 1e-7, math.Pi, -2.5e-300, r.NormFloat64() * 1e10}
		if r.IntN(40) == 0 {
			fs = []float64{math.NaN(), math.Inf(1), math.Inf(-1)}
		}
		return fs[r.IntN(len(fs))]
	case 15:
		return float32(r.NormFloat64())
	case 16:
		return plainTestString(str())
	case 17:
		return uintptr(r.Uint64())
	case 18:
		return []json.RawMessage{nil, {}, json.RawMessage(` {"a": [1, 2.50, "sk-SECRET", {"<": null}]} `),
			json.RawMessage(`"x\u00e9"`), json.RawMessage(`[1,`), json.RawMessage(`{"\xff": "\xfe"}`), json.RawMessage(`1 2`)}[r.IntN(7)]
	case 19, 20:
		m := map[string]any{}
		for range r.IntN(5) {
			m[str()] = randomValue(r, depth-1, strs)
		}
		if r.IntN(10) == 0 {
			return map[string]any(nil)
		}
		return m
	case 21, 22:
		s := make([]any, r.IntN(5))
		for i := range s {
			s[i] = randomValue(r, depth-1, strs)
		}
		if r.IntN(10) == 0 {
			return []any(nil)
		}
		return s
	case 23:
		s := make([]string, r.IntN(4))
		for i := range s {
			s[i] = str()
		}
		if r.IntN(5) == 0 {
			return []string(nil)
		}
		return s
	case 24:
		m := map[string]string{}
		for range r.IntN(4) {
			m[str()] = str()
		}
		if r.IntN(5) == 0 {
			return map[string]string(nil)
		}
		return m
	default:
		s := plainTestStruct{S: str(), N: r.IntN(3), F: 0.5}
		if m, ok := randomValue(r, depth-1, strs).(map[string]any); ok {
			s.M = m
		}
		if r.IntN(2) == 0 {
			return &s
		}
		return s
	}
}

// TestPlainDetailMatchesRoundTrip checks that plainDetail gives exactly
// what a JSON round trip of the whole Detail gives, for details of every
// shape, with and without redaction, and leaves the caller's values as
// they were.
func TestPlainDetailMatchesRoundTrip(t *testing.T) {
	t.Parallel()
	redact := func(s string) string { return strings.ReplaceAll(s, "sk-SECRET", "[R]") }
	r := rand.New(rand.NewPCG(1, 2))
	strs := plainTestStrings()
	for i := range 20000 {
		d := map[string]any{}
		for range r.IntN(6) {
			d[strs[r.IntN(len(strs))]] = randomValue(r, 3, strs)
		}
		before := fmt.Sprintf("%#v", d)
		for _, red := range []func(string) string{nil, redact} {
			want := roundTripDetail(d, red)
			got := plainDetail(d, red)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("detail %d: %s\n got %#v\nwant %#v", i, before, got, want)
			}
		}
		if after := fmt.Sprintf("%#v", d); after != before {
			t.Fatalf("detail %d changed:\nbefore %s\n after %s", i, before, after)
		}
	}
}
