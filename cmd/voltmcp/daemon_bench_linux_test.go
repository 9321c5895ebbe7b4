//go:build linux

package main

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkDaemonAttachedCall is a tools/call through a `voltmcp serve
// --daemon=on` attached to a running daemon, interleaved with the same
// call through a standalone `voltmcp serve`, each to its own instance of
// the same upstream server (the daemon's and the standalone serve's), so
// that both ways share the machine's load at each moment. p50 and p99 of
// each way are reported, and attached/standalone is the ratio of the
// p50s: the goal is 1.3 or less.
func BenchmarkDaemonAttachedCall(b *testing.B) {
	ctx := context.Background()
	home := daemonHome(b, "up")
	startDaemonProcess(b, home)
	project := b.TempDir()
	const proto = "2025-11-25"
	attached := connectCommand(b, cliCommand("serve", "--home", home, "--project", project, "--daemon=on"), proto)
	standalone := connectCommand(b, cliCommand("serve", "--home", home, "--project", project, "--no-daemon"), proto)
	call := &mcp.CallToolParams{Name: "mcp", Arguments: echoArgs("up", "hello, gateway")}
	ways := []struct {
		name string
		cs   *mcp.ClientSession
	}{{"attached", attached}, {"standalone", standalone}}
	do := func(cs *mcp.ClientSession) {
		res, err := cs.CallTool(ctx, call)
		if err != nil || res.IsError {
			b.Fatalf("call: %v %+v", err, res)
		}
	}
	// Warm up: the first call starts each upstream.
	for range 50 {
		for _, w := range ways {
			do(w.cs)
		}
	}
	d := make([][]time.Duration, len(ways))
	i := 0
	for b.Loop() {
		for k := range ways {
			w := (i + k) % len(ways)
			start := time.Now()
			do(ways[w].cs)
			d[w] = append(d[w], time.Since(start))
		}
		i++
	}
	p50 := make([]float64, len(ways))
	for w := range ways {
		var p99 float64
		p50[w], p99 = percentiles(d[w])
		b.ReportMetric(p50[w], ways[w].name+"-p50-µs")
		b.ReportMetric(p99, ways[w].name+"-p99-µs")
	}
	if p50[1] > 0 {
		b.ReportMetric(p50[0]/p50[1], "attached/standalone")
	}
}
