package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voltmcp/voltmcp/internal/mcptest"
)

// describedProject writes a project whose one server, desc, runs the
// test server of mode described.
func describedProject(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd, args, env := mcptest.Command(mcptest.ModeDescribed)
	doc := map[string]any{"version": 1, "servers": map[string]any{"desc": map[string]any{"command": cmd, "args": args, "env": env}}}
	data, _ := json.Marshal(doc)
	if err := os.MkdirAll(filepath.Join(dir, ".volt"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".volt", "mcp.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestDescribeAndPagesOnTheCLI: `voltmcp describe` prints a tool's output
// schema, task support and annotations, and a large schema cut to 16 KiB
// with the cache id of the whole one, which read-cache prints; `search`,
// `resources` and `prompts` page with --cursor, every result once.
func TestDescribeAndPagesOnTheCLI(t *testing.T) {
	t.Parallel()
	project := describedProject(t)
	home := t.TempDir()
	env := fakeEnv(t, map[string]string{"HOME": home, "PATH": os.Getenv("PATH")})
	cli := func(args ...string) cliResult {
		return runCLI(t, env, append(args, "--home", home, "--project", project, "--approve")...)
	}
	if r := cli("refresh", "desc"); r.code != exitOK {
		t.Fatalf("refresh:\n%s", r)
	}
	r := cli("describe", "desc", mcptest.ToolReport, "--json")
	var d struct {
		OutputSchema json.RawMessage `json:"outputSchema"`
		TaskSupport  string          `json:"taskSupport"`
		Annotations  map[string]any  `json:"annotations"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil || r.code != exitOK {
		t.Fatalf("describe --json: %v\n%s", err, r)
	}
	if !strings.Contains(string(d.OutputSchema), `"temperature"`) || d.TaskSupport != mcptest.ReportTaskSupport || d.Annotations["readOnlyHint"] != true {
		t.Errorf("describe --json: %+v", d)
	}
	if r := cli("describe", "desc", mcptest.ToolReport); r.code != exitOK || !strings.Contains(r.stdout, "tasks:     optional (task support)") || !strings.Contains(r.stdout, "\noutput:\n") || !strings.Contains(r.stdout, "temperature") {
		t.Errorf("describe:\n%s", r)
	}

	r = cli("describe", "desc", mcptest.ToolWide, "--json")
	var w struct {
		InputSchema json.RawMessage `json:"inputSchema"`
		Warning     string          `json:"warning"`
		Cache       struct{ ID string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &w); err != nil || r.code != exitOK {
		t.Fatalf("describe wide --json: %v\n%s", err, r)
	}
	if len(w.InputSchema) > 16384 || !json.Valid(w.InputSchema) || w.Cache.ID == "" || !strings.Contains(w.Warning, w.Cache.ID) {
		t.Fatalf("describe wide: %d bytes, warning %q, cache %q", len(w.InputSchema), w.Warning, w.Cache.ID)
	}
	if r := cli("read-cache", w.Cache.ID); r.code != exitOK || !strings.Contains(r.stdout, `"field39"`) {
		t.Errorf("read-cache of the whole schema:\n%.500s", r.stdout)
	}

	// The human output says which command prints the next page.
	if r := cli("search", "lookup", "--limit", "8"); r.code != exitOK || !strings.Contains(r.stdout, "more: voltmcp search lookup --limit 8 --cursor ") {
		t.Errorf("search without --json names no next page:\n%s", r)
	}
	if r := cli("prompts", "desc"); r.code != exitOK || !strings.Contains(r.stdout, "more: voltmcp prompts desc --cursor ") {
		t.Errorf("prompts without --json names no next page:\n%s", r)
	}
	pages := func(key string, args ...string) map[string]int {
		seen := map[string]int{}
		cursor := ""
		for range 50 {
			a := append([]string(nil), args...)
			if cursor != "" {
				a = append(a, "--cursor", cursor)
			}
			r := cli(append(a, "--json")...)
			var page map[string]any
			if err := json.Unmarshal([]byte(r.stdout), &page); err != nil || r.code != exitOK {
				t.Fatalf("%v: %v\n%s", a, err, r)
			}
			for _, k := range strings.Split(key, ",") {
				items, _ := page[k].([]any)
				for _, it := range items {
					m := it.(map[string]any)
					seen[k+":"+toString(m["tool"])+toString(m["uri"])+toString(m["uriTemplate"])+toString(m["name"])]++
				}
			}
			next, _ := page["nextCursor"].(string)
			if next == "" {
				return seen
			}
			cursor = next
		}
		t.Fatalf("%v: more than 50 pages", args)
		return nil
	}
	for _, tt := range []struct {
		key  string
		args []string
		want int
	}{
		{"matches", []string{"search", "lookup", "--limit", "8"}, mcptest.DescribedLookups},
		{"resources,templates", []string{"resources", "desc"}, mcptest.DescribedResources + mcptest.DescribedTemplates},
		{"prompts", []string{"prompts", "desc"}, mcptest.DescribedPrompts},
	} {
		seen := pages(tt.key, tt.args...)
		if len(seen) != tt.want {
			t.Errorf("%v: %d results, want %d", tt.args, len(seen), tt.want)
		}
		for k, n := range seen {
			if n != 1 {
				t.Errorf("%v: %s %d times", tt.args, k, n)
			}
		}
	}
	if r := cli("search", "lookup", "--cursor", "nope"); r.code != exitFindings || !strings.Contains(r.stdout, "invalid cursor") {
		t.Errorf("search --cursor nope:\n%s", r)
	}
}

// toString is v as a string, "" for nil.
func toString(v any) string {
	s, _ := v.(string)
	return s
}
