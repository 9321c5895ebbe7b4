package engine

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/voltmcp/voltmcp/engine/internal/transport"
	"github.com/voltmcp/voltmcp/internal/mcptest"
	"github.com/voltmcp/voltmcp/internal/testwait"
	"github.com/voltmcp/voltmcp/redact"
)

// TestScrubMetadataEveryField puts a secret, in each form the scrubber
// knows, into one field of a server's metadata at a time, and checks that
// scrubMetadata leaves no form of it in the metadata, keeps the item when
// the field is a text (rehashing a changed tool) and drops it, named
// scrubbed, when the field is its identifier.
func TestScrubMetadataEveryField(t *testing.T) {
	t.Parallel()
	const secret = "s3cr/et+Value 42=&x"
	var sc transport.Scrubber
	sc.Add(secret)
	schema := func(v string) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string", "description": v}}})
		return b
	}
	fields := []struct {
		name string
		set  func(m *Metadata, v string)
		// dropped is the kind of item dropped for the field, "" for a
		// text scrubbed in place.
		dropped string
	}{
		{"server name", func(m *Metadata, v string) { m.Name = "srv " + v }, ""},
		{"server title", func(m *Metadata, v string) { m.Title = v }, ""},
		{"server version", func(m *Metadata, v string) { m.Version = "1.0-" + v }, ""},
		{"capabilities", func(m *Metadata, v string) {
			m.Capabilities, _ = json.Marshal(map[string]any{"experimental": map[string]any{"x": v}})
		}, ""},
		{"tool name", func(m *Metadata, v string) { m.Tools[0].Name = "t_" + v }, "tool"},
		{"tool title", func(m *Metadata, v string) { m.Tools[0].Title = v }, ""},
		{"tool description", func(m *Metadata, v string) { m.Tools[0].Description = "uses " + v + " to log in" }, ""},
		{"schema description", func(m *Metadata, v string) { m.Tools[0].InputSchema = schema(v) }, ""},
		{"schema property name", func(m *Metadata, v string) {
			m.Tools[0].InputSchema, _ = json.Marshal(map[string]any{"properties": map[string]any{"p" + v: map[string]any{}}})
		}, ""},
		{"schema enum and default", func(m *Metadata, v string) {
			m.Tools[0].InputSchema, _ = json.Marshal(map[string]any{"properties": map[string]any{"a": map[string]any{"enum": []any{"x", v, 3.5}, "default": v}}})
		}, ""},
		{"output schema", func(m *Metadata, v string) { m.Tools[0].OutputSchema = schema(v) }, ""},
		{"annotations", func(m *Metadata, v string) { m.Tools[0].Annotations, _ = json.Marshal(map[string]any{"title": v}) }, ""},
		{"held tool", func(m *Metadata, v string) { m.Held = []Tool{{Name: "t", Description: v}} }, ""},
		{"resource URI", func(m *Metadata, v string) { m.Resources[0].URI = "file:///" + v }, "resource"},
		{"resource name", func(m *Metadata, v string) { m.Resources[0].Name = v }, ""},
		{"resource description", func(m *Metadata, v string) { m.Resources[0].Description = v }, ""},
		{"resource MIME type", func(m *Metadata, v string) { m.Resources[0].MIMEType = "text/" + v }, ""},
		{"template URI", func(m *Metadata, v string) { m.ResourceTemplates[0].URITemplate = "x://" + v + "/{id}" }, "resource template"},
		{"template title", func(m *Metadata, v string) { m.ResourceTemplates[0].Title = v }, ""},
		{"prompt name", func(m *Metadata, v string) { m.Prompts[0].Name = "p_" + v }, "prompt"},
		{"prompt description", func(m *Metadata, v string) { m.Prompts[0].Description = v }, ""},
		{"prompt argument name", func(m *Metadata, v string) { m.Prompts[0].Arguments[0].Name = v }, "prompt"},
		{"prompt argument description", func(m *Metadata, v string) { m.Prompts[0].Arguments[0].Description = v }, ""},
		{"note", func(m *Metadata, v string) { m.Notes = append(m.Notes, "listing failed: "+v) }, ""},
		{"dropped item", func(m *Metadata, v string) {
			m.Dropped = append(m.Dropped, DroppedItem{Kind: "tool", Name: v, Reason: v})
		}, ""},
	}
	fresh := func() *Metadata {
		m := &Metadata{Server: "srv", Tools: []Tool{{Name: "t", Description: "plain", InputSchema: schema("plain")}},
			Resources:         []Resource{{URI: "file:///r", Name: "r"}},
			ResourceTemplates: []ResourceTemplate{{URITemplate: "x://t/{id}", Name: "t"}},
			Prompts:           []Prompt{{Name: "p", Arguments: []PromptArgument{{Name: "a"}}}}}
		rehash(m)
		return m
	}
	for _, f := range fields {
		for _, form := range redact.Forms(secret) {
			m := fresh()
			f.set(m, form)
			rehash(m)
			before := len(m.Dropped)
			scrubMetadata(m, &sc)
			b := metadataText(t, m)
			for _, other := range redact.Forms(secret) {
				if strings.Contains(b, other) {
					t.Errorf("%s as %q: the form %q survives: %s", f.name, form, other, b)
				}
			}
			count := len(m.Tools) + len(m.Resources) + len(m.ResourceTemplates) + len(m.Prompts)
			switch {
			case f.dropped == "" && count != 4:
				t.Errorf("%s as %q: an item was dropped for a text: %s", f.name, form, b)
			case f.dropped != "" && (count != 3 || len(m.Dropped) != before+1 || m.Dropped[before].Kind != f.dropped ||
				m.Dropped[before].Reason != secretNameReason):
				t.Errorf("%s as %q: want the %s dropped for its name: %s", f.name, form, f.dropped, b)
			}
			if len(m.Tools) == 1 && m.Tools[0].Hash != toolHash(m.Tools[0]) {
				t.Errorf("%s as %q: the tool's hash is stale", f.name, form)
			}
			if m.Hash != metadataHash(m.Tools) {
				t.Errorf("%s as %q: the metadata's hash is stale", f.name, form)
			}
		}
	}
	// Metadata without a secret comes back as it was.
	m := fresh()
	want, _ := json.Marshal(m)
	scrubMetadata(m, &sc)
	if got, _ := json.Marshal(m); string(got) != string(want) {
		t.Errorf("clean metadata changed:\n%s\nwant\n%s", got, want)
	}
}

// rehash sets the hashes of m as discovery does.
func rehash(m *Metadata) {
	for i := range m.Tools {
		m.Tools[i].Hash = toolHash(m.Tools[i])
	}
	m.Hash = metadataHash(m.Tools)
}

// metadataText is m as JSON, without HTML escapes, followed by every
// string and key of its JSON fields as they decode, so that a value is
// found however it was escaped.
func metadataText(t *testing.T, m *Metadata) string {
	t.Helper()
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		t.Fatal(err)
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			b.WriteString(" " + x)
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for k, e := range x {
				b.WriteString(" " + k)
				walk(e)
			}
		}
	}
	for _, tl := range append(slices.Clone(m.Tools), m.Held...) {
		for _, raw := range []json.RawMessage{tl.InputSchema, tl.OutputSchema, tl.Annotations} {
			var v any
			if len(raw) > 0 && json.Unmarshal(raw, &v) == nil {
				walk(v)
			}
		}
	}
	var v any
	if len(m.Capabilities) > 0 && json.Unmarshal(m.Capabilities, &v) == nil {
		walk(v)
	}
	return b.String()
}

// TestCachedMetadataIsScrubbedOnLoad: metadata read from the cache (as
// an older version, or a hand, wrote it) is scrubbed of the server's
// secrets before anything shows it, though the server has not started:
// its scrubber knows the secrets of its definition from the start.
func TestCachedMetadataIsScrubbedOnLoad(t *testing.T) {
	t.Parallel()
	secrets := map[string]string{
		"env literal": "canaryCLIT4e9a2c7b51",
		"argv":        "canaryCARG7d3f1b8e26",
	}
	cmd, args, env := mcptest.Command(mcptest.ModeBehave)
	env["API_TOKEN"] = secrets["env literal"]
	args = append(args, "--token="+secrets["argv"])
	opts := workspace(t, map[string]server{"local": {"command": cmd, "args": args, "env": env}}, nil)
	e := start(t, opts)
	if err := e.Connect(testwait.Context(t), "local"); err != nil {
		t.Fatal(err)
	}
	e.Close()
	// Every cached file gets the secrets in a description, a schema's
	// default and a resource's name.
	dir := filepath.Join(opts.Home, ".volt", "agent", "mcp", "cache")
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no cache file in %s: %v", dir, err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		leak := secrets["env literal"] + " " + hex.EncodeToString([]byte(secrets["argv"]))
		for _, tl := range doc["tools"].([]any) {
			tool := tl.(map[string]any)
			tool["description"] = "logs in with " + leak
			tool["inputSchema"] = map[string]any{"type": "object", "properties": map[string]any{"k": map[string]any{"default": leak}}}
		}
		if rs, ok := doc["resources"].([]any); ok && len(rs) > 0 {
			rs[0].(map[string]any)["name"] = leak
		}
		if data, err = json.Marshal(doc); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	e = start(t, opts)
	m, err := e.Metadata("local")
	if err != nil || m == nil || len(m.Tools) == 0 {
		t.Fatalf("no cached metadata: %v", err)
	}
	seen := metadataText(t, m)
	for _, in := range []GatewayInput{{Action: "search", Query: "logs in"}, {Action: "describe", Server: "local", Tool: "echo"},
		{Action: "list_resources", Server: "local"}} {
		r := gw(t, e, in)
		b, _ := json.Marshal(r.Data)
		seen += r.Text + string(b)
	}
	if !strings.Contains(seen, "logs in with "+transport.ScrubMarker) {
		t.Errorf("the cached description is not shown scrubbed: %.500s", seen)
	}
	for name, v := range secrets {
		for _, form := range redact.Forms(v) {
			if strings.Contains(seen, form) {
				t.Errorf("the %s secret is shown (as %q) from the cache: %.500s", name, form, seen)
			}
		}
	}
	if st := e.Servers(); len(st) != 1 || st[0].Status == StatusReady {
		t.Errorf("the server was started: %+v", st)
	}
}
