package engine

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Sizes of the idle-memory benchmark: the standalone gateway of
// 51 servers and 10,000 cached tools.
const (
	idleServers = 51
	idleTools   = 196
)

// BenchmarkIdleMemory is what an engine keeps in memory once it has
// answered one search over the cached metadata of idleServers lazy
// servers of idleTools tools each (about 10,000), its policies and
// plugins loaded: heap-MiB is the Go heap in use after a collection,
// sys-MiB what the runtime holds of the system. VOLTMCP_TEST_HEAPPROFILE
// writes a heap profile of the idle engine.
func BenchmarkIdleMemory(b *testing.B) {
	opts, _ := cachedListings(b, idleServers, func(n, i int) *mcp.Tool {
		if i >= idleTools {
			return nil
		}
		t := benchTool(n, i)
		t.Name = fmt.Sprintf("%s_%d", t.Name, i) // unique within the server
		return t
	})
	ctx := context.Background()
	var heap, sys float64
	for b.Loop() {
		e, err := New(ctx, &opts)
		if err != nil {
			b.Fatal(err)
		}
		<-e.guard.Load().plugReady
		if got, err := e.Search(ctx, "create issue", "", 0); err != nil || len(got) == 0 {
			b.Fatalf("search: %d matches, %v", len(got), err)
		}
		runtime.GC()
		runtime.GC()
		// rss-MiB is the resident set after a collection; rss-freed-MiB
		// once the runtime returned what it does not use to the system,
		// as serve does once idle (cmd/voltmcp releaseIdleMemory). Both
		// count the benchmark's own setup.
		b.ReportMetric(vmRSS(b), "rss-MiB")
		debug.FreeOSMemory()
		b.ReportMetric(vmRSS(b), "rss-freed-MiB")
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		heap, sys = float64(ms.HeapInuse)/(1<<20), float64(ms.Sys)/(1<<20)
		if path := os.Getenv("VOLTMCP_TEST_HEAPPROFILE"); path != "" {
			f, err := os.Create(path)
			if err != nil {
				b.Fatal(err)
			}
			_ = pprof.WriteHeapProfile(f)
			f.Close()
		}
		runtime.KeepAlive(e)
		e.Close()
	}
	b.ReportMetric(heap, "heap-MiB")
	b.ReportMetric(sys, "sys-MiB")
}

// vmRSS is this process's resident set, in MiB (Linux; 0 elsewhere).
func vmRSS(b *testing.B) float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return float64(kb) / 1024
		}
	}
	return 0
}
