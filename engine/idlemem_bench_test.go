package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/internal/mcptest"
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
	servers := map[string]server{}
	for i := range idleServers {
		servers[fmt.Sprintf("svc-%03d", i)] = stdio(mcptest.ModeBehave, nil)
	}
	opts := benchWorkspace(b, servers)
	probe, err := New(context.Background(), &opts)
	if err != nil {
		b.Fatal(err)
	}
	cfg := probe.Config()
	store := cacheStore{dir: filepath.Join(opts.Home, ".volt", "agent", "mcp", "cache")}
	for n, srv := range cfg.Servers {
		m := &Metadata{Format: cacheFormat, Server: srv.ID, Identity: srv.Identity(), FetchedAt: time.Now().UTC(), Transport: "stdio"}
		for i := range idleTools {
			mt := benchTool(n, i)
			mt.Name = fmt.Sprintf("%s_%d", mt.Name, i) // unique within the server
			m.Tools = append(m.Tools, toolOf(mt))
		}
		m.Hash = metadataHash(m.Tools)
		storeListingRatings(b, probe, m)
		if err := store.save(m); err != nil {
			b.Fatal(err)
		}
	}
	probe.Close()
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
