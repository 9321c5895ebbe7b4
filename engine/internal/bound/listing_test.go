package bound

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestListingResourcesAndPrompts(t *testing.T) {
	b := NewListing("s", DefaultLimits().Merge(Limits{MaxTools: 2}))
	rs := b.Resources([]Resource{
		{URI: "file:///c", Name: "c\u200b", Description: "\x1b[31mred\x1b[0m"},
		{URI: "file:///a\u202e", Name: "hidden"},
		{URI: "file:///b"},
		{URI: "file:///a"},
		{URI: ""},
	})
	ts := b.Templates([]ResourceTemplate{{URITemplate: "x://{id}", Title: "T\x00"}, {URITemplate: strings.Repeat("x", MaxURIBytes+1)}})
	ps := b.Prompts([]Prompt{
		{Name: "greet", Description: "Say\u2066 hi", Arguments: []PromptArgument{{Name: "who", Description: "\u200bname"}}},
		{Name: "greet", Description: "again"},
		{Name: "bad\tname"},
		{Name: "args", Arguments: []PromptArgument{{Name: "a"}, {Name: "a"}}},
	})
	var uris []string
	for _, r := range rs {
		uris = append(uris, r.URI)
	}
	if got := strings.Join(uris, " "); got != "file:///b file:///a" {
		t.Errorf("resources kept: %s", got)
	}
	if len(ts) != 1 || ts[0].Title != "T" {
		t.Errorf("templates: %+v", ts)
	}
	if len(ps) != 1 || ps[0].Description != "Say hi" || ps[0].Arguments[0].Description != "name" {
		t.Errorf("prompts: %+v", ps)
	}
	kinds := map[string]int{}
	for _, d := range b.Dropped() {
		kinds[d.Kind]++
		if d.Reason == "" {
			t.Errorf("no reason: %+v", d)
		}
	}
	if kinds["resource"] != 3 || kinds["resource template"] != 1 || kinds["prompt"] != 3 {
		t.Errorf("dropped %+v", b.Dropped())
	}
	if len(b.Cleaned()) == 0 {
		t.Error("nothing listed as cleaned")
	}
	if b.Notes() != nil {
		t.Errorf("notes %q", b.Notes())
	}
}

func TestListingAcrossPages(t *testing.T) {
	// The subset kept is the first maxTools by name over every page,
	// whatever the paging, and memory stays within twice maxTools.
	l := DefaultLimits().Merge(Limits{MaxTools: 10})
	b := NewListing("s", l)
	for page := 9; page >= 0; page-- {
		var tools []Tool
		for i := range 10 {
			tools = append(tools, Tool{Name: fmt.Sprintf("t%d%d", page, i), InputSchema: json.RawMessage(`{"type":"object"}`)})
		}
		b.AddTools(tools)
		if len(b.tools) >= 2*l.MaxTools {
			t.Fatalf("%d tools held after a page", len(b.tools))
		}
	}
	b.AddTools([]Tool{{Name: "t00"}}) // a duplicate on a later page
	kept := b.Tools()
	if len(kept) != 10 || kept[0].Name != "t00" || kept[9].Name != "t09" {
		t.Errorf("kept %+v", kept)
	}
	reasons := map[string]string{}
	for _, d := range b.Dropped() {
		reasons[d.Name] = d.Reason
	}
	if reasons["t00"] == "" || b.droppedN != 91 {
		t.Errorf("dropped %d: %+v", b.droppedN, b.Dropped())
	}
}

func TestListingNotesCountTheRest(t *testing.T) {
	b := NewListing("s", Limits{})
	var rs []Resource
	for i := range MaxListedItems + 5 {
		rs = append(rs, Resource{URI: fmt.Sprintf("bad\tURI %d", i)}, Resource{URI: fmt.Sprintf("x://%d", i), Title: "a\u200bb"})
	}
	if kept := b.Resources(rs); len(kept) != min(MaxListedItems+5, DefaultLimits().MaxTools) {
		t.Errorf("kept %d resources", len(kept))
	}
	if len(b.Dropped()) != MaxListedItems || len(b.Cleaned()) != MaxListedItems {
		t.Errorf("listed %d dropped, %d cleaned", len(b.Dropped()), len(b.Cleaned()))
	}
	notes := strings.Join(b.Notes(), "; ")
	if !strings.Contains(notes, "dropped ") || !strings.Contains(notes, "cleaned 5 more items than listed") {
		t.Errorf("notes %q", notes)
	}
}

func TestCapBy(t *testing.T) {
	var dropped []string
	got := CapBy([]string{"c", "a", "d", "b"}, 2, func(s string) string { return s }, func(s string) { dropped = append(dropped, s) })
	if strings.Join(got, "") != "ab" || strings.Join(dropped, "") != "cd" {
		t.Errorf("kept %q, dropped %q", got, dropped)
	}
	if got := CapBy([]string{"b", "a"}, 2, func(s string) string { return s }, nil); strings.Join(got, "") != "ba" {
		t.Errorf("under the cap: %q", got)
	}
}
