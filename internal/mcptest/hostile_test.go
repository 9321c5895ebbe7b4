//go:build unix

package mcptest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/internal/mcptest"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// listAll lists every tool of cs, page by page, up to maxPages pages.
func listAll(t *testing.T, cs *mcp.ClientSession, maxPages int) []*mcp.Tool {
	t.Helper()
	var tools []*mcp.Tool
	params := &mcp.ListToolsParams{}
	for range maxPages {
		res, err := cs.ListTools(ctx(t), params)
		if err != nil {
			t.Fatalf("ListTools: %v", err)
		}
		tools = append(tools, res.Tools...)
		if res.NextCursor == "" {
			return tools
		}
		params.Cursor = res.NextCursor
	}
	t.Fatalf("more than %d pages", maxPages)
	return nil
}

// byName indexes tools by name.
func byName(tools []*mcp.Tool) map[string]*mcp.Tool {
	m := map[string]*mcp.Tool{}
	for _, tool := range tools {
		m[tool.Name] = tool
	}
	return m
}

func TestHugeMetadata(t *testing.T) {
	cs, _ := connectStdio(t, mcptest.ModeHugeMetadata, nil)
	tools := byName(listAll(t, cs, 2))
	huge := tools[mcptest.ToolHugeDescription]
	if huge == nil || len(huge.Description) != mcptest.HugeDescriptionBytes || len(huge.Title) != mcptest.HugeTitleBytes {
		t.Fatalf("huge description tool = %v", huge != nil)
	}
	if tools[mcptest.HugeName()] == nil {
		t.Error("no tool with the huge name")
	}
	for _, name := range mcptest.InvalidToolNames() {
		if tools[name] == nil {
			t.Errorf("no tool named %q", name)
		}
	}
	if got := text(t, call(t, cs, mcptest.ToolPlain, nil)); got != "ok" {
		t.Errorf("plain tool = %q", got)
	}
}

func TestManyTools(t *testing.T) {
	if testing.Short() {
		t.Skip("lists 100,000 tools")
	}
	cs, _ := connectStdio(t, mcptest.ModeManyTools, nil)
	tools := listAll(t, cs, mcptest.ManyTools/mcptest.ManyToolsPageSize+1)
	if len(tools) != mcptest.ManyTools {
		t.Fatalf("listed %d tools, want %d", len(tools), mcptest.ManyTools)
	}
	if tools[0].Name != "many_000000" || tools[len(tools)-1].Name != "many_099999" {
		t.Errorf("first %s, last %s", tools[0].Name, tools[len(tools)-1].Name)
	}
	if _, err := cs.ListTools(ctx(t), &mcp.ListToolsParams{Cursor: "bogus"}); err == nil {
		t.Error("a bogus cursor was accepted")
	}
}

func TestSchemaBomb(t *testing.T) {
	cs, _ := connectStdio(t, mcptest.ModeSchemaBomb, nil)
	res, err := cs.ListTools(ctx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	tools := byName(res.Tools)
	if res.NextCursor != mcptest.SchemaBombCursor || len(tools) != 3 {
		t.Fatalf("first page: %d tools, cursor %q", len(res.Tools), res.NextCursor)
	}
	schema := func(name string) map[string]any {
		tool := tools[name]
		if tool == nil {
			t.Fatalf("no tool %s", name)
		}
		m, _ := tool.InputSchema.(map[string]any)
		return m
	}
	choice := schema(mcptest.ToolHugeEnum)["properties"].(map[string]any)["choice"].(map[string]any)
	if n := len(choice["enum"].([]any)); n != mcptest.HugeEnumValues {
		t.Errorf("enum of %d values", n)
	}
	if n := len(schema(mcptest.ToolWideSchema)["properties"].(map[string]any)); n != mcptest.WideSchemaProperties {
		t.Errorf("%d properties", n)
	}
	if ref := schema(mcptest.ToolRefCycle)["$ref"]; ref != "#/$defs/a" {
		t.Errorf("$ref = %v", ref)
	}
	// The second page nests beyond what encoding/json decodes.
	_, err = cs.ListTools(ctx(t), &mcp.ListToolsParams{Cursor: mcptest.SchemaBombCursor})
	if err == nil || !strings.Contains(err.Error(), "depth") {
		t.Errorf("reading the deep page: %v, want a depth error", err)
	}
	// The go-sdk client (v1.8) ends the session on a frame it cannot
	// decode; record what it did rather than rely on it.
	t.Logf("ping after the bomb: %v", cs.Ping(ctx(t), nil))
	if d := strings.Count(mcptest.DeepSchemaBomb(), "{"); d != mcptest.BombSchemaDepth*2-1 {
		t.Errorf("the deep schema opens %d objects", d)
	}
}

func TestHostileText(t *testing.T) {
	cs, _ := connectStdio(t, mcptest.ModeHostileText, nil)
	tool := byName(listAll(t, cs, 2))[mcptest.ToolHostileText]
	if tool == nil {
		t.Fatal("no hostile tool")
	}
	h := mcptest.HostileText()
	if tool.Description != h {
		t.Errorf("description = %q", tool.Description)
	}
	for _, s := range []string{"\x1b[8m", "\x1b]0;", "\u009b", "\x00", "\u200b", "\u202e", "\u2066", "\ufe01", "\U000E0069", mcptest.InjectionText} {
		if !strings.Contains(h, s) {
			t.Errorf("hostile text lacks %q", s)
		}
	}
	if !strings.Contains(tool.Title, "\u202e") || tool.Annotations == nil || !strings.Contains(tool.Annotations.Title, mcptest.InjectionText) {
		t.Errorf("title %q, annotations %+v", tool.Title, tool.Annotations)
	}
	b, _ := json.Marshal(tool.InputSchema)
	if !strings.Contains(string(b), `deep\u200b`) && !strings.Contains(string(b), "deep\u200b") {
		t.Errorf("schema = %s", b)
	}
	if got := text(t, call(t, cs, mcptest.ToolHostileText, map[string]any{"query": "x"})); got != h {
		t.Errorf("result = %q", got)
	}
}

// rugPullList lists the tools of cs by name.
func rugPullList(t *testing.T, cs *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	return byName(listAll(t, cs, 2))
}

func TestRugPull(t *testing.T) {
	for _, mode := range []string{mcptest.ModeRugPull, mcptest.ModeRugPullSchema, mcptest.ModeRugPullDestructive} {
		t.Run(mode, func(t *testing.T) {
			cs, _ := connectStdio(t, mode, nil)
			first := rugPullList(t, cs)[mcptest.RugPullTool]
			second := rugPullList(t, cs)
			third := rugPullList(t, cs)[mcptest.RugPullTool]
			pulled := second[mcptest.RugPullTool]
			if first == nil || pulled == nil || third == nil {
				t.Fatal("the tool is missing")
			}
			if first.Description != mcptest.RugPullDescription || !first.Annotations.ReadOnlyHint {
				t.Errorf("first list: %q, %+v", first.Description, first.Annotations)
			}
			a, _ := json.Marshal(pulled)
			c, _ := json.Marshal(third)
			if !bytes.Equal(a, c) {
				t.Error("the third list differs from the second")
			}
			required := func(tool *mcp.Tool) []any { return tool.InputSchema.(map[string]any)["required"].([]any) }
			switch mode {
			case mcptest.ModeRugPull:
				if pulled.Description != mcptest.RugPulledDescription {
					t.Errorf("pulled description = %q", pulled.Description)
				}
				if q := second[mcptest.RugPullQuietTool]; q == nil || q.Description != mcptest.QuietDescription2 {
					t.Errorf("quiet tool = %+v", q)
				}
			case mcptest.ModeRugPullSchema:
				if !slices.Contains(required(pulled), any(mcptest.RugPullRequired)) || slices.Contains(required(first), any(mcptest.RugPullRequired)) {
					t.Errorf("required: %v then %v", required(first), required(pulled))
				}
			case mcptest.ModeRugPullDestructive:
				if ann := pulled.Annotations; ann == nil || ann.ReadOnlyHint || ann.DestructiveHint == nil || !*ann.DestructiveHint {
					t.Errorf("pulled annotations = %+v", ann)
				}
			}
		})
	}
}

func TestHintsFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "hints.json")
	if err := os.WriteFile(file, []byte(`{"records":{"destructiveHint":true},"get_rows":{"readOnlyHint":true}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cs, _ := connectStdio(t, mcptest.ModeHintsFile, nil, mcptest.EnvHintsFile+"="+file)
	first := rugPullList(t, cs)
	if r := first["records"]; r == nil || r.Annotations == nil || r.Annotations.DestructiveHint == nil || !*r.Annotations.DestructiveHint ||
		r.Description != mcptest.HintsFileDescription {
		t.Fatalf("first list: %+v", first)
	}
	if g := first["get_rows"]; g == nil || g.Annotations == nil || !g.Annotations.ReadOnlyHint {
		t.Fatalf("first list: %+v", first)
	}
	// The file is read again on every listing.
	if err := os.WriteFile(file, []byte(`{"records":{"readOnlyHint":true}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	second := rugPullList(t, cs)
	if r := second["records"]; len(second) != 1 || r == nil || r.Annotations == nil || !r.Annotations.ReadOnlyHint || r.Annotations.DestructiveHint != nil {
		t.Errorf("second list: %+v", second)
	}
}

func TestRugPullHTTP(t *testing.T) {
	url := mcptest.ServeStreamableOnly(t, mcptest.ModeRugPull)
	cs := connect(t, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if d := rugPullList(t, cs)[mcptest.RugPullTool].Description; d != mcptest.RugPullDescription {
		t.Errorf("first = %q", d)
	}
	if d := rugPullList(t, cs)[mcptest.RugPullTool].Description; d != mcptest.RugPulledDescription {
		t.Errorf("second = %q", d)
	}
}

func TestFloodNotify(t *testing.T) {
	var logs, progress atomic.Int64
	opts := &mcp.ClientOptions{
		LoggingMessageHandler:       func(context.Context, *mcp.LoggingMessageRequest) { logs.Add(1) },
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { progress.Add(1) },
	}
	cs, _ := connectStdio(t, mcptest.ModeFloodNotify, opts)
	const count = 3000
	res := call(t, cs, mcptest.ToolFlood, map[string]any{"count": count})
	if got := text(t, res); got != "sent 3000 notifications of each kind" {
		t.Errorf("result = %q", got)
	}
	// Notifications are handled asynchronously: wait until all have
	// arrived, bounded by waitFor.
	deadline := time.Now().Add(waitFor)
	for logs.Load() < count || progress.Load() < count {
		if time.Now().After(deadline) {
			t.Fatalf("saw %d log messages and %d progress notifications, want %d each", logs.Load(), progress.Load(), count)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cs.Ping(ctx(t), nil); err != nil {
		t.Errorf("ping after the flood: %v", err)
	}
}

// rawExchange starts a stdio test server of mode, initializes it by hand
// and sends one request of method with params; it returns the response
// line, read with no cap on its size. It is much faster on huge messages
// than the go-sdk client.
func rawExchange(t *testing.T, mode, method string, params any) []byte {
	t.Helper()
	cmd := childCmd(t, mode)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		_ = cmd.Wait()
	}()
	p, _ := json.Marshal(params)
	msgs := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"` + method + `","params":` + string(p) + "}\n"
	if _, err := io.WriteString(stdin, msgs); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReaderSize(stdout, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			t.Fatalf("reading: %v", err)
		}
		if bytes.HasPrefix(line, []byte(`{"jsonrpc":"2.0","id":2,`)) {
			return line
		}
	}
}

// overDefaultCap checks that a go-sdk client over the default stdio
// transport fails to read a message of mode's, which is over
// mcp.DefaultMaxLineLength.
func overDefaultCap(t *testing.T, err error) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), "maximum line length") {
		t.Errorf("error %v, want the go-sdk's frame cap", err)
	}
}

func TestFloodResult(t *testing.T) {
	if testing.Short() {
		t.Skip("returns 50 MiB")
	}
	// The go-sdk's default cap on a stdio message is checked by
	// TestHugeResource; here the whole result is read raw.
	var res mcp.CallToolResult
	line := rawExchange(t, mcptest.ModeFloodResult, "tools/call", map[string]any{"name": mcptest.ToolFloodResult})
	var msg struct{ Result json.RawMessage }
	if err := json.Unmarshal(line, &msg); err != nil || json.Unmarshal(msg.Result, &res) != nil {
		t.Fatalf("decoding %d bytes: %v", len(line), err)
	}
	if len(res.Content) != 1 || len(res.Content[0].(*mcp.TextContent).Text) != mcptest.FloodResultBytes {
		t.Errorf("result of %d contents", len(res.Content))
	}
}

// callBig is call with two minutes rather than waitFor, for a result of
// megabytes: under -race on a loaded machine moving it can take longer
// than waitFor (the image's 8 MB took 7 s alone), and the content, not
// the time, is the point.
func callBig(t *testing.T, cs *mcp.ClientSession, name string) *mcp.CallToolResult {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := cs.CallTool(c, &mcp.CallToolParams{Name: name})
	if err != nil {
		t.Fatalf("calling %s: %v", name, err)
	}
	return res
}

func TestBinaryResult(t *testing.T) {
	cs, _ := connectStdio(t, mcptest.ModeBinaryResult, nil)
	img, ok := callBig(t, cs, mcptest.ToolImage).Content[0].(*mcp.ImageContent)
	if !ok || len(img.Data) != mcptest.BinaryImageBytes || img.MIMEType != "image/png" || !bytes.Equal(img.Data, mcptest.Blob(mcptest.BinaryImageBytes)) {
		t.Errorf("image: %v", ok)
	}
	audio, ok := callBig(t, cs, mcptest.ToolAudio).Content[0].(*mcp.AudioContent)
	if !ok || len(audio.Data) != mcptest.BinaryAudioBytes || audio.MIMEType != "audio/wav" {
		t.Errorf("audio: %v", ok)
	}
	mixed := callBig(t, cs, mcptest.ToolMixed).Content
	if len(mixed) != 4 {
		t.Fatalf("mixed has %d contents", len(mixed))
	}
	if e, ok := mixed[2].(*mcp.EmbeddedResource); !ok || len(e.Resource.Blob) != 1<<20 {
		t.Errorf("embedded: %T", mixed[2])
	}
	if _, ok := mixed[3].(*mcp.ResourceLink); !ok {
		t.Errorf("link: %T", mixed[3])
	}
}

func TestHugeResource(t *testing.T) {
	cs, _ := connectStdio(t, mcptest.ModeHugeResource, nil)
	list, err := cs.ListResources(ctx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	var claimed int64 = -1
	for _, r := range list.Resources {
		if r.URI == mcptest.HugeTextResource {
			claimed = r.Size
		}
	}
	if claimed != 10 {
		t.Errorf("the huge text resource claims %d bytes", claimed)
	}
	if testing.Short() {
		return // the reads move 36 MiB
	}
	// The read moves tens of MiB: under -race on a loaded machine that
	// takes longer than waitFor, and the cap, not the time, is the point.
	big, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err = cs.ReadResource(big, &mcp.ReadResourceParams{URI: mcptest.HugeTextResource})
	overDefaultCap(t, err)
	for uri, want := range map[string]int{mcptest.HugeTextResource: mcptest.HugeResourceTextBytes, mcptest.HugeBlobResource: mcptest.HugeResourceBlobBytes} {
		var msg struct {
			Result mcp.ReadResourceResult
		}
		line := rawExchange(t, mcptest.ModeHugeResource, "resources/read", map[string]any{"uri": uri})
		if err := json.Unmarshal(line, &msg); err != nil || len(msg.Result.Contents) != 1 {
			t.Fatalf("%s: %v", uri, err)
		}
		if c := msg.Result.Contents[0]; len(c.Text)+len(c.Blob) != want {
			t.Errorf("%s: %d bytes of text and %d of blob, want %d", uri, len(c.Text), len(c.Blob), want)
		}
	}
}

func TestEndlessLine(t *testing.T) {
	// A go-sdk client never completes initialize.
	cmd := childCmd(t, mcptest.ModeEndlessLine)
	c, cancel := context.WithTimeout(context.Background(), testwait.Patience)
	defer cancel()
	if cs, err := newClient(nil).Connect(c, &mcp.CommandTransport{Command: cmd, TerminateDuration: 200 * time.Millisecond}, nil); err == nil {
		cs.Close()
		t.Fatal("Connect to an endless line succeeded")
	}
	if testing.Short() {
		return
	}
	// Read raw: exactly EndlessLineBytes, no newline, until stdin closes.
	raw := childCmd(t, mcptest.ModeEndlessLine)
	stdin, err := raw.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := raw.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := raw.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(stdin, `{"jsonrpc":"2.0","id":7,"method":"initialize","params":{}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReaderSize(stdout, 1<<20)
	head := make([]byte, len(mcptest.EndlessLinePrefix)+1)
	if _, err := io.ReadFull(r, head); err != nil || string(head) != mcptest.EndlessLinePrefix+"7" {
		t.Fatalf("head %q, %v", head, err)
	}
	n, newlines := int64(len(head)), 0
	buf := make([]byte, 1<<20)
	for n < mcptest.EndlessLineBytes {
		m, err := r.Read(buf)
		n += int64(m)
		newlines += bytes.Count(buf[:m], []byte("\n"))
		if err != nil {
			t.Fatalf("after %d bytes: %v", n, err)
		}
	}
	if n != mcptest.EndlessLineBytes || newlines != 0 {
		t.Errorf("read %d bytes with %d newlines", n, newlines)
	}
	stdin.Close()
	if rest, err := io.ReadAll(r); len(rest) != 0 || err != nil {
		t.Errorf("after the line: %d bytes, %v", len(rest), err)
	}
	if err := raw.Wait(); err != nil && !errors.Is(err, io.EOF) {
		t.Errorf("child: %v", err)
	}
}

// TestSecretMeta: mode secret-meta writes the value of its
// META_SECRET… variable in every form into every field of its metadata,
// and lists items named with it.
func TestSecretMeta(t *testing.T) {
	const secret = "canaryMT4b8e2d6f01"
	cs, _ := connectStdio(t, mcptest.ModeSecretMeta, nil, mcptest.MetaSecretPrefix+"_X="+secret)
	ctx := testwait.Context(t)
	carries := func(what string, v any) {
		t.Helper()
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var s string
		// A field's text, decoded from the JSON it came in.
		if err := json.Unmarshal(b, &s); err != nil {
			s = string(b)
		}
		for _, f := range mcptest.MetaForms(secret) {
			if !strings.Contains(s, f) {
				t.Errorf("%s does not carry %q: %.300s", what, f, s)
			}
		}
	}
	init := cs.InitializeResult()
	carries("serverInfo name", init.ServerInfo.Name)
	carries("serverInfo title", init.ServerInfo.Title)
	carries("serverInfo version", init.ServerInfo.Version)
	carries("instructions", init.Instructions)
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		if tl.Name == mcptest.ToolMetaEcho {
			carries("tool title", tl.Title)
			carries("tool description", tl.Description)
			in, _ := json.Marshal(tl.InputSchema)
			if !strings.Contains(string(in), "k_"+secret) {
				t.Errorf("no property named with the value: %s", in)
			}
			carries("input schema", tl.InputSchema)
			carries("output schema", tl.OutputSchema)
			carries("annotations title", tl.Annotations.Title)
		}
	}
	if want := []string{mcptest.ToolMetaEcho, mcptest.ToolMetaPlain, mcptest.MetaLeakPrefix + secret}; !slices.Equal(names, want) {
		t.Errorf("tools %q, want %q", names, want)
	}
	rs, err := cs.ListResources(ctx, nil)
	if err != nil || len(rs.Resources) != 2 {
		t.Fatalf("resources: %v %+v", err, rs)
	}
	carries("resource description", rs.Resources[0].Description)
	if !strings.Contains(rs.Resources[1].URI, secret) {
		t.Errorf("no resource URI with the value: %+v", rs.Resources[1])
	}
	ts, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(ts.ResourceTemplates) != 2 {
		t.Fatalf("templates: %v %+v", err, ts)
	}
	carries("template description", ts.ResourceTemplates[0].Description)
	ps, err := cs.ListPrompts(ctx, nil)
	if err != nil || len(ps.Prompts) != 3 {
		t.Fatalf("prompts: %v %+v", err, ps)
	}
	carries("prompt description", ps.Prompts[0].Description)
	carries("prompt argument description", ps.Prompts[0].Arguments[0].Description)
}
