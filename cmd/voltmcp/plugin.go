package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/engine"
	"github.com/voltmcp/voltmcp/wasm"
)

// builtinModule is the MODULE argument that names the built-in plugin.
const builtinModule = "builtin"

func pluginCommand() *command {
	var classifyFile, shapeFile, pin, cacheDir string
	var timeout time.Duration
	var pages uint32
	c := &command{
		name:    "plugin",
		summary: "run or check a WebAssembly classifier or shaper plugin",
		usage: `Usage: voltmcp plugin run MODULE (--classify FILE | --shape FILE) [--sha256 HEX]
       voltmcp plugin check MODULE...

For plugin authors. MODULE is a .wasm file, or "builtin" for the built-in
module. 'run' loads MODULE in the same sandbox the gateway uses, runs its
classify or shape on the JSON document in FILE ("-" reads standard input)
and prints the module's JSON result, before any output cap; a fault
(trap, deadline, memory, malformed or oversized result) exits 3 and prints
what the guest wrote to stderr. 'check' validates each MODULE (imports,
exports, ABI version, memory) and compiles it, without calling it, and exits
1 when one fails. The input documents are described in docs/plugins.md.

Examples:
  voltmcp plugin run builtin --classify tool.json
  echo '{"server":"gh","tool":"delete_repo"}' | voltmcp plugin run my.wasm --classify -
  voltmcp plugin run shaper.wasm --shape result.json --sha256 9f86d08...
  voltmcp plugin check examples/plugins/go/classifier.wasm examples/plugins/as/classifier.wasm`,
		flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&classifyFile, "classify", "", "run classify on the ClassifyInput JSON in `FILE`")
			fs.StringVar(&shapeFile, "shape", "", "run shape on the ShapeInput JSON in `FILE`")
			fs.StringVar(&pin, "sha256", "", "refuse the module unless its SHA-256 is `HEX`")
			fs.StringVar(&cacheDir, "cache-dir", "", "compilation cache `DIR` (default $XDG_CACHE_HOME/voltmcp/wasm, else <home>/.cache/voltmcp/wasm, as the gateway's)")
			fs.DurationVar(&timeout, "timeout", 0, "per-call deadline (default 1s)")
			fs.Uint32Var(&pages, "memory-pages", 0, "memory limit in 64 KiB pages (default 512)")
		},
	}
	c.run = func(ctx context.Context, e *env, args []string) error {
		if len(args) == 0 {
			return usageErrorf("want 'voltmcp plugin run MODULE ...' or 'voltmcp plugin check MODULE...'")
		}
		if cacheDir == "" {
			cacheDir = e.g.pluginCache
		}
		opts := &wasm.Options{CacheDir: cacheDir, Timeout: timeout, MemoryPages: pages, PoolSize: 1}
		switch args[0] {
		case "run":
			if len(args) != 2 {
				return usageErrorf("want exactly one MODULE after 'run'")
			}
			if (classifyFile == "") == (shapeFile == "") {
				return usageErrorf("want exactly one of --classify FILE and --shape FILE")
			}
			return pluginRun(ctx, e, opts, args[1], pin, classifyFile, shapeFile)
		case "check":
			if len(args) < 2 {
				return usageErrorf("want at least one MODULE after 'check'")
			}
			if classifyFile != "" || shapeFile != "" {
				return usageErrorf("--classify and --shape go with 'run', not 'check'")
			}
			if pin != "" && len(args) != 2 {
				return usageErrorf("--sha256 pins one MODULE; 'check' got %d", len(args)-1)
			}
			return pluginCheckAll(ctx, e, opts, args[1:], pin)
		}
		return usageErrorf("unknown plugin subcommand %q: want run or check%s", args[0], suggest(args[0], []string{"run", "check"}))
	}
	return c
}

// loadPlugin loads MODULE (a .wasm path or "builtin") into h, refusing a
// hash that does not match pin, and compiles it, without calling it: a
// file as the gateway loads each module of settings.plugins.
func loadPlugin(ctx context.Context, h *wasm.Host, module, pin string) (*wasm.Module, error) {
	if module != builtinModule {
		return engine.LoadPlugin(ctx, h, cue.Plugin{Path: module, SHA256: pin}, "")
	}
	m, err := h.Builtin(ctx)
	if err == nil && pin != "" && !strings.EqualFold(pin, m.SHA256()) {
		err = &wasm.PinError{Module: module, SHA256: m.SHA256(), Pin: pin}
	}
	if err != nil {
		return nil, err
	}
	if err := m.Compile(ctx); err != nil {
		return nil, fmt.Errorf("wasm: module %s: %w", module, err)
	}
	return m, nil
}

func pluginRun(ctx context.Context, e *env, opts *wasm.Options, module, pin, classifyFile, shapeFile string) error {
	file := classifyFile
	if file == "" {
		file = shapeFile
	}
	input, err := readInput(e, file)
	if err != nil {
		return failuref("read %s: %w", file, err)
	}
	h, err := wasm.NewHost(ctx, opts)
	if err != nil {
		return failuref("%w", err)
	}
	defer h.Close(context.WithoutCancel(ctx))
	m, err := loadPlugin(ctx, h, module, pin)
	if err != nil {
		return failuref("%w", err)
	}
	var result any
	if classifyFile != "" {
		var in wasm.ClassifyInput
		if err := decodeStrict(input, &in); err != nil {
			return failuref("%s is not a ClassifyInput: %w", file, err)
		}
		if !m.CanClassify() {
			return failuref("module %s does not export classify", module)
		}
		result, err = m.Classify(ctx, in)
	} else {
		var in wasm.ShapeInput
		if err := decodeStrict(input, &in); err != nil {
			return failuref("%s is not a ShapeInput: %w", file, err)
		}
		if !m.CanShape() {
			return failuref("module %s does not export shape", module)
		}
		result, err = m.Shape(ctx, in)
	}
	if err != nil {
		var f *wasm.Fault
		if errors.As(err, &f) && f.Output != "" {
			fmt.Fprintf(e.stderr, "guest output:\n%s\n", strings.TrimRight(f.Output, "\n"))
		}
		return failuref("%w", err)
	}
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(result); err != nil {
		return failuref("write output: %w", err)
	}
	return nil
}

func pluginCheckAll(ctx context.Context, e *env, opts *wasm.Options, modules []string, pin string) error {
	h, err := wasm.NewHost(ctx, opts)
	if err != nil {
		return failuref("%w", err)
	}
	defer h.Close(context.WithoutCancel(ctx))
	failed := 0
	for _, mod := range modules {
		m, err := loadPlugin(ctx, h, mod, pin)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			failed++
			fmt.Fprintf(e.stdout, "FAIL %s: %v\n", mod, err)
			continue
		}
		var exports []string
		if m.CanClassify() {
			exports = append(exports, wasm.ExportClassify)
		}
		if m.CanShape() {
			exports = append(exports, wasm.ExportShape)
		}
		fmt.Fprintf(e.stdout, "ok   %s (%s; sha256 %s)\n", mod, strings.Join(exports, ", "), m.SHA256())
	}
	if failed > 0 {
		return errFindings
	}
	return nil
}

// readInput reads FILE, or standard input for "-".
func readInput(e *env, file string) ([]byte, error) {
	if file == "-" {
		return io.ReadAll(e.stdin)
	}
	return os.ReadFile(file)
}

// decodeStrict decodes one JSON document and refuses unknown fields, so a
// plugin author's typo shows.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more than one JSON document")
	}
	return nil
}
