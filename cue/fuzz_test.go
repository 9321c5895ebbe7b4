package cue

import "testing"

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
