package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/engine/internal/output"
	"github.com/voltmcp/voltmcp/internal/mcptest"
	"github.com/voltmcp/voltmcp/internal/npmpeers"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// servedClient serves e over stdio pipes to a go-sdk client, as an agent
// starts it, and closes both when the test ends.
func servedClient(t *testing.T, ctx context.Context, e *Engine) *mcp.ClientSession {
	t.Helper()
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- e.ServeStdio(ctx, sr, sw) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, &mcp.IOTransport{Reader: cr, Writer: cw}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); cw.Close(); <-done })
	return cs
}

// askServed calls the mcp tool through cs and returns its structured
// content, decoded, and its text. It fails the test on a protocol error,
// and on a tool error unless wantErr.
func askServed(t *testing.T, ctx context.Context, cs *mcp.ClientSession, args map[string]any, wantErr bool) (map[string]any, string) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: GatewayToolName, Arguments: args})
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	text := ""
	if len(res.Content) > 0 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			text = tc.Text
		}
	}
	if res.IsError != wantErr {
		t.Fatalf("%v: isError %v: %s", args, res.IsError, text)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	var data map[string]any
	_ = json.Unmarshal(raw, &data)
	return data, text
}

// describedEngine is an engine with one server of mode described, listed.
func describedEngine(t *testing.T, ctx context.Context) *Engine {
	t.Helper()
	e := start(t, workspace(t, map[string]server{"desc": stdio(mcptest.ModeDescribed, nil)}, nil))
	if err := e.Connect(ctx, "desc"); err != nil {
		t.Fatal(err)
	}
	return e
}

// TestDescribeShowsWhatCallersNeed: through serve, describe gives a
// tool's output schema, its task support and its annotations, in the
// structured result and in the text.
func TestDescribeShowsWhatCallersNeed(t *testing.T) {
	t.Parallel()
	ctx := testwait.Context(t)
	cs := servedClient(t, ctx, describedEngine(t, ctx))
	data, text := askServed(t, ctx, cs, map[string]any{"action": "describe", "server": "desc", "tool": mcptest.ToolReport}, false)
	out, _ := json.Marshal(data["outputSchema"])
	var want any
	_ = json.Unmarshal([]byte(mcptest.ReportOutputSchema), &want)
	wantOut, _ := json.Marshal(want)
	if !bytes.Equal(out, wantOut) {
		t.Errorf("outputSchema %s, want %s", out, wantOut)
	}
	if data["taskSupport"] != mcptest.ReportTaskSupport {
		t.Errorf("taskSupport %v, want %q", data["taskSupport"], mcptest.ReportTaskSupport)
	}
	if ann, _ := data["annotations"].(map[string]any); ann["readOnlyHint"] != true {
		t.Errorf("annotations %v", data["annotations"])
	}
	for _, want := range []string{`"outputSchema":{`, `"taskSupport":"optional"`, `"readOnlyHint":true`} {
		if !strings.Contains(text, want) {
			t.Errorf("the text has no %s: %s", want, text)
		}
	}
	// A tool without either shows neither.
	data, _ = askServed(t, ctx, cs, map[string]any{"action": "describe", "server": "desc", "tool": "lookup_0000"}, false)
	if _, ok := data["outputSchema"]; ok {
		t.Errorf("lookup_0000 has an output schema: %v", data)
	}
	if _, ok := data["taskSupport"]; ok {
		t.Errorf("lookup_0000 has task support: %v", data)
	}
}

// TestDescribeBoundsALargeSchema: a 32 KB input schema comes back within
// the 16 KiB bound, valid JSON, its top levels kept, with a warning and
// the read_cache id of the whole schema, which read_cache gives back.
func TestDescribeBoundsALargeSchema(t *testing.T) {
	t.Parallel()
	ctx := testwait.Context(t)
	cs := servedClient(t, ctx, describedEngine(t, ctx))
	data, text := askServed(t, ctx, cs, map[string]any{"action": "describe", "server": "desc", "tool": mcptest.ToolWide}, false)
	schema, _ := json.Marshal(data["inputSchema"])
	if len(schema) > maxSchema {
		t.Fatalf("the input schema is %d bytes, over %d", len(schema), maxSchema)
	}
	var in struct {
		Properties map[string]struct {
			Properties map[string]struct {
				Description string `json:"description"`
			} `json:"properties"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(schema, &in); err != nil || len(in.Properties) != 40 || len(in.Required) != 1 {
		t.Fatalf("the cut schema lost its top level: %v: %s", err, schema)
	}
	cache, _ := data["cache"].(map[string]any)
	id, _ := cache["id"].(string)
	if id == "" {
		t.Fatalf("no cache id: %v", data)
	}
	if inner := in.Properties["field39"].Properties["inner"].Description; !strings.Contains(inner, "cut:") || !strings.Contains(inner, id) {
		t.Errorf("a cut subschema says %q", inner)
	}
	if w, _ := data["warning"].(string); !strings.Contains(w, "below level 2") || !strings.Contains(w, id) {
		t.Errorf("warning %q", w)
	}
	if !strings.Contains(text, id) {
		t.Errorf("the text does not name the cache id: %.300s", text)
	}
	// The whole schema, from the output store.
	var whole strings.Builder
	offset := 0.0
	for range 20 {
		page, _ := askServed(t, ctx, cs, map[string]any{"action": "read_cache", "cacheId": id, "offset": offset}, false)
		whole.WriteString(page["content"].(string))
		next, _ := page["nextOffset"].(float64)
		if next == 0 {
			break
		}
		offset = next
	}
	var full struct {
		InputSchema json.RawMessage `json:"inputSchema"`
	}
	if err := json.Unmarshal([]byte(whole.String()), &full); err != nil || len(full.InputSchema) < mcptest.WideSchemaBytes*9/10 {
		t.Fatalf("read_cache gave %d bytes: %v", whole.Len(), err)
	}
	if !strings.Contains(string(full.InputSchema), `"description":"`+strings.Repeat("long text ", 75)+`long text"`) {
		t.Errorf("the cached schema is not whole: %.300s", full.InputSchema)
	}
}

// TestPagedAnswersGiveEveryResultOnce: search, list_resources and
// list_prompts, followed through nextCursor, give every result exactly
// once; a cursor of another query, another action, or none at all is a
// clear error.
func TestPagedAnswersGiveEveryResultOnce(t *testing.T) {
	t.Parallel()
	ctx := testwait.Context(t)
	cs := servedClient(t, ctx, describedEngine(t, ctx))
	pages := func(args map[string]any, collect func(data map[string]any) int) (map[string]int, []string) {
		seen := map[string]int{}
		var cursors []string
		for range 50 {
			data, _ := askServed(t, ctx, cs, args, false)
			if collect(data) == 0 {
				t.Fatalf("%v: an empty page: %v", args, data)
			}
			for k := range data {
				if k == "matches" || k == "resources" || k == "templates" || k == "prompts" {
					for _, it := range data[k].([]any) {
						m := it.(map[string]any)
						name := fmt.Sprint(m["tool"], m["uri"], m["uriTemplate"], m["name"])
						seen[name]++
					}
				}
			}
			next, _ := data["nextCursor"].(string)
			if next == "" {
				return seen, cursors
			}
			cursors = append(cursors, next)
			args = cloneArgs(args)
			args["cursor"] = next
		}
		t.Fatalf("%v: more than 50 pages", args)
		return nil, nil
	}
	count := func(keys ...string) func(map[string]any) int {
		return func(d map[string]any) int {
			n := 0
			for _, k := range keys {
				l, _ := d[k].([]any)
				n += len(l)
			}
			return n
		}
	}
	once := func(what string, seen map[string]int, want int) {
		t.Helper()
		if len(seen) != want {
			t.Errorf("%s: %d distinct results, want %d", what, len(seen), want)
		}
		for k, n := range seen {
			if n != 1 {
				t.Errorf("%s: %s %d times", what, k, n)
			}
		}
	}
	seen, cursors := pages(map[string]any{"action": "search", "query": "lookup", "limit": 8}, count("matches"))
	once("search", seen, mcptest.DescribedLookups)
	if len(cursors) != 3 {
		t.Errorf("search: %d cursors for %d matches of 8 a page", len(cursors), mcptest.DescribedLookups)
	}
	seen, _ = pages(map[string]any{"action": "list_resources", "server": "desc"}, count("resources", "templates"))
	once("list_resources", seen, mcptest.DescribedResources+mcptest.DescribedTemplates)
	seen, prompts := pages(map[string]any{"action": "list_prompts", "server": "desc"}, count("prompts"))
	once("list_prompts", seen, mcptest.DescribedPrompts)

	for _, tt := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"action": "search", "query": "weather", "cursor": cursors[0]}, "stale cursor"},
		{map[string]any{"action": "search", "query": "lookup", "cursor": "not-a-cursor"}, "invalid cursor"},
		{map[string]any{"action": "list_resources", "server": "desc", "cursor": prompts[0]}, "pages list_prompts, not list_resources"},
	} {
		_, text := askServed(t, ctx, cs, tt.args, true)
		if !strings.Contains(text, tt.want) {
			t.Errorf("%v: %q, want %q", tt.args, text, tt.want)
		}
	}
}

// cloneArgs copies a tool's arguments.
func cloneArgs(args map[string]any) map[string]any {
	out := make(map[string]any, len(args)+1)
	for k, v := range args {
		out[k] = v
	}
	return out
}

// TestDescribeSchemasAlwaysWithinTheBound: whatever shape a large
// schema has (wide, deep, one huge enum or default at the root, both
// schemas at once), describe's schemas are JSON objects within
// maxSchema, and the whole ones are in the output store.
func TestDescribeSchemasAlwaysWithinTheBound(t *testing.T) {
	t.Parallel()
	e := start(t, workspace(t, map[string]server{}, nil))
	var wide, deep, enum, def strings.Builder
	wide.WriteString(`{"type":"object","properties":{"p0":{"type":"string"}`)
	for i := 1; i < 50_000; i++ {
		fmt.Fprintf(&wide, `,"p%05d":{"type":"string"}`, i)
	}
	wide.WriteString(`}}`)
	for range 900 {
		deep.WriteString(`{"type":"object","properties":{"a":`)
	}
	deep.WriteString(`{}` + strings.Repeat("}}", 900))
	enum.WriteString(`{"type":"string","enum":["v0"`)
	for i := 1; i < 20_000; i++ {
		fmt.Fprintf(&enum, `,"v%d"`, i)
	}
	enum.WriteString(`]}`)
	def.WriteString(`{"type":"object","description":` + strconvQuote(strings.Repeat("d", 20_000)) + `,"default":` + strconvQuote(strings.Repeat("x", 40_000)) + `}`)
	for _, tt := range []struct{ name, in, out string }{
		{"wide", wide.String(), ""},
		{"deep", deep.String(), ""},
		{"enum", enum.String(), wide.String()},
		{"default", def.String(), deep.String()},
	} {
		if !json.Valid([]byte(tt.in)) || tt.out != "" && !json.Valid([]byte(tt.out)) {
			t.Fatalf("%s: the test's schema is not JSON", tt.name)
		}
		tool := Tool{Name: tt.name, InputSchema: json.RawMessage(tt.in)}
		if tt.out != "" {
			tool.OutputSchema = json.RawMessage(tt.out)
		}
		var d DescribeResult
		e.fitSchemas(output.Source{Server: "srv"}, tool, &d)
		for which, s := range map[string]json.RawMessage{"input": d.InputSchema, "output": d.OutputSchema} {
			if which == "output" && tt.out == "" {
				if s != nil {
					t.Errorf("%s: an output schema out of none: %s", tt.name, s)
				}
				continue
			}
			var v map[string]any
			if len(s) > maxSchema || json.Unmarshal(s, &v) != nil {
				t.Errorf("%s: the %s schema is %d bytes, or not an object: %.200s", tt.name, which, len(s), s)
			}
		}
		if d.Cache == nil || !strings.Contains(d.Warning, d.Cache.ID) {
			t.Errorf("%s: cache %v, warning %q", tt.name, d.Cache, d.Warning)
		}
	}
}

// strconvQuote is s as a JSON string.
func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestPeerEverythingDescribe: describe of the official server-everything
// over stdio gives get-structured-content's output schema and
// simulate-research-query's task support ("required"), which the go-sdk's
// client does not decode.
func TestPeerEverythingDescribe(t *testing.T) {
	t.Parallel()
	e := start(t, workspace(t, map[string]server{"everything": nodeServer(t, npmpeers.EverythingEntry, "stdio")}, nil))
	ctx := testwait.Context(t)
	if err := e.Connect(ctx, "everything"); err != nil {
		t.Fatal(err)
	}
	d := e.Gateway(ctx, GatewayInput{Action: "describe", Server: "everything", Tool: "get-structured-content"})
	if dr, ok := d.Data.(DescribeResult); !ok || d.IsError || !strings.Contains(string(dr.OutputSchema), `"properties"`) {
		t.Errorf("get-structured-content: %s", d.Text)
	}
	// The task tool is registered once the session is initialized, and
	// announced with list_changed: the refresh that follows lists it.
	var dr DescribeResult
	for ctx.Err() == nil {
		d = e.Gateway(ctx, GatewayInput{Action: "describe", Server: "everything", Tool: "simulate-research-query"})
		if dr, _ = d.Data.(DescribeResult); !d.IsError {
			break
		}
		if err := e.Refresh(ctx, "everything"); err != nil {
			t.Fatal(err)
		}
	}
	if dr.TaskSupport != "required" || !strings.Contains(d.Text, `"taskSupport":"required"`) {
		t.Errorf("simulate-research-query: %s", d.Text)
	}
}
