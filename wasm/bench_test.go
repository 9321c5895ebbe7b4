package wasm_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/voltmcp/voltmcp/wasm"
)

// Run with: go test -run '^$' -bench . -benchmem -count 5 ./wasm/
// (benchstat-friendly; GOMAXPROCS is 2 for BenchmarkPool).

var benchTool = wasm.ClassifyInput{Server: "github", Tool: "create_issue", Description: "Create an issue in a repository.",
	InputSchema: []byte(`{"type":"object","properties":{"owner":{"type":"string"},"repo":{"type":"string"},"title":{"type":"string"}}}`)}

func BenchmarkClassify(b *testing.B) {
	ctx := context.Background()
	m := builtin(b)
	for b.Loop() {
		if _, err := m.Classify(ctx, benchTool); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkClassifyAS is the AssemblyScript example, for comparison: a
// small guest without a language runtime.
func BenchmarkClassifyAS(b *testing.B) {
	ctx := context.Background()
	h, _ := newHost(b, wasm.Options{})
	bin, err := os.ReadFile(filepath.Join("..", "examples", "plugins", "as", "classifier.wasm"))
	if err != nil {
		b.Fatal(err)
	}
	m := load(b, h, "as", bin)
	for b.Loop() {
		if _, err := m.Classify(ctx, benchTool); err != nil {
			b.Fatal(err)
		}
	}
}

// noisyText is n bytes of tool output with colour codes and long lines.
func noisyText(n int) string {
	line := "\x1b[32mINFO\x1b[0m  2026-01-02T03:04:05Z  request served in 12ms path=/api/v1/items?page=3 status=200\n"
	return strings.Repeat(line, n/len(line)+1)[:n]
}

func BenchmarkShape(b *testing.B) {
	ctx := context.Background()
	m := builtin(b)
	for _, size := range []struct {
		name string
		n    int
	}{{"1KB", 1 << 10}, {"50KB", 50 << 10}, {"1MB", 1 << 20}} {
		in := wasm.ShapeInput{Server: "s", Tool: "logs", Risk: "read", Content: []wasm.Content{{Type: "text", Text: noisyText(size.n)}},
			Limits: wasm.Limits{MaxBytes: 64 << 10, MaxLines: 2000}}
		b.Run(size.name, func(b *testing.B) {
			b.SetBytes(int64(size.n))
			for b.Loop() {
				if _, err := m.Shape(ctx, in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCompile measures the built-in module's compilation: cold (no
// cache) and from a warm file cache in a new Host, as a new process sees.
func BenchmarkCompile(b *testing.B) {
	ctx := context.Background()
	compile := func(b *testing.B, dir string) {
		h, err := wasm.NewHost(ctx, &wasm.Options{CacheDir: dir})
		if err != nil {
			b.Fatal(err)
		}
		defer h.Close(ctx)
		m, err := h.Builtin(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := m.Compile(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			compile(b, "")
		}
	})
	b.Run("filecache", func(b *testing.B) {
		dir := b.TempDir()
		compile(b, dir) // warm
		for b.Loop() {
			compile(b, dir)
		}
	})
}

// BenchmarkPool runs classify from 2 goroutines on a pool of 2 instances;
// ns/op is wall time per call, so calls/s is 1e9 / (ns/op).
func BenchmarkPool(b *testing.B) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	ctx := context.Background()
	h, _ := newHost(b, wasm.Options{PoolSize: 2})
	m, err := h.Builtin(ctx)
	if err != nil {
		b.Fatal(err)
	}
	// Start both instances before timing.
	done := make(chan error, 2)
	for range 2 {
		go func() { _, err := m.Classify(ctx, benchTool); done <- err }()
	}
	for range 2 {
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
	b.SetParallelism(1)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := m.Classify(ctx, benchTool); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkCall is one classify or shape call on a module compiled
// beforehand, so that ns/op is what a call costs the gateway: alloc,
// call, copy and frees on the server's idle instance, and for the
// new-server cases starting a fresh instance and closing one. Compare
// builds with benchstat.
func BenchmarkCall(b *testing.B) {
	ctx := context.Background()
	h, _ := newHost(b, wasm.Options{})
	bi, err := h.Builtin(ctx)
	if err != nil {
		b.Fatal(err)
	}
	bin, err := os.ReadFile(filepath.Join("..", "examples", "plugins", "as", "classifier.wasm"))
	if err != nil {
		b.Fatal(err)
	}
	as := load(b, h, "as", bin)
	turn := 0
	nextServer := func() wasm.ClassifyInput {
		in := benchTool
		in.Server = fmt.Sprint("server-", turn%(2*wasm.DefaultIdleInstances))
		turn++
		return in
	}
	shapeIn := wasm.ShapeInput{Server: "s", Tool: "logs", Risk: "read", Content: []wasm.Content{{Type: "text", Text: noisyText(1 << 10)}},
		Limits: wasm.Limits{MaxBytes: 64 << 10, MaxLines: 2000}}
	for _, bc := range []struct {
		name string
		call func() error
	}{
		{"classify-builtin", func() error { _, err := bi.Classify(ctx, benchTool); return err }},
		{"classify-as", func() error { _, err := as.Classify(ctx, benchTool); return err }},
		{"shape-builtin-1KB", func() error { _, err := bi.Shape(ctx, shapeIn); return err }},
		// More servers in turn than a module keeps idle instances for: every
		// call starts a fresh instance.
		{"classify-builtin-new-server", func() error { _, err := bi.Classify(ctx, nextServer()); return err }},
		{"classify-as-new-server", func() error { _, err := as.Classify(ctx, nextServer()); return err }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if err := bc.call(); err != nil { // compiles, and warms the file cache
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := bc.call(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
