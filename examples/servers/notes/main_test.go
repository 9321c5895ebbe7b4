package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connect serves a fresh notes server in memory and returns a client
// session to it.
func connect(t *testing.T) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	fixed := func() time.Time { return time.Date(2025, time.April, 1, 12, 0, 0, 0, time.UTC) }
	st, ct := mcp.NewInMemoryTransports()
	ss, err := newServer(newStore(seedNotes(), fixed)).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	return cs
}

// call calls a tool and returns its text; want says whether the result
// must be a tool error.
func call(t *testing.T, cs *mcp.ClientSession, tool string, args any, wantErr bool) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	if res.IsError != wantErr {
		t.Fatalf("%s: IsError = %v, want %v: %s", tool, res.IsError, wantErr, b.String())
	}
	return b.String()
}

func TestTools(t *testing.T) {
	cs := connect(t)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// name -> want readOnly, destructive (nil: not set)
	want := map[string]struct {
		readOnly    bool
		destructive *bool
	}{
		"list_notes": {true, nil}, "search_notes": {true, nil}, "get_note": {true, nil}, "export_notes": {true, nil},
		"add_note": {false, new(false)}, "delete_note": {false, new(true)},
	}
	if len(res.Tools) != len(want) {
		t.Errorf("%d tools, want %d", len(res.Tools), len(want))
	}
	for _, tool := range res.Tools {
		w, ok := want[tool.Name]
		if !ok {
			t.Errorf("unexpected tool %s", tool.Name)
			continue
		}
		a := tool.Annotations
		if a == nil || a.ReadOnlyHint != w.readOnly || (w.destructive != nil && (a.DestructiveHint == nil || *a.DestructiveHint != *w.destructive)) {
			t.Errorf("%s: annotations %+v", tool.Name, a)
		}
		if tool.Description == "" {
			t.Errorf("%s has no description", tool.Name)
		}
	}
}

func TestNotes(t *testing.T) {
	cs := connect(t)

	var list listOutput
	if err := json.Unmarshal([]byte(call(t, cs, "list_notes", map[string]any{}, false)), &list); err != nil {
		t.Fatal(err)
	}
	if list.Count != 10 || len(list.Notes) != 10 {
		t.Fatalf("list_notes: %d notes (count %d), want 10", len(list.Notes), list.Count)
	}

	var found searchOutput
	if err := json.Unmarshal([]byte(call(t, cs, "search_notes", map[string]any{"query": "LAUNCH retro"}, false)), &found); err != nil {
		t.Fatal(err)
	}
	if len(found.Matches) != 1 || found.Matches[0].Title != "Launch retro" || !strings.Contains(found.Matches[0].Snippet, "owner per launch task") {
		t.Errorf("search_notes: %+v", found)
	}
	call(t, cs, "search_notes", map[string]any{"query": " "}, true)

	var added note
	if err := json.Unmarshal([]byte(call(t, cs, "add_note", map[string]any{"title": "Launch party", "body": "Friday at six."}, false)), &added); err != nil {
		t.Fatal(err)
	}
	if added.ID != "n11" || !added.Created.Equal(time.Date(2025, time.April, 1, 12, 0, 0, 0, time.UTC)) {
		t.Errorf("add_note: %+v", added)
	}
	if got := call(t, cs, "get_note", map[string]any{"id": "n11"}, false); !strings.Contains(got, "Friday at six.") {
		t.Errorf("get_note n11: %s", got)
	}
	call(t, cs, "delete_note", map[string]any{"id": "n11"}, false)
	call(t, cs, "get_note", map[string]any{"id": "n11"}, true)
	call(t, cs, "delete_note", map[string]any{"id": "n11"}, true)
}

func TestExport(t *testing.T) {
	cs := connect(t)
	md := call(t, cs, "export_notes", map[string]any{"format": "markdown"}, false)
	if n := len(md); n < 150_000 || n > 400_000 {
		t.Errorf("markdown export is %d bytes, want about 200 KB", n)
	}
	if !strings.Contains(md, "## n3: Launch retro") || !strings.Contains(md, "### Changelog") {
		t.Errorf("markdown export lacks a note or its changelog")
	}
	if def := call(t, cs, "export_notes", map[string]any{}, false); def != md {
		t.Errorf("export without a format is not the markdown export")
	}

	var doc struct {
		Notes []struct {
			ID      string     `json:"id"`
			History []revision `json:"history"`
		} `json:"notes"`
	}
	if err := json.Unmarshal([]byte(call(t, cs, "export_notes", map[string]any{"format": "json"}, false)), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Notes) != 10 || len(doc.Notes[0].History) != exportRevisions {
		t.Errorf("json export: %d notes, %d revisions in the first", len(doc.Notes), len(doc.Notes[0].History))
	}

	// The schema allows only the two formats.
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "export_notes", Arguments: map[string]any{"format": "pdf"}})
	if err == nil && !res.IsError {
		t.Error("export_notes accepted format pdf")
	}
}

func TestIndexAndPrompt(t *testing.T) {
	cs := connect(t)
	ctx := context.Background()
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: indexURI})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Contents) != 1 || !strings.Contains(res.Contents[0].Text, "- n1: Launch checklist (launch, release)") {
		t.Errorf("index: %+v", res.Contents)
	}

	p, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "summarize_notes", Arguments: map[string]string{"topic": "launch"}})
	if err != nil {
		t.Fatal(err)
	}
	text := p.Messages[0].Content.(*mcp.TextContent).Text
	if !strings.Contains(text, "these 5 notes about launch") || strings.Contains(text, "Hiring plan") {
		t.Errorf("prompt: %s", text)
	}
}
