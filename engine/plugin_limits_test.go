package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/internal/testwait"
	"github.com/voltmcp/voltmcp/wasm"
)

// testPlugin is a settings.plugins entry for a module of wasm/testdata,
// pinned to its content, with extra fields (timeoutMs, memoryPages).
func testPlugin(t *testing.T, name string, extra map[string]any) map[string]any {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("..", "wasm", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(bin)
	p := map[string]any{"path": path, "sha256": hex.EncodeToString(sum[:])}
	for k, v := range extra {
		p[k] = v
	}
	return p
}

// withUserSettings writes settings into the user config of opts's home,
// where plugins are read from.
func withUserSettings(t *testing.T, opts Options, settings map[string]any) Options {
	t.Helper()
	user := filepath.Join(opts.Home, ".volt", "agent", "mcp.json")
	data, err := json.Marshal(map[string]any{"version": 1, "settings": settings})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(user), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(user, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return opts
}

// classifierOnly is settings whose one classifier is plugin.
func classifierOnly(plugin map[string]any) map[string]any {
	return map[string]any{"plugins": map[string]any{"builtin": false, "classifiers": []any{plugin}}}
}

// TestPluginTimeoutMs configures, as the only classifier, a module that
// never finishes (wasm/testdata/recurse.wasm) with timeoutMs 50: its
// call is a deadline fault at 50 ms, not at the host's default second,
// and the tool is rated unknown (the fail-closed fallback).
func TestPluginTimeoutMs(t *testing.T) {
	t.Parallel()
	opts := withUserSettings(t, workspace(t, map[string]server{}, nil), classifierOnly(testPlugin(t, "recurse.wasm", map[string]any{"timeoutMs": 50})))
	e := start(t, opts)
	events, stop := e.Subscribe(16)
	defer stop()
	risk, why := e.guard.Load().risk(testwait.Context(t), "tools", Tool{Name: "delete_all_records", Hash: "h1"})
	if risk != RiskUnknown || !strings.Contains(why, "deadline") {
		t.Fatalf("a classifier past its timeoutMs: %s (%s); want unknown for the deadline fault", risk, why)
	}
	for {
		select {
		case ev := <-events:
			if ev.Type != EventPluginFault {
				continue
			}
			if !strings.Contains(ev.Error, "deadline") || !strings.Contains(ev.Error, "past the module's timeout of 50ms") {
				t.Errorf("plugin fault %q; want a deadline past the module's timeout of 50ms", ev.Error)
			}
			return
		case <-time.After(testwait.Patience):
			t.Fatal("no plugin fault event")
		}
	}
}

// TestPluginMemoryPages configures, as the only classifier, a module
// whose call grows its memory from 2 to 18 pages
// (wasm/testdata/grow.wasm): with memoryPages 8 the call faults for
// memory and the tool is rated unknown; without it, the module answers.
func TestPluginMemoryPages(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		extra    map[string]any
		risk     Risk
		inReason string
	}{
		{map[string]any{"memoryPages": 8}, RiskUnknown, "memory"},
		{nil, RiskWrite, "test module"},
	} {
		opts := withUserSettings(t, workspace(t, map[string]server{}, nil), classifierOnly(testPlugin(t, "grow.wasm", tt.extra)))
		e := start(t, opts)
		risk, why := e.guard.Load().risk(testwait.Context(t), "tools", Tool{Name: "update_record", Hash: "h1"})
		if risk != tt.risk || !strings.Contains(why, tt.inReason) {
			t.Errorf("%v: %s (%s); want %s with %q", tt.extra, risk, why, tt.risk, tt.inReason)
		}
	}
}

// TestGuardPreparesInTheBackground builds an engine with a custom policy,
// a classifier and the built-in module, and makes no call: the policies
// load and the modules compile all the same, in the background, so that
// no first call on a connection's reader pays for them. A classifier that
// does not load (a wrong pin) is found then too, and rates every tool
// unknown.
func TestGuardPreparesInTheBackground(t *testing.T) {
	t.Parallel()
	dir := writePolicy(t, "team.rego", "package voltmcp.tools\n\ndeny contains \"no drop\" if input.tool.name == \"drop\"\n")
	for _, tt := range []struct {
		name   string
		plugin map[string]any
		loads  bool
	}{
		{"loads", testPlugin(t, "grow.wasm", nil), true},
		{"wrong pin", testPlugin(t, "grow.wasm", map[string]any{"sha256": strings.Repeat("0", 64)}), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opts := withUserSettings(t, workspace(t, map[string]server{}, nil),
				map[string]any{"plugins": map[string]any{"builtin": true, "classifiers": []any{tt.plugin}}})
			opts.PolicyDirs = []string{dir}
			e := start(t, opts)
			g := e.guard.Load()
			select {
			case <-g.plugReady:
			case <-time.After(time.Until(testwait.Deadline(t))):
				t.Fatal("the plugins were not set up within a minute of New without a call")
			}
			select {
			case <-g.polReady:
			default:
				t.Fatal("the plugins are ready before the policies")
			}
			if g.pol.Load() == nil || g.polErr != nil {
				t.Fatalf("policies: %v, %v; want them loaded", g.pol.Load(), g.polErr)
			}
			if !tt.loads {
				if g.plugErr == nil || !strings.Contains(g.plugErr.Error(), "does not match its pin") {
					t.Fatalf("plugErr %v; want the pin mismatch", g.plugErr)
				}
				if risk, why := g.risk(testwait.Context(t), "s", Tool{Name: "get_thing", Hash: "h"}); risk != RiskUnknown || !strings.Contains(why, "classifier unavailable") {
					t.Errorf("with a classifier refused: %s (%s); want unknown, classifier unavailable", risk, why)
				}
				return
			}
			if g.plugErr != nil || len(g.chain.Classifiers) != 2 || g.chain.Classifiers[1].Name() != wasm.BuiltinName || len(g.chain.Shapers) != 1 {
				t.Fatalf("chain %+v, %v; want the classifier and the built-in module", g.chain, g.plugErr)
			}
		})
	}
}

// TestPluginCacheDirDefault leaves Options.PluginCacheDir zero: the
// engine compiles its plugins into DefaultPluginCacheDir, voltmcp/wasm
// under $XDG_CACHE_HOME, the directory the CLI uses too.
func TestPluginCacheDirDefault(t *testing.T) {
	t.Parallel()
	cache := t.TempDir()
	opts := withUserSettings(t, workspace(t, map[string]server{}, nil), classifierOnly(testPlugin(t, "grow.wasm", nil)))
	opts.PluginCacheDir = ""
	lookup := opts.LookupEnv
	opts.LookupEnv = func(k string) (string, bool) {
		if k == "XDG_CACHE_HOME" {
			return cache, true
		}
		return lookup(k)
	}
	want := filepath.Join(cache, "voltmcp", "wasm")
	if got := DefaultPluginCacheDir(opts.Home, opts.LookupEnv); got != want {
		t.Fatalf("DefaultPluginCacheDir = %s; want %s", got, want)
	}
	if got := DefaultPluginCacheDir("/home/u", func(string) (string, bool) { return "relative", true }); got != filepath.Join("/home/u", ".cache", "voltmcp", "wasm") {
		t.Errorf("with a relative XDG_CACHE_HOME: %s; want it ignored", got)
	}
	g := start(t, opts).guard.Load()
	select {
	case <-g.plugReady:
	case <-time.After(time.Until(testwait.Deadline(t))):
		t.Fatal("the plugins were not set up within a minute")
	}
	if entries, err := os.ReadDir(want); err != nil || len(entries) == 0 {
		t.Errorf("%s holds %v (%v); want the compiled classifier", want, entries, err)
	}
}
