package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/internal/mcptest"
	"github.com/voltmcp/voltmcp/wasm"
)

// userWorkspace is a workspace whose servers and settings are in the
// user layer (where plugins and trustToolHints are honoured), with an
// empty project.
func userWorkspace(t testing.TB, servers map[string]server, settings map[string]any) Options {
	t.Helper()
	opts := workspace(t, map[string]server{}, nil)
	writeUserLayer(t, opts, servers, settings)
	return opts
}

// writeUserLayer writes the user layer of opts.
func writeUserLayer(t testing.TB, opts Options, servers map[string]server, settings map[string]any) {
	t.Helper()
	doc := map[string]any{"version": 1, "servers": servers}
	if settings != nil {
		doc["settings"] = settings
	}
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	user := filepath.Join(opts.Home, ".volt", "agent", "mcp.json")
	if err := os.MkdirAll(filepath.Dir(user), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(user, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// ratingShapes are tools of several shapes a classifier rates apart:
// read, write and destructive by name and hints, no hints at all, hints
// that claim less than the name says, and a bare name.
func ratingShapes() []Tool {
	var out []Tool
	for i := range len(benchVerbs) {
		out = append(out, toolOf(benchTool(0, i)))
	}
	yes := true
	for _, t := range []*mcp.Tool{
		{Name: "run_query", Description: "Runs an arbitrary SQL statement against the production database.", InputSchema: map[string]any{"type": "object"}},
		{Name: "drop_table", Description: "Drops a table.", InputSchema: map[string]any{"type": "object"}, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		{Name: "purge_cache", Description: "Removes every entry.", InputSchema: map[string]any{"type": "object"}, Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes}},
		{Name: "process_items", Description: "Processes the items.", InputSchema: map[string]any{"type": "object"}, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		{Name: "x", InputSchema: map[string]any{"type": "object"}},
	} {
		out = append(out, toolOf(t))
	}
	return out
}

// writeRatingCache writes server id's metadata cache of tools, with
// ratings when r is not nil, and returns it.
func writeRatingCache(t testing.TB, e *Engine, id string, tools []Tool, r *Ratings) *Metadata {
	t.Helper()
	srv, ok := e.Config().Server(id)
	if !ok {
		t.Fatalf("no server %q", id)
	}
	m := &Metadata{Format: cacheFormat, Server: srv.ID, Identity: srv.Identity(), FetchedAt: time.Now().UTC(), Tools: tools,
		Transport: "stdio", Ratings: r}
	m.Hash = metadataHash(m.Tools)
	if err := e.cache.save(m); err != nil {
		t.Fatal(err)
	}
	return m
}

// noClassifiers takes the classifiers away from e's guard once it is
// ready, keeping its fingerprint: a tool it rates other than unknown
// from then on was rated from the store.
func noClassifiers(e *Engine) {
	g := e.guard.Load()
	<-g.plugReady
	g.chain = &wasm.Chain{}
}

// TestStoredRatingsMatchFresh rates tools of several shapes, on a server
// that trusts its tool hints and on one that does not, stores the
// ratings with the listing, and has a second engine, whose classifiers
// are then taken away, rate them from the store: every rating, risk and
// reason, must be the fresh one, the decision made on it too.
func TestStoredRatingsMatchFresh(t *testing.T) {
	servers := map[string]server{
		"plain":   stdio(mcptest.ModeBehave, nil),
		"trusted": stdio(mcptest.ModeBehave, server{"trustToolHints": true}),
	}
	opts := userWorkspace(t, servers, nil)
	tools := ratingShapes()
	ctx := context.Background()
	fresh := map[string]riskEntry{}
	func() {
		a := start(t, opts)
		defer a.Close()
		for _, id := range []string{"plain", "trusted"} {
			m := writeRatingCache(t, a, id, tools, nil)
			for _, tool := range tools {
				risk, why := a.risk(ctx, id, tool)
				fresh[id+"/"+tool.Name] = riskEntry{risk, why}
			}
			m.Ratings = a.guard.Load().rateListing(ctx, id, m)
			if m.Ratings == nil || len(m.Ratings.Tools) != len(tools) {
				t.Fatalf("server %s: ratings stored %+v; want one for each of %d tools", id, m.Ratings, len(tools))
			}
			if err := a.cache.save(m); err != nil {
				t.Fatal(err)
			}
		}
	}()
	if fresh["plain/process_items"].risk == fresh["trusted/process_items"].risk {
		t.Fatalf("process_items is rated %v whether its hints are trusted or not; the shapes do not tell the two apart", fresh["plain/process_items"])
	}
	seen := map[Risk]bool{}
	for _, r := range fresh {
		seen[r.risk] = true
	}
	if len(seen) < 3 {
		t.Fatalf("the shapes are rated %v only; want read, write and destructive among them", maps.Keys(seen))
	}

	b := start(t, opts)
	noClassifiers(b)
	for _, id := range []string{"plain", "trusted"} {
		s, err := b.supervisor(id)
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range tools {
			want := fresh[id+"/"+tool.Name]
			if risk, why := b.risk(ctx, id, tool); risk != want.risk || why != want.reason {
				t.Errorf("server %s tool %s: rated %s (%s) from the store; fresh %s (%s)", id, tool.Name, risk, why, want.risk, want.reason)
			}
			in := b.toolInput(ctx, s, tool)
			d, wantD := b.decide(in), defaultDecide(ToolInput{Server: in.Server, Tool: tool, Risk: want.risk, RiskReason: want.reason,
				Surface: in.Surface, Pin: in.Pin, Quarantined: in.Quarantined})
			if d.Exposed != wantD.Exposed || d.Allowed != wantD.Allowed || d.Pending != wantD.Pending {
				t.Errorf("server %s tool %s: decided %+v from the store; on the fresh rating %+v", id, tool.Name, d, wantD)
			}
		}
	}
}

// TestStoredRatingsRerated stores a marker rating for every tool under
// one config, then starts an engine under another: the marker must be
// used only when nothing a rating depends on changed, and each change
// (the classifier module, its limits, the chain, the server's trust in
// its hints, the tool) must rate again.
func TestStoredRatingsRerated(t *testing.T) {
	path, err := filepath.Abs(filepath.Join("..", "wasm", "builtin", "builtin.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(bin)
	classifier := func(extra map[string]any) map[string]any {
		c := map[string]any{"path": path, "sha256": hex.EncodeToString(sum[:])}
		maps.Copy(c, extra)
		return map[string]any{"plugins": map[string]any{"builtin": false, "classifiers": []any{c}}}
	}
	base := classifier(nil)
	const marker = "the marker stored in the cache"
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		settings map[string]any
		trust    bool
		edit     func(*Tool) // changes the tool in the cache, not its rating
		stored   bool
	}{
		{name: "unchanged", settings: base, stored: true},
		{name: "module limits", settings: classifier(map[string]any{"timeoutMs": 4321})},
		{name: "module memory", settings: classifier(map[string]any{"memoryPages": 300})},
		{name: "chain", settings: map[string]any{"plugins": map[string]any{"builtin": true}}},
		{name: "trust hints", settings: base, trust: true},
		{name: "tool", settings: base, edit: func(t *Tool) { t.Description += " Also deletes the repository." }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			servers := map[string]server{"svc": stdio(mcptest.ModeBehave, nil)}
			opts := userWorkspace(t, servers, base)
			tools := ratingShapes()
			func() {
				a := start(t, opts)
				defer a.Close()
				m := writeRatingCache(t, a, "svc", tools, nil)
				r := a.guard.Load().rateListing(ctx, "svc", m)
				if r == nil || len(r.Tools) != len(tools) {
					t.Fatalf("ratings %+v; want one for each of %d tools", r, len(tools))
				}
				for h := range r.Tools {
					r.Tools[h] = Rating{Risk: RiskRead, Reason: marker}
				}
				if tc.edit != nil {
					for i := range tools {
						tc.edit(&tools[i])
						tools[i].Hash = toolHash(tools[i])
					}
				}
				writeRatingCache(t, a, "svc", tools, r)
			}()
			if tc.trust {
				servers["svc"]["trustToolHints"] = true
			}
			writeUserLayer(t, opts, servers, tc.settings)
			b := start(t, opts)
			s, err := b.supervisor("svc")
			if err != nil {
				t.Fatal(err)
			}
			if s.meta == nil || s.meta.Ratings == nil {
				t.Fatalf("the cached listing was not loaded (cache error %q)", s.cacheErr)
			}
			for _, tool := range tools {
				risk, why := b.risk(ctx, "svc", tool)
				if got := risk == RiskRead && why == marker; got != tc.stored {
					t.Errorf("tool %s: rated %s (%s); stored rating used %v, want %v", tool.Name, risk, why, got, tc.stored)
				}
			}
		})
	}
}

// TestDiscoveryStoresRatings connects a real server: the cache file its
// discovery writes holds a rating for every tool listed, each the one
// the engine rates the tool with.
func TestDiscoveryStoresRatings(t *testing.T) {
	opts := workspace(t, map[string]server{"svc": stdio(mcptest.ModeBehave, nil)}, nil)
	e := start(t, opts)
	ctx := context.Background()
	if err := e.Connect(ctx, "svc"); err != nil {
		t.Fatal(err)
	}
	s, err := e.supervisor("svc")
	if err != nil {
		t.Fatal(err)
	}
	m, err := e.cache.load(s.cfg)
	if err != nil || m == nil {
		t.Fatalf("cache: %v", err)
	}
	if len(m.Tools) == 0 || m.Ratings == nil || m.Ratings.Classifier != e.guard.Load().ratingKey("svc") {
		t.Fatalf("cache of %d tools has ratings %+v; want them under the current classifier key", len(m.Tools), m.Ratings)
	}
	for _, tool := range m.Tools {
		r, ok := m.Ratings.Tools[tool.Hash]
		risk, why := e.risk(ctx, "svc", tool)
		if !ok || r.Risk != risk || r.Reason != why {
			t.Errorf("tool %s: stored %+v (%v); rated %s (%s)", tool.Name, r, ok, risk, why)
		}
	}
}

// storeListingRatings rates the tools of m with e and stores the ratings
// with it, as discovery does before it writes the cache file.
func storeListingRatings(tb testing.TB, e *Engine, m *Metadata) {
	tb.Helper()
	m.Ratings = e.guard.Load().rateListing(context.Background(), m.Server, m)
	if m.Ratings == nil || len(m.Ratings.Tools) != len(m.Tools) {
		tb.Fatalf("server %s: %d tools, ratings %+v", m.Server, len(m.Tools), m.Ratings)
	}
}

// TestStoredRatingReasonIsScrubbed stores, under the current fingerprint,
// ratings whose reasons hold a secret value of the server's definition
// in several encodings: neither the loaded listing nor the rating taken
// from it may hold the secret.
func TestStoredRatingReasonIsScrubbed(t *testing.T) {
	const canary = "canaryRATE5c1e9a7d30"
	servers := map[string]server{"svc": stdio(mcptest.ModeBehave, server{"env": map[string]string{"API_TOKEN": canary}})}
	opts := userWorkspace(t, servers, nil)
	ctx := context.Background()
	tools := ratingShapes()
	reasons := []string{"plain " + canary, "hex " + hex.EncodeToString([]byte(canary)), "quoted \"" + canary + "\""}
	func() {
		a := start(t, opts)
		defer a.Close()
		m := writeRatingCache(t, a, "svc", tools, nil)
		r := a.guard.Load().rateListing(ctx, "svc", m)
		if r == nil {
			t.Fatal("no ratings to store")
		}
		for i, tool := range tools {
			r.Tools[tool.Hash] = Rating{Risk: RiskWrite, Reason: reasons[i%len(reasons)]}
		}
		writeRatingCache(t, a, "svc", tools, r)
	}()
	b := start(t, opts)
	s, err := b.supervisor("svc")
	if err != nil {
		t.Fatal(err)
	}
	leaks := func(v string) bool {
		return strings.Contains(v, canary) || strings.Contains(v, hex.EncodeToString([]byte(canary)))
	}
	if s.meta == nil || s.meta.Ratings == nil {
		t.Fatalf("the cached listing was not loaded (cache error %q)", s.cacheErr)
	}
	for h, r := range s.meta.Ratings.Tools {
		if leaks(r.Reason) {
			t.Errorf("loaded rating of %s holds the secret: %q", h, r.Reason)
		}
	}
	for _, tool := range tools {
		risk, why := b.risk(ctx, "svc", tool)
		if risk != RiskWrite || leaks(why) {
			t.Errorf("tool %s: rated %s (%q); want the stored write, scrubbed", tool.Name, risk, why)
		}
	}
}
