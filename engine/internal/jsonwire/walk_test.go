package jsonwire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// walkStep is a Step decoded, for comparing.
type walkStep struct {
	key  string
	elem bool
}

// walkEvent is one call of a walk's fn, decoded: the path, the key, and
// the string value when the member's value is a string.
type walkEvent struct {
	path  []walkStep
	key   string
	isStr bool
	str   string
}

func (e walkEvent) String() string {
	var b strings.Builder
	for _, s := range e.path {
		if s.elem {
			b.WriteString("[]")
		} else {
			fmt.Fprintf(&b, "%q.", s.key)
		}
	}
	fmt.Fprintf(&b, "%q", e.key)
	if e.isStr {
		fmt.Fprintf(&b, "=%q", e.str)
	}
	return b.String()
}

func equalEvents(a, b []walkEvent) bool {
	return slices.EqualFunc(a, b, func(x, y walkEvent) bool {
		return slices.Equal(x.path, y.path) && x.key == y.key && x.isStr == y.isStr && x.str == y.str
	})
}

// walkEvents walks data with w and returns the first limit events (all
// when limit is below 0), decoded with AppendUnescaped.
func walkEvents(w *Walker, data []byte, limit int) []walkEvent {
	var out []walkEvent
	w.Walk(data, func(path []Step, key, str []byte) bool {
		if limit >= 0 && len(out) == limit {
			return false
		}
		e := walkEvent{key: string(AppendUnescaped(nil, key)), isStr: str != nil}
		if str != nil {
			e.str = string(AppendUnescaped(nil, str))
		}
		for _, s := range path {
			if s.Elem != (s.Key == nil) {
				panic("a step is an element or has a key, never both nor neither")
			}
			e.path = append(e.path, walkStep{key: string(AppendUnescaped(nil, s.Key)), elem: s.Elem})
		}
		out = append(out, e)
		return true
	})
	return out
}

// decoderEvents is what Walk must report of data, valid JSON, computed
// with encoding/json's Decoder, which decodes strings as json.Unmarshal
// does: every object member in document order, stopping where a walk
// with maxDepth stops.
func decoderEvents(t *testing.T, data []byte, maxDepth int) []walkEvent {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // a number no float64 holds is still valid JSON
	token := func() json.Token {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("valid JSON %q: %v", data, err)
		}
		return tok
	}
	root, ok := token().(json.Delim)
	if !ok {
		return nil // a scalar root: no member
	}
	var out []walkEvent
	stack := []bool{root == '{'}
	var path []walkStep
	for len(stack) > 0 {
		obj := stack[len(stack)-1]
		if !dec.More() {
			token() // the closing delimiter
			stack = stack[:len(stack)-1]
			if len(path) > 0 {
				path = path[:len(path)-1]
			}
			continue
		}
		var key string
		step := walkStep{elem: true}
		if obj {
			key = token().(string)
			step = walkStep{key: key}
		}
		switch v := token().(type) {
		case json.Delim:
			if len(stack) >= maxDepth {
				return out
			}
			if obj {
				out = append(out, walkEvent{path: slices.Clone(path), key: key})
			}
			stack = append(stack, v == '{')
			path = append(path, step)
		case string:
			if obj {
				out = append(out, walkEvent{path: slices.Clone(path), key: key, isStr: true, str: v})
			}
		default:
			if obj {
				out = append(out, walkEvent{path: slices.Clone(path), key: key})
			}
		}
	}
	return out
}

// checkWalk compares Walk with encoding/json on data, with the default
// depth and with a small one, and checks that a walk stopped by fn
// reports a prefix of a whole one.
func checkWalk(t *testing.T, w *Walker, data []byte) {
	valid := json.Valid(data)
	for _, depth := range []int{0, 3} {
		w.MaxDepth = depth
		got := walkEvents(w, data, -1)
		if valid {
			want := decoderEvents(t, data, cmpDepth(depth))
			if !equalEvents(got, want) {
				t.Fatalf("depth %d, %q:\nwalk    %v\ndecoder %v", depth, data, got, want)
			}
		}
		half := walkEvents(w, data, len(got)/2)
		if !equalEvents(half, got[:len(got)/2]) {
			t.Fatalf("depth %d, %q: a walk stopped after %d members reports %v, a whole one %v", depth, data, len(got)/2, half, got)
		}
	}
}

func cmpDepth(d int) int {
	if d <= 0 {
		return DefaultMaxDepth
	}
	return d
}

var walkSeeds = []string{
	`{"type":"object","properties":{"owner":{"type":"string"},"repo":{"type":"string","description":"caf\u00e9 \"quoted\" \\ back"}}}`,
	`{"a":[1,"x",{"b":null,"c":[true,false,{"d":"e"}]}],"properties":{"c":true},"n":-1.5e+300}`,
	`[{"properties":{"a":{}}},"s",[],{}]`,
	` { "k" : "v" , "e" : "" , "u" : "\ud83d\ude00 \ud800 lone" } `,
	"{\"bad utf8\xff\":\"\xfe\xff\",\"ok\":1}",
	`{"a":{"b":{"c":{"d":{"e":"deep"}}},"f":"after"}}`,
	`{"dup":"1","dup":"2"}`,
	`"scalar root"`,
	`42`,
	`{"properties":{"a":{},"b":{"type":`,
	`{"a" "b"}`,
	`{"a":1 "b":2}`,
	`{"a":"\"}`,
	`[`,
	``,
}

func TestWalk(t *testing.T) {
	var w Walker
	for _, s := range walkSeeds {
		checkWalk(t, &w, []byte(s))
	}
	// What a walk reports, spelled out.
	got := walkEvents(nil, []byte(`{"a":{"b":"x","c":[{"d":1}]},"e":"\u00e9"}`), -1)
	want := `["a" "a"."b"="x" "a"."c" "a"."c".[]"d" "e"="é"]`
	if s := fmt.Sprint(got); s != want {
		t.Errorf("walk: %s, want %s", s, want)
	}
	// Broken input reports the members before the break, and nothing after.
	got = walkEvents(nil, []byte(`{"a":"x","b":{"c":1,]},"d":"y"}`), -1)
	if s := fmt.Sprint(got); s != `["a"="x" "b" "b"."c"]` {
		t.Errorf("broken input: %s", s)
	}
}

func TestWalkDepth(t *testing.T) {
	// Deep nesting stops the walk at MaxDepth without recursing.
	deep := []byte(`{"a":"x","b":` + strings.Repeat(`{"b":`, 100000) + `{}`)
	got := walkEvents(nil, deep, -1)
	if len(got) != DefaultMaxDepth || got[0].key != "a" {
		t.Errorf("deep: %d members reported, want %d", len(got), DefaultMaxDepth)
	}
	if n := len(walkEvents(nil, []byte(strings.Repeat("[", 1<<20)), -1)); n != 0 {
		t.Errorf("nested arrays: %d members", n)
	}
	// The root and "a" are open: "b" would be a third.
	w := Walker{MaxDepth: 2}
	if s := fmt.Sprint(walkEvents(&w, []byte(`{"a":{"b":{"c":1}},"d":2}`), -1)); s != `["a"]` {
		t.Errorf("MaxDepth 2: %s", s)
	}
}

func TestAppendUnescaped(t *testing.T) {
	for raw, want := range map[string]string{
		`plain`:               "plain",
		`caf\u00e9`:           "café",
		`a\"b\\c\/d\n\t`:      "a\"b\\c/d\n\t",
		`\ud83d\ude00`:        "😀",
		`\ud800`:              "\ufffd",
		"bad \xff utf8":       "bad \ufffd utf8",
		`broken \x escape`:    "",
		`unterminated \`:      "",
		"raw\x01 \\n":         "",
		``:                    "",
		"tab\tinside (raw)":   "tab\tinside (raw)",
		"ok \u00e9 raw UTF-8": "ok é raw UTF-8",
	} {
		if got := string(AppendUnescaped([]byte("pre:"), []byte(raw))); got != "pre:"+want {
			t.Errorf("AppendUnescaped(%q) = %q, want %q", raw, got, "pre:"+want)
		}
	}
}

// FuzzWalk is the walker's differential fuzzer: on valid JSON, the
// members a walk reports, their paths, keys and string values decoded
// with AppendUnescaped, are exactly what encoding/json's Decoder decodes
// (json.Unmarshal's string decoding), up to where the walk's depth limit
// stops it; on any input, a walk never panics and a walk stopped early
// reports a prefix of a whole one.
func FuzzWalk(f *testing.F) {
	for _, s := range walkSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var w Walker
		checkWalk(t, &w, data)
	})
}
