//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/internal/mcptest"
)

// Sizes of the whole-process idle-memory benchmark: the issue's
// standalone gateway of 51 servers and about 10,000 cached tools.
const idleRSSServers = 51

// procKiB reads the fields of a /proc file of lines "Name:  N kB", in
// KiB.
func procKiB(b testing.TB, path string, names ...string) []float64 {
	b.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	out := make([]float64, len(names))
	for line := range strings.Lines(string(data)) {
		for i, name := range names {
			if rest, ok := strings.CutPrefix(line, name+":"); ok {
				kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
				if err != nil {
					b.Fatalf("%s in %s: %q", name, path, rest)
				}
				out[i] = kb
			}
		}
	}
	return out
}

// BenchmarkServeIdleRSS is the resident set of a real `voltmcp serve`
// process (built as users build it) over stdio, idle after an agent
// initialized it, listed its tools and made one search, with
// idleRSSServers lazy servers whose listings of mcptest.CatalogTools
// tools each are cached (about 10,000 tools), the built-in policies and
// plugins loaded. The process gives back what it does not use once idle
// (releaseIdleMemory); the benchmark reads its VmRSS once the resident
// set has stopped falling for two of serve's idle checks. rss-MiB is that
// resident set; anon-MiB its anonymous part (the Go heap, stacks, the
// compiled plugins' code) and file-MiB the part mapped from files (the
// binary's text and data), from /proc/PID/smaps_rollup.
func BenchmarkServeIdleRSS(b *testing.B) {
	bin := buildVoltmcp(b)
	home, project := cachedWorkspace(b, bin, idleRSSServers, mcptest.ModeCatalog)
	ctx := context.Background()
	var rss, anon, file []float64
	for b.Loop() {
		serve := exec.Command(bin, "serve", "--home", home, "--project", project, "--approve", "--no-daemon")
		serve.Env = append(os.Environ(), "XDG_CACHE_HOME="+testCacheDir)
		client := mcp.NewClient(&mcp.Implementation{Name: "bench-agent", Version: "1.0.0"}, nil)
		cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: serve}, nil)
		if err != nil {
			b.Fatal(err)
		}
		if res, err := cs.ListTools(ctx, nil); err != nil || len(res.Tools) != 1 {
			b.Fatalf("tools/list: %v %v", res, err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp", Arguments: map[string]any{"action": "search", "query": "create issue"}})
		if err != nil || res.IsError {
			b.Fatalf("search: %v %+v", err, res)
		}
		if data, _ := json.Marshal(res.Content); !strings.Contains(string(data), "create_issue") {
			b.Fatalf("search found no create_issue: %s", data)
		}
		// Idle: serve looks at its allocations every idleCheckEvery and
		// gives memory back after one quiet look; the resident set is
		// read once it has not fallen for two looks.
		status := fmt.Sprintf("/proc/%d/status", serve.Process.Pid)
		low, since := procKiB(b, status, "VmRSS")[0], time.Now()
		for time.Since(since) < 2*idleCheckEvery+time.Second { // testwait: a measurement's settling time, not a bound
			time.Sleep(250 * time.Millisecond)
			if now := procKiB(b, status, "VmRSS")[0]; now < low {
				low, since = now, time.Now()
			}
		}
		parts := procKiB(b, fmt.Sprintf("/proc/%d/smaps_rollup", serve.Process.Pid), "Rss", "Anonymous")
		rss, anon, file = append(rss, parts[0]/1024), append(anon, parts[1]/1024), append(file, (parts[0]-parts[1])/1024)
		cs.Close()
	}
	median := func(x []float64) float64 {
		x = append([]float64(nil), x...)
		slices.Sort(x)
		return x[len(x)/2]
	}
	b.ReportMetric(median(rss), "rss-MiB")
	b.ReportMetric(median(anon), "anon-MiB")
	b.ReportMetric(median(file), "file-MiB")
}
