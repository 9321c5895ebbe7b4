package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/internal/mcptest"
)

// Sizes of the first-search benchmark: about the 2,279 tools of 275
// servers of a large real setup.
const (
	rateBenchServers  = 275
	rateBenchTools    = 8
	rateBenchSearches = 300
)

// BenchmarkFirstSearches runs rateBenchSearches searches over the cached
// metadata of rateBenchServers lazy servers of rateBenchTools tools each,
// the listings stored as discovery stores them (storeListingRatings), on
// an engine just started: pass=first is what a fresh gateway's first
// searches cost, pass=second the same searches again on the same engine.
// One op is the whole pass; ns/search, p50-ns and p99-ns are per search
// over every op. The engine's start and its plugins' preparation are not
// timed.
//
// benchstat -col /pass puts the two passes side by side.
func BenchmarkFirstSearches(b *testing.B) {
	opts, cfg := cachedListings(b, rateBenchServers, func(n, i int) *mcp.Tool {
		if i >= rateBenchTools {
			return nil
		}
		return benchTool(n, i*3+n)
	})
	opts.Config = cfg
	queries := make([]string, rateBenchSearches)
	for i := range queries {
		queries[i] = fmt.Sprintf("%s %s service %d", benchVerbs[i%len(benchVerbs)], benchNouns[(i/len(benchVerbs))%len(benchNouns)], (i*7)%rateBenchServers)
	}
	ctx := context.Background()
	search := func(b *testing.B, e *Engine, lat []time.Duration) []time.Duration {
		for _, q := range queries {
			t0 := time.Now()
			got, err := e.Search(ctx, q, "", 0)
			if err != nil || len(got) == 0 {
				b.Fatalf("search %q: %d matches, %v", q, len(got), err)
			}
			lat = append(lat, time.Since(t0))
		}
		return lat
	}
	for _, pass := range []string{"first", "second"} {
		b.Run("pass="+pass, func(b *testing.B) {
			var lat []time.Duration
			for b.Loop() {
				b.StopTimer()
				e, err := New(ctx, &opts)
				if err != nil {
					b.Fatal(err)
				}
				<-e.guard.Load().plugReady
				if pass == "second" {
					search(b, e, nil)
				}
				b.StartTimer()
				lat = search(b, e, lat)
				b.StopTimer()
				e.Close()
				b.StartTimer()
			}
			slices.Sort(lat)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(len(lat)), "ns/search")
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
		})
	}
}

// cachedListings writes a workspace of servers lazy servers whose
// listings are cached with their ratings, as discovery stores them: the
// tools of server n are tool(n, 0), tool(n, 1), ... up to the first nil.
// It returns the engine options and the config they load.
func cachedListings(b *testing.B, servers int, tool func(n, i int) *mcp.Tool) (Options, *cue.Config) {
	b.Helper()
	defs := map[string]server{}
	for i := range servers {
		defs[fmt.Sprintf("svc-%03d", i)] = stdio(mcptest.ModeBehave, nil)
	}
	opts := benchWorkspace(b, defs)
	probe, err := New(context.Background(), &opts)
	if err != nil {
		b.Fatal(err)
	}
	defer probe.Close()
	cfg := probe.Config()
	store := cacheStore{dir: filepath.Join(opts.Home, ".volt", "agent", "mcp", "cache")}
	for n, srv := range cfg.Servers {
		m := &Metadata{Format: cacheFormat, Server: srv.ID, Identity: srv.Identity(), FetchedAt: time.Now().UTC(), Transport: "stdio"}
		for i := 0; ; i++ {
			t := tool(n, i)
			if t == nil {
				break
			}
			m.Tools = append(m.Tools, toolOf(t))
		}
		m.Hash = metadataHash(m.Tools)
		storeListingRatings(b, probe, m)
		if err := store.save(m); err != nil {
			b.Fatal(err)
		}
	}
	return opts, cfg
}
