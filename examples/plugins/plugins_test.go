// Package plugins_test runs the example plugins through the same host the
// gateway uses. The Go example is built by the test with the Go toolchain;
// the AssemblyScript example's .wasm is committed, so the test needs no
// npm.
package plugins_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/wasm"
)

func TestExamplePlugins(t *testing.T) {
	ctx := context.Background()
	h, err := wasm.NewHost(ctx, &wasm.Options{CacheDir: t.TempDir(), Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	builtin, err := h.Builtin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		file  string
		cases []struct {
			server, tool, risk, module string
		}
	}{
		{"go/classifier.wasm", []struct{ server, tool, risk, module string }{
			{"payments", "create_refund", "destructive", "go/classifier.wasm"},
			{"payments", "list_charges", "destructive", "go/classifier.wasm"},
			{"payments", "get_balance", "read", "builtin"},
			{"github", "delete_repo", "destructive", "builtin"},
			{"github", "frobnicate", "unknown", "builtin"},
		}},
		{"as/classifier.wasm", []struct{ server, tool, risk, module string }{
			{"prod-db", "list_tables", "destructive", "as/classifier.wasm"},
			{"staging", "deploy_dry_run", "read", "as/classifier.wasm"},
			{"staging", "deploy", "write", "builtin"},
			{"staging", "frobnicate", "unknown", "builtin"},
		}},
	}
	built := buildGoExample(t)
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.FromSlash(tt.file)
			if tt.file == "go/classifier.wasm" {
				path = built
			}
			bin, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			m, err := h.Load(ctx, tt.file, bin, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !m.CanClassify() || m.CanShape() {
				t.Fatalf("classify %v shape %v", m.CanClassify(), m.CanShape())
			}
			// The example goes first and defers to the built-in with unknown.
			chain := &wasm.Chain{Classifiers: []*wasm.Module{m, builtin}}
			for _, c := range tt.cases {
				got := chain.Classify(ctx, wasm.ClassifyInput{Server: c.server, Tool: c.tool})
				if got.Risk != c.risk || got.Module != c.module {
					t.Errorf("%s/%s: got %+v; want %s from %s", c.server, c.tool, got, c.risk, c.module)
				}
			}
		})
	}
}

// buildGoExample builds go/ for wasip1 the way its README says, into a
// temporary directory, and returns the module's path.
func buildGoExample(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "classifier.wasm")
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-trimpath", "-buildvcs=false", "-o", out, ".")
	cmd.Dir = "go"
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the Go example: %v\n%s", err, b)
	}
	return out
}
