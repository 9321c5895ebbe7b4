// Command notes is a small MCP server over stdio: a notes service with an
// in-memory store seeded with ten notes. It has tools to list, search,
// read, add, delete and export notes, a resource notes://index and a
// prompt summarize_notes. Nothing it does leaves the process: the notes
// are gone when it exits.
//
// export_notes returns about 200 KB on purpose, so that a gateway's output
// cap has something to cut.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/engine/pollio"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("notes: ")
	s := newServer(newStore(seedNotes(), time.Now))
	// Stdio through Go's poller, as in examples/servers/clock.
	in, out, restore := pollio.Stdio()
	err := s.Run(context.Background(), &mcp.IOTransport{Reader: in, Writer: out})
	restore()
	if err != nil {
		log.Fatal(err)
	}
}

// indexURI is the URI of the resource listing every note.
const indexURI = "notes://index"

// exportRevisions is the number of revisions export_notes lists for each
// note. With the seed notes it makes an export of about 200 KB.
const exportRevisions = 80

func readOnly() *mcp.ToolAnnotations {
	return &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false)}
}

// newServer returns the notes server over st.
func newServer(st *store) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "notes", Title: "Notes", Version: "0.1.0"}, nil)

	mcp.AddTool(s, &mcp.Tool{
		Name:        "list_notes",
		Description: "List every note: id, title, tags and when it was last updated. Use get_note for a note's text.",
		Annotations: readOnly(),
	}, func(_ context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, listOutput, error) {
		notes := st.list()
		out := listOutput{Count: len(notes), Notes: make([]summary, 0, len(notes))}
		for _, n := range notes {
			out.Notes = append(out.Notes, summarize(n))
		}
		return nil, out, nil
	})

	mcp.AddTool(s, &mcp.Tool{
		Name:        "search_notes",
		Description: "Find notes about a topic: returns the notes whose title, body or tags contain every word of the query (case-insensitive), each with a snippet.",
		Annotations: readOnly(),
	}, func(_ context.Context, _ *mcp.CallToolRequest, in searchInput) (*mcp.CallToolResult, searchOutput, error) {
		if strings.TrimSpace(in.Query) == "" {
			return nil, searchOutput{}, errors.New("query is empty: give one or more words to look for")
		}
		out := searchOutput{Query: in.Query, Matches: []match{}}
		for _, n := range st.search(in.Query) {
			out.Matches = append(out.Matches, match{summary: summarize(n), Snippet: snippet(n.Body, in.Query)})
		}
		return nil, out, nil
	})

	mcp.AddTool(s, &mcp.Tool{
		Name:        "get_note",
		Description: "Get one note by id, with its full text.",
		Annotations: readOnly(),
	}, func(_ context.Context, _ *mcp.CallToolRequest, in idInput) (*mcp.CallToolResult, note, error) {
		n, ok := st.get(in.ID)
		if !ok {
			return nil, note{}, fmt.Errorf("no note with id %q: list_notes shows the ids", in.ID)
		}
		return nil, n, nil
	})

	mcp.AddTool(s, &mcp.Tool{
		Name:        "add_note",
		Description: "Add a note. Returns the new note with its id.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: new(false), OpenWorldHint: new(false)},
	}, func(_ context.Context, _ *mcp.CallToolRequest, in addInput) (*mcp.CallToolResult, note, error) {
		if strings.TrimSpace(in.Title) == "" {
			return nil, note{}, errors.New("title is empty")
		}
		return nil, st.add(in.Title, in.Body), nil
	})

	mcp.AddTool(s, &mcp.Tool{
		Name:        "delete_note",
		Description: "Delete a note by id. It cannot be undone.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: new(true), IdempotentHint: true, OpenWorldHint: new(false)},
	}, func(_ context.Context, _ *mcp.CallToolRequest, in idInput) (*mcp.CallToolResult, deleteOutput, error) {
		if !st.delete(in.ID) {
			return nil, deleteOutput{}, fmt.Errorf("no note with id %q", in.ID)
		}
		return nil, deleteOutput{Deleted: in.ID}, nil
	})

	mcp.AddTool(s, &mcp.Tool{
		Name: "export_notes",
		Description: fmt.Sprintf("Export every note with its full history (%d revisions each) as markdown or JSON. "+
			"The export is large: about 200 KB.", exportRevisions),
		InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"format": map[string]any{"type": "string", "enum": []string{"markdown", "json"}, "default": "markdown"},
			},
			"additionalProperties": false,
		},
		Annotations: readOnly(),
	}, func(_ context.Context, _ *mcp.CallToolRequest, in exportInput) (*mcp.CallToolResult, any, error) {
		text, err := export(st.list(), in.Format)
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
	})

	s.AddResource(&mcp.Resource{
		URI:         indexURI,
		Name:        "index",
		Title:       "Notes index",
		Description: "One line per note: id, title and tags.",
		MIMEType:    "text/markdown",
	}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		var b strings.Builder
		b.WriteString("# Notes\n\n")
		for _, n := range st.list() {
			fmt.Fprintf(&b, "- %s: %s", n.ID, n.Title)
			if len(n.Tags) > 0 {
				fmt.Fprintf(&b, " (%s)", strings.Join(n.Tags, ", "))
			}
			b.WriteByte('\n')
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{
			{URI: req.Params.URI, MIMEType: "text/markdown", Text: b.String()},
		}}, nil
	})

	s.AddPrompt(&mcp.Prompt{
		Name:        "summarize_notes",
		Title:       "Summarize notes",
		Description: "Asks for a summary of the notes, or of those about a topic: decisions, open questions, action items.",
		Arguments: []*mcp.PromptArgument{
			{Name: "topic", Description: "only the notes that match these words, e.g. launch"},
		},
	}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		topic := strings.TrimSpace(req.Params.Arguments["topic"])
		notes, about := st.list(), ""
		if topic != "" {
			notes, about = st.search(topic), " about "+topic
		}
		var b strings.Builder
		fmt.Fprintf(&b, "Summarize these %d notes%s. List the decisions, the open questions and the action items, each with the id of its note.\n", len(notes), about)
		for _, n := range notes {
			fmt.Fprintf(&b, "\n## %s: %s\n\n%s\n", n.ID, n.Title, n.Body)
		}
		return &mcp.GetPromptResult{
			Description: "Summary of the notes" + about,
			Messages:    []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: b.String()}}},
		}, nil
	})
	return s
}

// Tool inputs.
type (
	searchInput struct {
		Query string `json:"query" jsonschema:"words to look for, e.g. launch retro"`
	}
	idInput struct {
		ID string `json:"id" jsonschema:"the note's id, e.g. n3"`
	}
	addInput struct {
		Title string `json:"title" jsonschema:"the note's title"`
		Body  string `json:"body" jsonschema:"the note's text"`
	}
	exportInput struct {
		Format string `json:"format,omitempty"` // "markdown" or "json"; the schema is in newServer
	}
)

// Tool outputs.
type (
	summary struct {
		ID      string    `json:"id"`
		Title   string    `json:"title"`
		Tags    []string  `json:"tags,omitempty"`
		Updated time.Time `json:"updated"`
	}
	listOutput struct {
		Count int       `json:"count"`
		Notes []summary `json:"notes"`
	}
	match struct {
		summary
		Snippet string `json:"snippet"`
	}
	searchOutput struct {
		Query   string  `json:"query"`
		Matches []match `json:"matches"`
	}
	deleteOutput struct {
		Deleted string `json:"deleted"`
	}
)

func summarize(n note) summary {
	return summary{ID: n.ID, Title: n.Title, Tags: n.Tags, Updated: n.Updated}
}

// snippet returns up to about 120 bytes of body around the first word of
// query found in it.
func snippet(body, query string) string {
	const width = 120
	at := -1
	lower := strings.ToLower(body)
	for _, w := range strings.Fields(strings.ToLower(query)) {
		if i := strings.Index(lower, w); i >= 0 && (at < 0 || i < at) {
			at = i
		}
	}
	start := max(0, at-width/3)
	for start > 0 && body[start-1] != ' ' { // start at a word
		start--
	}
	end := min(len(body), start+width)
	for end < len(body) && body[end] != ' ' {
		end++
	}
	s := body[start:end]
	if start > 0 {
		s = "…" + s
	}
	if end < len(body) {
		s += "…"
	}
	return s
}

// A revision is one entry of a note's changelog in an export.
type revision struct {
	Rev     int       `json:"rev"`
	At      time.Time `json:"at"`
	Author  string    `json:"author"`
	Summary string    `json:"summary"`
	Body    string    `json:"body"`
}

// history returns the changelog of a note for an export, oldest first.
// The store keeps no history, so it is made up, the same on every call.
func history(n note) []revision {
	authors := []string{"priya", "tom", "alex", "sam"}
	changes := []string{"first draft", "fixed typos", "added details", "reworded the intro", "updated after the sync", "linked related notes"}
	out := make([]revision, exportRevisions)
	for i := range out {
		out[i] = revision{
			Rev:     i + 1,
			At:      n.Created.Add(time.Duration(i) * 37 * time.Minute),
			Author:  authors[(i+len(n.Title))%len(authors)],
			Summary: changes[i%len(changes)],
			Body:    n.Body,
		}
	}
	return out
}

// export renders notes with their history as "markdown" or "json".
func export(notes []note, format string) (string, error) {
	switch format {
	case "json":
		type exported struct {
			note
			History []revision `json:"history"`
		}
		out := make([]exported, 0, len(notes))
		for _, n := range notes {
			out = append(out, exported{n, history(n)})
		}
		b, err := json.MarshalIndent(map[string]any{"notes": out}, "", "  ")
		return string(b), err
	case "markdown", "":
		var b strings.Builder
		fmt.Fprintf(&b, "# Notes export\n\n%d notes, with %d revisions each, oldest first.\n", len(notes), exportRevisions)
		for _, n := range notes {
			fmt.Fprintf(&b, "\n## %s: %s\n\nTags: %s. Created %s, updated %s.\n\n%s\n\n### Changelog\n",
				n.ID, n.Title, strings.Join(n.Tags, ", "), n.Created.Format(time.DateOnly), n.Updated.Format(time.DateOnly), n.Body)
			for _, r := range history(n) {
				fmt.Fprintf(&b, "\n- r%d, %s, %s: %s\n\n  > %s\n", r.Rev, r.At.Format(time.DateTime), r.Author, r.Summary, r.Body)
			}
		}
		return b.String(), nil
	}
	return "", fmt.Errorf("unknown format %q: use markdown or json", format)
}
