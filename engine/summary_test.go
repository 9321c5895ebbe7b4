package engine

import (
	"testing"

	"github.com/voltmcp/voltmcp/internal/testwait"
)

// TestToolCountsEnabled checks toolCounts.enabled: the exposed tools of a
// listed server, fewer than the cached ones when the config excludes
// some, none of a disabled server's, and absent for a server never
// listed.
func TestToolCountsEnabled(t *testing.T) {
	t.Parallel()
	opts := workspace(t, map[string]server{
		"all":    stdio("behave", nil),
		"hidden": stdio("behave", server{"excludeTools": []string{"echo", "fail"}}),
		"off":    stdio("behave", nil),
		"never":  stdio("behave", nil),
	}, nil)
	e := start(t, opts)
	ctx := testwait.Context(t)
	for _, id := range []string{"all", "hidden", "off"} {
		if err := e.Connect(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.SetEnabled(ctx, "off", false); err != nil {
		t.Fatal(err)
	}
	got := map[string]ServerSummary{}
	for _, s := range e.Servers() {
		got[s.ID] = s
	}
	one, err := e.Server("hidden")
	if err != nil {
		t.Fatal(err)
	}
	enabled := func(s ServerSummary) int {
		t.Helper()
		if s.ToolCounts.Enabled == nil {
			t.Fatalf("%s: no toolCounts.enabled in %+v", s.ID, s.ToolCounts)
		}
		return *s.ToolCounts.Enabled
	}
	all := got["all"]
	if all.ToolCounts.Cached == 0 || enabled(all) != all.ToolCounts.Cached {
		t.Errorf("all: %d enabled of %d cached, want all", enabled(all), all.ToolCounts.Cached)
	}
	for _, h := range []ServerSummary{got["hidden"], one} {
		if h.ToolCounts.Cached != all.ToolCounts.Cached || enabled(h) != h.ToolCounts.Cached-2 {
			t.Errorf("hidden: %d enabled of %d cached, want two fewer", enabled(h), h.ToolCounts.Cached)
		}
	}
	if off := got["off"]; off.ToolCounts.Cached == 0 || enabled(off) != 0 {
		t.Errorf("disabled: %d enabled of %d cached, want none", enabled(off), off.ToolCounts.Cached)
	}
	if n := got["never"].ToolCounts.Enabled; n != nil {
		t.Errorf("a server never listed counts %d enabled tools", *n)
	}
}
