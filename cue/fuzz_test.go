package cue

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoad feeds arbitrary bytes to the loader as every layer at once. It
// must never panic, and every diagnostic must point inside its file.
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
	s := testSchema()
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		root := t.TempDir()
		loc := Locations{Home: filepath.Join(root, "h"), Project: filepath.Join(root, "p")}
		for _, l := range layerOrder {
			p := loc.Path(l)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		res, err := Load(context.Background(), loc, &Options{Schema: s, Approve: true, Lint: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range res.Diagnostics {
			if d.Offset < 0 || d.Offset > len(data) || d.Code == "" || d.Message == "" {
				t.Fatalf("bad diagnostic %+v", d)
			}
		}
		_ = res.Config.Redacted()
	})
}
