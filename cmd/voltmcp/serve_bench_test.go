package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/engine/pollio"
	"github.com/voltmcp/voltmcp/internal/mcptest"
)

// cliChildEnv makes the test binary run as the voltmcp command (see
// runIfCLIChild), so a benchmark can start `voltmcp serve` as the real
// separate process an agent starts.
const cliChildEnv = "VOLTMCP_TEST_RUN_CLI"

// runIfCLIChild runs the CLI with the process's arguments and exits, when
// the test binary was started by cliCommand.
func runIfCLIChild() {
	if os.Getenv(relayChildEnv) == "1" {
		os.Exit(relay(os.Args[1], os.Args[2:]))
	}
	if upstream := os.Getenv(passthroughChildEnv); upstream != "" {
		os.Exit(runPassthrough(upstream))
	}
	if upstream := os.Getenv(httpRelayChildEnv); upstream != "" {
		os.Exit(runHTTPRelay(upstream))
	}
	if os.Getenv(cliChildEnv) != "1" {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// VOLTMCP_TEST_CPUPROFILE profiles the child, to see where a proxied
	// call spends its time: each child writes PATH.PID, so that the
	// processes of one run (a daemon, its serves) keep apart.
	var profile *os.File
	if path := os.Getenv("VOLTMCP_TEST_CPUPROFILE"); path != "" {
		if f, err := os.Create(path + "." + strconv.Itoa(os.Getpid())); err == nil {
			if pprof.StartCPUProfile(f) == nil {
				profile = f
			} else {
				f.Close()
			}
		}
	}
	// VOLTMCP_TEST_HEAPPROFILE writes a heap profile of the child each
	// time it gets SIGUSR1, to see what an idle gateway keeps.
	if path := os.Getenv("VOLTMCP_TEST_HEAPPROFILE"); path != "" {
		usr1 := make(chan os.Signal, 1)
		signal.Notify(usr1, syscall.SIGUSR1)
		go func() {
			for range usr1 {
				if f, err := os.Create(path); err == nil {
					runtime.GC()
					_ = pprof.WriteHeapProfile(f)
					f.Close()
				}
			}
		}()
	}
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	stop()
	if profile != nil {
		pprof.StopCPUProfile()
		profile.Close()
	}
	// Always exit: returning would run the binary's tests in the child
	// once the command ends.
	os.Exit(code)
}

// relayChildEnv makes the test binary a relay: a process that starts the
// command in its arguments and copies bytes between its own stdio and
// the command's, reading nothing of them. It is the least any process
// between an agent and a server can cost (BenchmarkServeProcessCall's
// via=relay).
const relayChildEnv = "VOLTMCP_TEST_RELAY"

// relayEnvEnv carries, as a JSON object, the environment the relay gives
// its child.
const relayEnvEnv = "VOLTMCP_TEST_RELAY_ENV"

// relay runs name with args and copies stdin to it and its stdout to
// stdout until either side ends.
func relay(name string, args []string) int {
	cmd := exec.Command(name, args...)
	var env map[string]string
	_ = json.Unmarshal([]byte(os.Getenv(relayEnvEnv)), &env)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, relayChildEnv+"=") && !strings.HasPrefix(kv, relayEnvEnv+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return 1
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 1
	}
	if err := cmd.Start(); err != nil {
		return 1
	}
	// Through the poller, as serve reads and writes (package pollio).
	stdin, stdout, restore := pollio.Stdio()
	defer restore()
	go func() { _, _ = io.Copy(in, stdin); in.Close() }()
	_, _ = io.Copy(stdout, out)
	_ = cmd.Wait()
	return 0
}

// cliCommand is the voltmcp command line args, run by the test binary.
// Like fakeEnv, it gives the command the test run's XDG_CACHE_HOME, so
// the built-in plugin compiles once per test run, not once per process
// (each --home of a test is a new directory); an entry the caller
// appends to Env replaces it.
func cliCommand(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), cliChildEnv+"=1", "XDG_CACHE_HOME="+testCacheDir)
	return cmd
}

// benchProject writes a project whose one server, "up", is the mcptest
// server in mode behave, and returns its root.
func benchProject(b testing.TB) string {
	b.Helper()
	dir := b.TempDir()
	cmd, args, env := mcptest.Command(mcptest.ModeBehave)
	doc := map[string]any{"version": 1, "servers": map[string]any{"up": map[string]any{"command": cmd, "args": args, "env": env, "connectTimeoutMs": testTimeoutMs, "discoveryTimeoutMs": testTimeoutMs}}}
	data, _ := json.Marshal(doc)
	if err := os.MkdirAll(filepath.Join(dir, ".volt"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".volt", "mcp.json"), data, 0o644); err != nil {
		b.Fatal(err)
	}
	return dir
}

// batchCalls is how many calls in a row BenchmarkServeProcessCall makes
// one way under calls=batched.
const batchCalls = 64

// BenchmarkServeProcessCall is a tools/call through `voltmcp serve` run as
// its own process, the way an agent runs it: the agent (this process,
// with the SDK's client) speaks stdio to voltmcp, which speaks stdio to
// the upstream server, a third process. The same loop makes the same
// call two more ways, so that all three share the machine's load at
// each moment: direct, with the same client straight to an instance of
// the same upstream, and relay, through a process that only copies bytes
// both ways (the least any process in between can cost). Each iteration
// makes three calls; which way each takes depends on calls (below).
//
// p50 and p99 of each way are reported (serve-p50-µs, ...), and
// serve/direct is the ratio of the p50s: the gateway's goal is 1.5 or
// less. On Linux, serve-cpu-µs/call and relay-cpu-µs/call are the CPU
// time those processes used per call through them. proto is the protocol version the agent asks for: 2025-11-25,
// which today's agents speak, and 2026-07-28, the SDK's default, under
// which every request carries the client's info and capabilities in
// _meta.
func BenchmarkServeProcessCall(b *testing.B) {
	args := map[string]any{"text": "hello, gateway"}
	for _, c := range []struct {
		proto   string
		batched bool
	}{{"2025-11-25", false}, {"2025-11-25", true}, {"2026-07-28", false}, {"2026-07-28", true}} {
		proto, batched := c.proto, c.batched
		calls := "interleaved"
		if batched {
			calls = "batched"
		}
		b.Run("proto="+proto+"/calls="+calls, func(b *testing.B) {
			ctx := context.Background()
			project := benchProject(b)
			home := b.TempDir()
			serveCmd := cliCommand("serve", "--home", home, "--project", project, "--approve")
			serve := connectCommand(b, serveCmd, proto)
			viaServe := &mcp.CallToolParams{Name: "mcp", Arguments: map[string]any{"action": "call", "server": "up", "tool": "echo", "arguments": args}}
			direct := connectCommand(b, upstreamCommand(false), proto)
			relayCmd := upstreamCommand(true)
			relayed := connectCommand(b, relayCmd, proto)
			viaDirect := &mcp.CallToolParams{Name: "echo", Arguments: args}
			ways := []struct {
				name string
				call func() error
			}{
				{"serve", func() error {
					res, err := serve.CallTool(ctx, viaServe)
					if err == nil && res.IsError {
						err = fmt.Errorf("call through serve: %s", res.Content[0].(*mcp.TextContent).Text)
					}
					return err
				}},
				{"direct", func() error { _, err := direct.CallTool(ctx, viaDirect); return err }},
				{"relay", func() error { _, err := relayed.CallTool(ctx, viaDirect); return err }},
			}
			// Warm up: the first call through serve starts the upstream.
			for range 50 {
				for _, w := range ways {
					if err := w.call(); err != nil {
						b.Fatal(err)
					}
				}
			}
			d := make([][]time.Duration, len(ways))
			serveCPU, serveOK := processCPU(serveCmd.Process.Pid)
			relayCPU, relayOK := processCPU(relayCmd.Process.Pid)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				for k := range ways {
					// calls=interleaved turns the way every call, so each
					// call finds the processes it crosses idle, as an
					// agent's calls seconds apart do; calls=batched makes
					// runs of batchCalls calls one way, as an agent in a
					// loop of calls does.
					w := (i + k) % len(ways)
					if batched {
						w = (i / batchCalls) % len(ways)
					}
					start := time.Now()
					if err := ways[w].call(); err != nil {
						b.Fatal(err)
					}
					d[w] = append(d[w], time.Since(start))
				}
				i++
			}
			// The CPU time of the serve process, and of the relay, per
			// call through it (Linux): what a call costs the machine
			// beyond its latency.
			if cpu, ok := processCPU(serveCmd.Process.Pid); ok && serveOK {
				b.ReportMetric(float64((cpu-serveCPU).Nanoseconds())/1e3/float64(b.N), "serve-cpu-µs/call")
			}
			if cpu, ok := processCPU(relayCmd.Process.Pid); ok && relayOK {
				b.ReportMetric(float64((cpu-relayCPU).Nanoseconds())/1e3/float64(b.N), "relay-cpu-µs/call")
			}
			p50 := make([]float64, len(ways))
			for w := range ways {
				var p99 float64
				p50[w], p99 = percentiles(d[w])
				b.ReportMetric(p50[w], ways[w].name+"-p50-µs")
				b.ReportMetric(p99, ways[w].name+"-p99-µs")
			}
			if p50[1] > 0 {
				b.ReportMetric(p50[0]/p50[1], "serve/direct")
			}
		})
	}
}

// upstreamCommand starts the benchmark's upstream server, alone or
// behind a relay.
func upstreamCommand(relayed bool) *exec.Cmd {
	name, args, env := mcptest.Command(mcptest.ModeBehave)
	cmd := exec.Command(name, args...)
	cmd.Env = os.Environ()
	if relayed {
		// The server's environment goes to the relay's child only: in the
		// relay's own, it would make the test binary the server.
		data, _ := json.Marshal(env)
		cmd = exec.Command(os.Args[0], append([]string{name}, args...)...)
		cmd.Env = append(os.Environ(), relayChildEnv+"=1", relayEnvEnv+"="+string(data))
		return cmd
	}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return cmd
}

// connectCommand starts cmd as an MCP server and connects the SDK's
// client to it; the session closes when the benchmark ends.
func connectCommand(b testing.TB, cmd *exec.Cmd, proto string) *mcp.ClientSession {
	b.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "bench-agent", Version: "1.0.0"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: proto})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

// callEcho calls the upstream "up"'s echo tool through the mcp tool of
// the serve session cs, failing t unless it answers.
func callEcho(ctx context.Context, t testing.TB, cs *mcp.ClientSession, text string) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp", Arguments: map[string]any{
		"action": "call", "server": "up", "tool": "echo", "arguments": map[string]any{"text": text}}})
	if err != nil || res.IsError {
		t.Fatalf("call %q: %v %+v", text, err, res)
	}
}

// waitExited waits for cmd, whose session has ended, to have exited and
// been reaped (the SDK's transport waits for the process), failing t if
// ctx ends first. It asks the process, not cmd.ProcessState, which the
// transport's Wait writes on its own goroutine.
func waitExited(ctx context.Context, t testing.TB, cmd *exec.Cmd) {
	t.Helper()
	for cmd.Process.Signal(syscall.Signal(0)) == nil {
		if ctx.Err() != nil {
			t.Fatalf("%s did not exit", strings.Join(cmd.Args[1:], " "))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// percentiles returns the p50 and p99 of d in microseconds.
func percentiles(d []time.Duration) (p50, p99 float64) {
	if len(d) == 0 {
		return 0, 0
	}
	d = slices.Clone(d)
	slices.Sort(d)
	us := func(x time.Duration) float64 { return float64(x.Nanoseconds()) / 1e3 }
	return us(d[len(d)/2]), us(d[min(len(d)-1, len(d)*99/100)])
}
