package engine

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/engine/internal/bound"
)

func TestLimitsConfigThenEnv(t *testing.T) {
	t.Parallel()
	env := map[string]string{bound.EnvMaxTools: "5", bound.EnvMaxDescriptionChars: "9000", bound.EnvMaxSchemaDepth: "zero"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	l, notes := limits(cue.Server{Limits: cue.Limits{MaxTools: 10, MaxDescriptionChars: 300, MaxMessageBytes: 1 << 20}}, lookup)
	// The environment only lowers: maxTools 10 → 5, but 300 stays 300.
	if l.MaxTools != 5 || l.MaxDescriptionChars != 300 || l.MaxMessageBytes != 1<<20 || l.MaxSchemaDepth != bound.DefaultLimits().MaxSchemaDepth {
		t.Errorf("limits = %+v", l)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], bound.EnvMaxSchemaDepth) {
		t.Errorf("notes = %q", notes)
	}
	if messageCap(l) != 1<<20 {
		t.Errorf("message cap %d", messageCap(l))
	}
	if l, _ := limits(cue.Server{}, func(string) (string, bool) { return "", false }); l != bound.DefaultLimits() {
		t.Errorf("no config, no env: %+v", l)
	}
}

func TestModelText(t *testing.T) {
	t.Parallel()
	if got := modelText("gh", "Lists issues."); got != bound.Provenance("gh")+"Lists issues." {
		t.Errorf("modelText = %q", got)
	}
	if modelText("gh", "") != "" {
		t.Error("an empty description got a prefix")
	}
	rs, ts := modelResources("gh", []Resource{{URI: "a://b", Description: "d"}}, []ResourceTemplate{{URITemplate: "a://{x}", Description: "t"}})
	ps := modelPrompts("gh", []Prompt{{Name: "p", Description: "q", Arguments: []PromptArgument{{Name: "x", Description: "y"}}}})
	if !strings.HasPrefix(rs[0].Description, "[third-party") || !strings.HasPrefix(ts[0].Description, "[third-party") ||
		!strings.HasPrefix(ps[0].Description, "[third-party") || ps[0].Arguments[0].Description != "y" {
		t.Errorf("resources %+v, templates %+v, prompts %+v", rs, ts, ps)
	}
}

func TestBounderResourcesAndPrompts(t *testing.T) {
	t.Parallel()
	b := newBounder("s", bound.DefaultLimits().Merge(bound.Limits{MaxTools: 2}))
	m := &Metadata{
		Resources: []Resource{
			{URI: "file:///c", Name: "c\u200b", Description: "\x1b[31mred\x1b[0m"},
			{URI: "file:///a\u202e", Name: "hidden"},
			{URI: "file:///b"},
			{URI: "file:///a"},
			{URI: ""},
		},
		ResourceTemplates: []ResourceTemplate{{URITemplate: "x://{id}", Title: "T\x00"}, {URITemplate: strings.Repeat("x", bound.MaxURIBytes+1)}},
		Prompts: []Prompt{
			{Name: "greet", Description: "Say\u2066 hi", Arguments: []PromptArgument{{Name: "who", Description: "\u200bname"}}},
			{Name: "greet", Description: "again"},
			{Name: "bad\tname"},
			{Name: "args", Arguments: []PromptArgument{{Name: "a"}, {Name: "a"}}},
		},
	}
	b.finish(m)
	var uris []string
	for _, r := range m.Resources {
		uris = append(uris, r.URI)
	}
	if got := strings.Join(uris, " "); got != "file:///b file:///a" {
		t.Errorf("resources kept: %s", got)
	}
	if len(m.ResourceTemplates) != 1 || m.ResourceTemplates[0].Title != "T" {
		t.Errorf("templates: %+v", m.ResourceTemplates)
	}
	if len(m.Prompts) != 1 || m.Prompts[0].Description != "Say hi" || m.Prompts[0].Arguments[0].Description != "name" {
		t.Errorf("prompts: %+v", m.Prompts)
	}
	kinds := map[string]int{}
	for _, d := range m.Dropped {
		kinds[d.Kind]++
		if d.Reason == "" {
			t.Errorf("no reason: %+v", d)
		}
	}
	if kinds["resource"] != 3 || kinds["resource template"] != 1 || kinds["prompt"] != 3 {
		t.Errorf("dropped %+v", m.Dropped)
	}
	if len(m.Cleaned) == 0 {
		t.Error("nothing listed as cleaned")
	}
	if got := boundsSummary(m); !strings.Contains(got, "dropped 3 resources, 1 resource template, 3 prompts") {
		t.Errorf("summary %q", got)
	}
}

func TestBounderAcrossPages(t *testing.T) {
	t.Parallel()
	// The subset kept is the first maxTools by name over every page,
	// whatever the paging (bound's TestListingAcrossPages), each kept
	// tool with its hash.
	l := bound.DefaultLimits().Merge(bound.Limits{MaxTools: 10})
	b := newBounder("s", l)
	for page := 9; page >= 0; page-- {
		var tools []Tool
		for i := range 10 {
			tools = append(tools, Tool{Name: fmt.Sprintf("t%d%d", page, i), InputSchema: json.RawMessage(`{"type":"object"}`)})
		}
		b.addTools(tools)
	}
	b.addTools([]Tool{{Name: "t00"}}) // a duplicate on a later page
	m := &Metadata{}
	b.finish(m)
	if len(m.Tools) != 10 || m.Tools[0].Name != "t00" || m.Tools[9].Name != "t09" {
		t.Errorf("kept %+v", m.Tools)
	}
	if droppedReasons(m.Dropped)["t00"] == "" {
		t.Errorf("dropped %+v", m.Dropped)
	}
	if m.Hash != metadataHash(m.Tools) || m.Tools[0].Hash != toolHash(m.Tools[0]) {
		t.Error("hashes not recomputed")
	}
}

func TestReboundCached(t *testing.T) {
	t.Parallel()
	l := bound.DefaultLimits()
	m := &Metadata{Tools: []Tool{{Name: "a", Description: "ok"}, {Name: "bad name"}, {Name: "b", Description: "x\u200by"}}}
	reboundCached(m, "s", l)
	if len(m.Tools) != 2 || m.Tools[1].Description != "xy" || m.Limits != limitsKey(l) || len(m.Dropped) != 1 {
		t.Fatalf("rebound: %+v", m)
	}
	// Bounded with the same limits: left alone.
	before := m.Hash
	m.Tools[0].Description = "\u200b"
	reboundCached(m, "s", l)
	if m.Hash != before || m.Tools[0].Description != "\u200b" {
		t.Error("bounded again with the same limits")
	}
	// Lowered limits apply to the cache.
	reboundCached(m, "s", l.Merge(bound.Limits{MaxTools: 1}))
	if len(m.Tools) != 1 || len(m.Dropped) != 2 {
		t.Errorf("after lowering maxTools: %+v", m)
	}
}
