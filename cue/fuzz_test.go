package cue

import (
	"bytes"
	"errors"
	"slices"
	"strconv"
	"testing"
)

// FuzzLoad feeds arbitrary bytes to the loader as every layer at once. It
// must never panic, and every diagnostic must point inside its file.
// Run it with: go test ./cue -run '^$' -fuzz FuzzLoad -fuzztime 60s
func FuzzLoad(f *testing.F) {
	for _, seed := range []string{
		`{"version":1,"settings":{"maxOutputBytes":4096},"servers":{"a":{"command":"x","args":["-y","p@1.0.0"],"env":{"A":"${env:B}"}}}}`,
		`{"mcpServers":{"a":{"type":"http","url":"https://x.example","headers":{"Authorization":"Bearer ${T}"}}}}`,
		`{"servers":{"a":{"type":"sse","url":"http://10.0.0.1/sse"}},"inputs":[]}`,
		`{"servers":{"a":null,"B":{"enabled":false,"auth":{"type":"oauth","flow":"device"}}}}`,
		`{"servers":{"a":{"url":"https://x","auth":{"type":"bearer"}},"A":{}}}`,
		`{"a":[1,2,{"b":null}],"a":"dup"}`, `[`, `{"servers":{"x":{"env":{"1":2}}}}`, "\ufeff{}",
	} {
		f.Add([]byte(seed))
	}
	o, err := prepare(&Options{Schema: testSchema(), Approve: true, Lint: true})
	if err != nil {
		f.Fatal(err)
	}
	loc := Locations{Home: "home", Project: "project"}
	f.Fuzz(func(t *testing.T, data []byte) {
		// The same bytes as every layer, parsed in memory: the fuzzer
		// spends its time in the loader, not the file system.
		var d diags
		var docs []*layerDoc
		for _, l := range layerOrder {
			ld := &layerDoc{status: &FileStatus{Layer: l, Path: loc.Path(l), Found: true},
				src: newSource(loc.Path(l), l, data), baseDir: "base"}
			docs = append(docs, o.Schema.parseLayer(ld, &d))
		}
		res := o.assemble(docs, loc, &d)
		for _, d := range res.Diagnostics {
			if d.Offset < 0 || d.Offset > len(data) || d.Code == "" || d.Message == "" {
				t.Fatalf("bad diagnostic %+v", d)
			}
		}
		_ = res.Config.Redacted()
	})
}

// FuzzSizeGuard checks the parser's bounds on untrusted config: a file
// built from a prefix and a unit repeated up to 65,535 times (each '#' of
// the unit replaced by the repetition's number, so that keys differ)
// either fails
// (a limit error points inside the file) or parses into a tree within
// MaxServers servers a map, MaxValues values and maxPathBytes of paths.
// Run it with: go test ./cue -run '^$' -fuzz FuzzSizeGuard -fuzztime 60s
func FuzzSizeGuard(f *testing.F) {
	f.Add([]byte(`{"servers":{"a":{"command":"x"}`), []byte(`,"s#":{"command":"x"}`), uint16(1200))
	f.Add([]byte(`{"mcpServers":{"a":{}`), []byte(`,"a#":{}`), uint16(1000))
	f.Add([]byte(`{"x-a":[0`), []byte(`,0`), uint16(20000))
	f.Add([]byte(`{"x-kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk":[0`), []byte(`,[0]`), uint16(60000))
	f.Add([]byte(`{"servers":{`), []byte(`{`), uint16(100))
	f.Fuzz(func(t *testing.T, prefix, unit []byte, reps uint16) {
		if len(prefix)+(len(unit)+5*bytes.Count(unit, []byte("#")))*int(reps) > MaxFileSize {
			return
		}
		data := append([]byte(nil), prefix...)
		for i := range int(reps) {
			data = append(data, bytes.ReplaceAll(unit, []byte("#"), []byte(strconv.Itoa(i)))...)
		}
		// Close what is open, so that most inputs are whole documents.
		for _, c := range slices.Backward(openers(data)) {
			data = append(data, c)
		}
		doc, _, err := parseJSON(newSource("f", LayerFile, data))
		var le *limitError
		if errors.As(err, &le) {
			if le.off < 0 || le.off > len(data) || le.msg == "" {
				t.Fatalf("limit error %+v outside a %d byte file", le, len(data))
			}
			return
		}
		if err != nil {
			return
		}
		var values, pathBytes int
		var walk func(n *node, depth int)
		walk = func(n *node, depth int) {
			values++
			pathBytes += len(n.path)
			if depth == 1 && n.kind == kindObject && (n.path == "servers" || n.path == "mcpServers") && len(n.fields) > MaxServers {
				t.Fatalf("%s holds %d servers", n.path, len(n.fields))
			}
			for _, fl := range n.fields {
				walk(fl.value, depth+1)
			}
			for _, it := range n.items {
				walk(it, depth+1)
			}
		}
		walk(doc, 0)
		if values > MaxValues || pathBytes > maxPathBytes {
			t.Fatalf("parsed %d values, %d path bytes", values, pathBytes)
		}
	})
}

// openers returns the closing brackets for the objects and arrays data
// leaves open, innermost last, ignoring brackets inside strings.
func openers(data []byte) []byte {
	var stack []byte
	inString, escaped := false, false
	for _, c := range data {
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case inString && c == '"':
			inString = false
		case inString:
		case c == '"':
			inString = true
		case c == '{':
			stack = append(stack, '}')
		case c == '[':
			stack = append(stack, ']')
		case (c == '}' || c == ']') && len(stack) > 0:
			stack = stack[:len(stack)-1]
		}
	}
	return stack
}
