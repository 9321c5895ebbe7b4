package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/internal/mcptest"
)

// buildVoltmcp builds the voltmcp command as users run it (the test
// binary carries test code, and may carry the race detector) and returns
// its path.
func buildVoltmcp(b testing.TB) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "voltmcp")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// cachedWorkspace writes a project of servers lazy stdio servers of
// mcptest mode mode (mcptest.ModeCatalog: mcptest.CatalogTools tools
// each, in the style of a large real server), caches their listings with
// `voltmcp refresh`, as a user would, and returns the home and project
// directories.
func cachedWorkspace(b testing.TB, bin string, servers int, mode string) (home, project string) {
	b.Helper()
	dir := b.TempDir()
	home, project = filepath.Join(dir, "home"), filepath.Join(dir, "project")
	defs := map[string]any{}
	for i := range servers {
		command, args, env := mcptest.Command(mode, fmt.Sprintf("%s=%d", mcptest.EnvService, i))
		defs[fmt.Sprintf("svc-%03d", i)] = map[string]any{"command": command, "args": args, "env": env,
			"connectTimeoutMs": testTimeoutMs, "discoveryTimeoutMs": testTimeoutMs}
	}
	data, _ := json.Marshal(map[string]any{"version": 1, "servers": defs})
	if err := os.MkdirAll(filepath.Join(project, ".volt"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, ".volt", "mcp.json"), data, 0o644); err != nil {
		b.Fatal(err)
	}
	refresh := exec.Command(bin, "refresh", "--home", home, "--project", project, "--approve")
	refresh.Env = append(os.Environ(), "XDG_CACHE_HOME="+testCacheDir)
	if out, err := refresh.CombinedOutput(); err != nil {
		b.Fatalf("voltmcp refresh: %v\n%s", err, out)
	}
	return home, project
}

// coldStartServers is how many lazy servers BenchmarkServeProcessColdStart
// configures.
const coldStartServers = 20

// BenchmarkServeProcessColdStart is the time from starting a real
// `voltmcp serve --no-daemon` process (built as users build it), with
// coldStartServers lazy servers of mcptest mode behave whose listings
// are cached (cachedWorkspace), to its answer to an agent's first tools/list:
// process start, initialize and tools/list. Interleaved with it, the same
// for a minimal go-sdk stdio server of one tool (testdata/minimalserver),
// and `voltmcp version` run to its exit, so that all three share the
// machine's load. It reports each one's p50 in ms and serve/minimal, the
// ratio of the p50s: the goal is 2 or less.
func BenchmarkServeProcessColdStart(b *testing.B) {
	bin := buildVoltmcp(b)
	minimal := filepath.Join(b.TempDir(), "minimalserver")
	if out, err := exec.Command("go", "build", "-o", minimal, "./testdata/minimalserver").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	home, project := cachedWorkspace(b, bin, coldStartServers, mcptest.ModeBehave)
	ctx := context.Background()
	env := append(os.Environ(), "XDG_CACHE_HOME="+testCacheDir)
	first := func(cmd *exec.Cmd, tools int) time.Duration {
		cmd.Env = env
		start := time.Now()
		client := mcp.NewClient(&mcp.Implementation{Name: "bench-agent", Version: "1.0.0"}, nil)
		cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			b.Fatal(err)
		}
		res, err := cs.ListTools(ctx, nil)
		took := time.Since(start)
		if err != nil || len(res.Tools) != tools {
			b.Fatalf("tools/list: %v %v", res, err)
		}
		cs.Close()
		return took
	}
	ways := []struct {
		name string
		run  func() time.Duration
	}{
		{"serve", func() time.Duration {
			return first(exec.Command(bin, "serve", "--home", home, "--project", project, "--approve", "--no-daemon"), 1)
		}},
		{"minimal", func() time.Duration { return first(exec.Command(minimal), 1) }},
		{"version", func() time.Duration {
			cmd := exec.Command(bin, "version")
			cmd.Env = env
			start := time.Now()
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("voltmcp version: %v\n%s", err, out)
			}
			return time.Since(start)
		}},
	}
	d := make([][]time.Duration, len(ways))
	i := 0
	for b.Loop() {
		for k := range ways {
			w := (i + k) % len(ways)
			d[w] = append(d[w], ways[w].run())
		}
		i++
	}
	p50 := make([]float64, len(ways))
	for w := range ways {
		p50[w], _ = percentiles(d[w])
		b.ReportMetric(p50[w]/1e3, ways[w].name+"-p50-ms")
	}
	if p50[1] > 0 {
		b.ReportMetric(p50[0]/p50[1], "serve/minimal")
	}
}
