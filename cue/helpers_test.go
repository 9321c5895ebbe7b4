package cue

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// testSchema compiles the schema once for the package's tests.
var testSchema = sync.OnceValue(func() *Schema {
	s, err := NewSchema()
	if err != nil {
		panic(err)
	}
	return s
})

// layers writes the given layer files under a fresh home and project and
// returns their locations. Keys are layers; values are file contents.
func layers(t testing.TB, files map[Layer]string) Locations {
	t.Helper()
	root := t.TempDir()
	loc := Locations{Home: filepath.Join(root, "home"), Project: filepath.Join(root, "project")}
	for layer, content := range files {
		p := loc.Path(layer)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return loc
}

// load loads the layers, trusting the project and linting.
func load(t testing.TB, files map[Layer]string) *Result {
	t.Helper()
	res, err := Load(context.Background(), layers(t, files), &Options{Schema: testSchema(), Approve: true, Lint: true})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// find returns the diagnostics with the given code.
func find(res *Result, code Code) []Diagnostic {
	var out []Diagnostic
	for _, d := range res.Diagnostics {
		if d.Code == code {
			out = append(out, d)
		}
	}
	return out
}

func dump(ds Diagnostics) string {
	var b strings.Builder
	for _, d := range ds {
		b.WriteString("\n  " + d.String())
	}
	return b.String()
}

func mustServer(t *testing.T, res *Result, id string) Server {
	t.Helper()
	s, ok := res.Config.Server(id)
	if !ok {
		t.Fatalf("server %q missing; have %d servers; diagnostics:%s", id, len(res.Config.Servers), dump(res.Diagnostics))
	}
	return s
}

func noErrors(t *testing.T, res *Result) {
	t.Helper()
	if res.Diagnostics.HasErrors() {
		t.Fatalf("unexpected errors:%s", dump(res.Diagnostics))
	}
}
