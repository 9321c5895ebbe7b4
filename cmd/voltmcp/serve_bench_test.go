package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/internal/mcptest"
)

// cliChildEnv makes the test binary run as the voltmcp command (see
// runIfCLIChild), so a benchmark can start `voltmcp serve` as the real
// separate process an agent starts.
const cliChildEnv = "VOLTMCP_TEST_RUN_CLI"

// runIfCLIChild runs the CLI with the process's arguments and exits, when
// the test binary was started by cliCommand.
func runIfCLIChild() {
	if os.Getenv(cliChildEnv) != "1" {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// VOLTMCP_TEST_CPUPROFILE profiles the child, to see where a proxied
	// call spends its time.
	if path := os.Getenv("VOLTMCP_TEST_CPUPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil {
			if pprof.StartCPUProfile(f) == nil {
				defer f.Close()
				defer pprof.StopCPUProfile()
			}
		}
	}
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	stop()
	if code != 0 {
		os.Exit(code)
	}
}

// cliCommand is the voltmcp command line args, run by the test binary.
func cliCommand(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), cliChildEnv+"=1")
	return cmd
}

// benchProject writes a project whose one server, "up", is the mcptest
// server in mode behave, and returns its root.
func benchProject(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	cmd, args, env := mcptest.Command(mcptest.ModeBehave)
	doc := map[string]any{"version": 1, "servers": map[string]any{"up": map[string]any{"command": cmd, "args": args, "env": env}}}
	data, _ := json.Marshal(doc)
	if err := os.MkdirAll(filepath.Join(dir, ".volt"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".volt", "mcp.json"), data, 0o644); err != nil {
		b.Fatal(err)
	}
	return dir
}

// BenchmarkServeProcessCall is a tools/call through `voltmcp serve` run as
// its own process, the way an agent runs it: the agent (this process,
// with the SDK's client) speaks stdio to voltmcp, which speaks stdio to
// the upstream server, a third process. via=direct makes the same call
// with the same client straight to the same upstream. The gateway's goal
// is a call within 1.5 times the direct one; p50 and p99 are reported.
// proto is the protocol version the agent asks for: 2025-11-25, which
// today's agents speak, and 2026-07-28, the SDK's default, under which
// every request carries the client's info and capabilities in _meta.
func BenchmarkServeProcessCall(b *testing.B) {
	args := map[string]any{"text": "hello, gateway"}
	for _, proto := range []string{"2025-11-25", "2026-07-28"} {
		b.Run("proto="+proto+"/via=serve", func(b *testing.B) {
			project := benchProject(b)
			home := b.TempDir()
			cmd := cliCommand("serve", "--home", home, "--project", project, "--approve")
			cs := connectCommand(b, cmd, proto)
			params := &mcp.CallToolParams{Name: "mcp", Arguments: map[string]any{"action": "call", "server": "up", "tool": "echo", "arguments": args}}
			ctx := context.Background()
			// The first call starts the upstream.
			if res, err := cs.CallTool(ctx, params); err != nil || res.IsError {
				b.Fatalf("call through serve: %v %v", res, err)
			}
			timeCalls(b, func() error { _, err := cs.CallTool(ctx, params); return err })
		})
		b.Run("proto="+proto+"/via=direct", func(b *testing.B) {
			name, cargs, env := mcptest.Command(mcptest.ModeBehave)
			cmd := exec.Command(name, cargs...)
			cmd.Env = os.Environ()
			for k, v := range env {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
			cs := connectCommand(b, cmd, proto)
			params := &mcp.CallToolParams{Name: "echo", Arguments: args}
			ctx := context.Background()
			timeCalls(b, func() error { _, err := cs.CallTool(ctx, params); return err })
		})
	}
}

// connectCommand starts cmd as an MCP server and connects the SDK's
// client to it; the session closes when the benchmark ends.
func connectCommand(b *testing.B, cmd *exec.Cmd, proto string) *mcp.ClientSession {
	b.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "bench-agent", Version: "1.0.0"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: proto})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

// timeCalls runs call b.N times and reports p50 and p99 besides the mean.
func timeCalls(b *testing.B, call func() error) {
	b.Helper()
	var d []time.Duration
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		if err := call(); err != nil {
			b.Fatal(err)
		}
		d = append(d, time.Since(start))
	}
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(d[min(len(d)-1, len(d)*99/100)].Microseconds()), "p99-µs")
}
