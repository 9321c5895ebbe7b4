package bound

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// randomSchema writes a random schema of about size bytes: nested
// properties, items, anyOf, $defs, enums, defaults and long descriptions,
// some levels deep, some wide.
func randomSchema(r *rand.Rand, size int) []byte {
	var b bytes.Buffer
	var node func(depth int)
	node = func(depth int) {
		b.WriteString(`{"type":"object","description":`)
		b.WriteString(fmt.Sprintf("%q", strings.Repeat("word ", r.IntN(40))))
		if r.IntN(4) == 0 {
			b.WriteString(`,"enum":[`)
			for i := range r.IntN(30) {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `"v%d"`, i)
			}
			b.WriteByte(']')
		}
		if r.IntN(5) == 0 {
			fmt.Fprintf(&b, `,"default":{"a":[1,2,{"b":%q}]}`, strings.Repeat("x", r.IntN(200)))
		}
		if b.Len() < size && depth < 30 {
			key := []string{"properties", "$defs", "patternProperties"}[r.IntN(3)]
			b.WriteString(`,"` + key + `":{`)
			n := 1 + r.IntN(12)
			for i := range n {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `"p%d_%d":`, depth, i)
				if b.Len() < size {
					node(depth + 1)
				} else {
					b.WriteString(`{"type":"string"}`)
				}
			}
			b.WriteByte('}')
			if r.IntN(3) == 0 && b.Len() < size {
				b.WriteString(`,"items":`)
				node(depth + 1)
			}
			if r.IntN(3) == 0 && b.Len() < size {
				b.WriteString(`,"anyOf":[`)
				node(depth + 1)
				b.WriteString(`,{"type":"null"}]`)
			}
			fmt.Fprintf(&b, `,"required":["p%d_0"]`, depth)
		}
		b.WriteByte('}')
	}
	node(1)
	return b.Bytes()
}

// checkFit checks one FitSchema result: within max, one JSON object,
// unchanged when it fitted, and the note in it when it was cut.
func checkFit(t *testing.T, in []byte, max int, note string) (json.RawMessage, Fitted) {
	t.Helper()
	out, f := FitSchema(in, max, note)
	if len(out) > maxInt(max, 2) {
		t.Fatalf("%d bytes out for a bound of %d (in %d bytes): %.200s", len(out), max, len(in), out)
	}
	// Numbers stay text: a valid JSON number may overflow a float64.
	var v map[string]any
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil || dec.More() {
		t.Fatalf("not a JSON object: %v: %.300s", err, out)
	}
	if len(in) <= max && json.Valid(in) && bytes.HasPrefix(bytes.TrimSpace(in), []byte("{")) {
		if !bytes.Equal(out, in) || f.Cut() {
			t.Fatalf("a schema that fits was changed: %s -> %s", in, out)
		}
	}
	if f.Cut() && max > 200 && !bytes.Contains(out, []byte(note)) {
		t.Fatalf("a cut schema does not say where the rest is: %.300s", out)
	}
	return out, f
}

// TestFitSchemaAlwaysWithinTheBound: random schemas of every size, from
// small to many times the bound, come back within the bound as a JSON
// object, and keep as many levels whole as fit.
func TestFitSchemaAlwaysWithinTheBound(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 20))
	for i := range 300 {
		size := []int{500, 4 << 10, 20 << 10, 32 << 10, 100 << 10}[i%5]
		in := randomSchema(r, size)
		max := []int{16384, 4096, 1024, 300, 120, 2}[r.IntN(6)]
		out, f := checkFit(t, in, max, ", see read_cache mcpout_x")
		if f.Levels > 1 {
			// One level more would not have fitted.
			root, err := parseTree(in)
			if err != nil {
				t.Fatal(err)
			}
			if f.Levels < root.levels(1) && root.sized(1, f.Levels+1, ", see read_cache mcpout_x") <= max {
				t.Fatalf("kept %d levels where %d fit", f.Levels, f.Levels+1)
			}
			if n := root.sized(1, f.Levels, ", see read_cache mcpout_x"); n != len(out) {
				t.Fatalf("sized %d, rendered %d", n, len(out))
			}
		}
	}
}

// TestFitSchema32KB: a 32 KB schema against a 16 KiB bound keeps its top
// levels, names its properties, and says where the whole one is.
func TestFitSchema32KB(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i := range 40 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"field%02d":{"type":"object","description":"field %d","properties":{"inner":{"type":"string","description":%q}}}`,
			i, i, strings.Repeat("long text ", 70))
	}
	b.WriteString(`},"required":["field00"]}`)
	in := []byte(b.String())
	if len(in) < 30000 {
		t.Fatalf("the schema is only %d bytes", len(in))
	}
	out, f := checkFit(t, in, 16384, ", see read_cache mcpout_abc")
	if f.Levels != 2 || f.Members != 0 {
		t.Fatalf("fitted %+v: %s", f, out)
	}
	for _, want := range []string{`"field39":{"type":"object","description":"field 39","properties":{"inner":{"type":"string","description":"… cut: `, `"required":["field00"]`, "see read_cache mcpout_abc"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the cut schema has no %q: %s", want, out)
		}
	}
	// Too wide for even one level: the root keeps what fits and says so.
	out, f = checkFit(t, in, 600, "")
	if f.Members == 0 || !strings.Contains(string(out), `"$comment":"… cut: `) || !strings.Contains(string(out), `"field00":`) {
		t.Fatalf("fitted %+v: %s", f, out)
	}
}

// TestFitSchemaOddInput: not an object, not JSON, a bool schema, white
// space: always an object within the bound.
func TestFitSchemaOddInput(t *testing.T) {
	for _, in := range []string{``, `null`, `[1,2]`, `"x"`, `{`, `{"a":1}{}`, `true`, " {\"a\" : 1} ", `{"properties":{"a":true,"b":false}}`,
		`{"properties":[{"type":"string"}]}`, `{"anyOf":{"a":{"type":"string"}}}`, `{"items":[{"x":1},2]}`} {
		for _, max := range []int{0, 2, 10, 40, 200, 1 << 20} {
			checkFit(t, []byte(in), max, ", see read_cache mcpout_x")
		}
	}
}

// FuzzFitSchema: whatever the input and the bound, the result is one
// JSON object within the bound.
//
// Run it with: go test ./engine/internal/bound -run '^$' -fuzz FuzzFitSchema -fuzztime 60s
func FuzzFitSchema(f *testing.F) {
	r := rand.New(rand.NewPCG(2, 20))
	for _, s := range []string{`{"type":"object"}`, `{"properties":{"a":{"type":"string","description":"x"}}}`, `[]`, `{"items":{"items":{"items":{}}}}`} {
		f.Add([]byte(s), 16)
	}
	f.Add(randomSchema(r, 3000), 1000)
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		max = max % (64 << 10)
		if max < 0 {
			max = -max
		}
		checkFit(t, in, max, ", see read_cache mcpout_x")
	})
}
