package cue

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	cuelang "cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"
	cuejson "cuelang.org/go/encoding/json"
	"cuelang.org/go/encoding/jsonschema"
)

// jsonSchemaDoc is the emitted JSON Schema, generated once.
var jsonSchemaDoc = sync.OnceValues(func() ([]byte, error) {
	s, err := NewSchema()
	if err != nil {
		return nil, err
	}
	return s.JSONSchema()
})

// jsonSchemaValidator compiles the emitted JSON Schema back into CUE with
// CUE's own JSON Schema decoder. It validates as an editor would, with no
// help from the Go loader, and proves the schema is JSON Schema that
// another tool can read.
type jsonSchemaValidator struct {
	ctx    *cuelang.Context
	schema cuelang.Value
}

func newJSONSchemaValidator(t *testing.T) *jsonSchemaValidator {
	t.Helper()
	raw, err := jsonSchemaDoc()
	if err != nil {
		t.Fatalf("JSONSchema: %v", err)
	}
	ctx := cuecontext.New()
	expr, err := cuejson.Extract("schema.json", raw)
	if err != nil {
		t.Fatalf("the JSON Schema is not JSON CUE can read: %v", err)
	}
	// A nil *jsonschema.Config panics in Extract.
	f, err := jsonschema.Extract(ctx.BuildExpr(expr), &jsonschema.Config{})
	if err != nil {
		t.Fatalf("jsonschema.Extract rejects the emitted JSON Schema: %v", err)
	}
	schema := ctx.BuildFile(f)
	if err := schema.Err(); err != nil {
		t.Fatalf("the CUE extracted from the JSON Schema does not compile: %v", err)
	}
	return &jsonSchemaValidator{ctx: ctx, schema: schema}
}

// validate checks one JSON document against the schema and returns a
// readable error, or nil.
func (v *jsonSchemaValidator) validate(name string, data []byte) error {
	expr, err := cuejson.Extract(name, data)
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	doc := v.ctx.BuildExpr(expr)
	if err := v.schema.Unify(doc).Validate(cuelang.Concrete(true)); err != nil {
		// The top level is anyOf(three dialects), whose error says only
		// "0 matched": say why each dialect refused the document.
		var b strings.Builder
		for _, def := range []string{"#VoltmcpFile", "#ClaudeFile", "#VSCodeFile"} {
			why := v.schema.LookupPath(cuelang.ParsePath(def)).Unify(doc).Validate(cuelang.Concrete(true))
			fmt.Fprintf(&b, "\n    as %s: %s", def, jsonSchemaBriefError(why))
		}
		return fmt.Errorf("does not validate against the JSON Schema:%s", b.String())
	}
	return nil
}

// jsonSchemaBriefError lists the paths and messages of a CUE error,
// leaving out the (very long) values that CUE prints.
func jsonSchemaBriefError(err error) string {
	if err == nil {
		return "ok"
	}
	var msgs []string
	for _, e := range cueerrors.Errors(err) {
		format, args := e.Msg()
		msg := fmt.Sprintf(format, args...)
		if len(msg) > 160 {
			msg = msg[:160] + "…"
		}
		msgs = append(msgs, strings.Join(e.Path(), ".")+": "+msg)
		if len(msgs) == 4 {
			msgs = append(msgs, "…")
			break
		}
	}
	return strings.Join(msgs, "; ")
}

func TestJSONSchemaDocument(t *testing.T) {
	raw, err := jsonSchemaDoc()
	if err != nil {
		t.Fatalf("JSONSchema: %v", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("JSONSchema output is not JSON: %v", err)
	}
	if got, want := doc["$schema"], "https://json-schema.org/draft/2020-12/schema"; got != want {
		t.Errorf("$schema = %v, want %q", got, want)
	}
	if got := doc["$id"]; got != JSONSchemaID || JSONSchemaID == "" {
		t.Errorf("$id = %v, want %q", got, JSONSchemaID)
	}
	defs, _ := doc["$defs"].(map[string]any)
	for _, name := range []string{"VoltmcpFile", "ClaudeFile", "VSCodeFile", "Server", "Settings", "Auth"} {
		if _, ok := defs[name]; !ok {
			t.Errorf("$defs has no %s", name)
		}
	}
	// A property emitted as the schema true accepts anything. Only a field
	// the CUE schema leaves as _ may be true; anything else means the
	// generator dropped its constraints (CUE v0.17.1 does so for a field
	// whose schema is an allOf, in a struct with a pattern constraint
	// such as [=~"^x-"]: _, when the field has no doc comment).
	mayBeAnything := map[string]bool{"VSCodeServer.gallery": true}
	for defName, def := range defs {
		props, _ := jsonSchemaProp(def)["properties"].(map[string]any)
		for name, prop := range props {
			if prop == true && !mayBeAnything[defName+"."+name] {
				t.Errorf("$defs.%s.properties.%s is true: its constraints were lost", defName, name)
			}
		}
	}
}

func TestJSONSchemaDefaults(t *testing.T) {
	raw, err := jsonSchemaDoc()
	if err != nil {
		t.Fatalf("JSONSchema: %v", err)
	}
	var doc struct {
		Defs map[string]struct {
			// A property is a schema object, or true/false.
			Properties map[string]any `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	settings := doc.Defs["Settings"].Properties
	if len(settings) == 0 {
		t.Fatal("$defs.Settings has no properties")
	}
	// Every setting has a default, so an editor can show it.
	defaults := map[string]any{}
	for name, prop := range settings {
		d, ok := jsonSchemaProp(prop)["default"]
		if !ok {
			t.Errorf("setting %s has no default", name)
			continue
		}
		defaults[name] = d
	}
	for name, want := range map[string]any{
		"maxOutputBytes":      51200.0,
		"maxOutputLines":      2000.0,
		"connectTimeoutMs":    15000.0,
		"callTimeoutMs":       600000.0,
		"outputCacheMaxBytes": 268435456.0,
		"enabled":             true,
		"directTools":         false,
		"listAtStart":         true,
		"mode":                "proxy",
		"defaultProjectTrust": "ask",
		"prompts":             "user-preview",
	} {
		if got := defaults[name]; got != want {
			t.Errorf("settings.%s default = %v (%T), want %v", name, got, got, want)
		}
	}
	for _, def := range []string{"Server", "ClaudeServer", "VSCodeServer"} {
		props := doc.Defs[def].Properties
		if got := jsonSchemaProp(props["lifecycle"])["default"]; got != "lazy" {
			t.Errorf("%s.lifecycle default = %v, want lazy", def, got)
		}
		if got := jsonSchemaProp(props["enabled"])["default"]; got != true {
			t.Errorf("%s.enabled default = %v, want true", def, got)
		}
	}

	// The defaults, written out as a file, are themselves valid.
	v := newJSONSchemaValidator(t)
	file, err := json.Marshal(map[string]any{"version": 1, "settings": defaults})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.validate("defaults.json", file); err != nil {
		t.Errorf("a file holding every default setting: %v", err)
	}
}

// jsonSchemaProp returns a property's schema object, or nil for a boolean
// schema.
func jsonSchemaProp(p any) map[string]any {
	m, _ := p.(map[string]any)
	return m
}

// jsonSchemaNotConfigs lists JSON files under examples/ (slash-separated,
// relative to examples/) that are not MCP config files, such as policy
// input documents, and so are not validated against the config schema.
var jsonSchemaNotConfigs = []string{}

// jsonSchemaNotConfigDirs are directories under examples/ that hold no
// MCP config: plugin and policy sources, and npm's installs.
var jsonSchemaNotConfigDirs = []string{"node_modules", "plugins", "policies"}

// TestJSONSchemaAcceptsExamples checks every JSON file under examples/,
// including dot-files such as quickstart/.mcp.json, against the emitted
// JSON Schema, as an editor would.
func TestJSONSchemaAcceptsExamples(t *testing.T) {
	v := newJSONSchemaValidator(t)
	root := filepath.Join("..", "examples")
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && slices.Contains(jsonSchemaNotConfigDirs, d.Name()) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.EqualFold(filepath.Ext(path), ".json") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if !slices.Contains(jsonSchemaNotConfigs, filepath.ToSlash(rel)) {
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", root, err)
	}
	if len(files) == 0 {
		t.Fatalf("no JSON files under %s", root)
	}
	// The walk must see dot-files and dot-directories too.
	for _, want := range []string{"quickstart/.mcp.json", "quickstart/.volt/mcp.json"} {
		if !slices.Contains(files, want) {
			t.Errorf("walk of examples/ did not find %s (found %v)", want, files)
		}
	}
	for _, rel := range files {
		t.Run(rel, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
			if err != nil {
				t.Fatal(err)
			}
			if err := v.validate(rel, data); err != nil {
				t.Errorf("examples/%s %v", rel, err)
			}
		})
	}
}

func TestJSONSchemaAcceptsValid(t *testing.T) {
	v := newJSONSchemaValidator(t)
	for _, tc := range []struct {
		name, doc string
	}{
		{name: "empty", doc: `{}`},
		{name: "voltmcp", doc: `{"version":1,"settings":{"maxOutputBytes":4096},"servers":{"a":{"transport":"stdio","command":"srv","lifecycle":"keep-alive"}}}`},
		{name: "mcpServers", doc: `{"mcpServers":{"a":{"type":"http","url":"https://example.com/mcp","headers":{"Authorization":"Bearer ${TOKEN}"},"disabled":false}}}`},
		{name: "vscode", doc: `{"servers":{"a":{"type":"sse","url":"https://example.com/sse"}},"inputs":[]}`},
		{name: "auth kinds", doc: `{"servers":{
			"b":{"url":"https://a.example/mcp","auth":{"type":"bearer","token":"${env:T}"}},
			"e":{"url":"https://b.example/mcp","auth":{"type":"env","variable":"T","header":"X-Key","scheme":""}},
			"o":{"url":"https://c.example/mcp","auth":{"type":"oauth","flow":"device","scope":"read"}},
			"n":{"url":"http://localhost:1/mcp","auth":{"type":"none"}}}}`},
		{name: "directTools list", doc: `{"servers":{"a":{"command":"srv","directTools":["read_*"]}}}`},
		{name: "voltmcp x- extensions", doc: `{"version":1,"x-owner":"team-a","servers":{"a":{"command":"srv","x-owner":"team-a"}}}`},
		{
			name: "mcpServers x- extension",
			doc:  `{"mcpServers":{"a":{"command":"srv","x-owner":"team-a"}}}`,
		},
		{
			name: "vscode inputs with prompts",
			doc:  `{"inputs":[{"type":"promptString","id":"key","description":"API key","password":true}],"servers":{"a":{"type":"stdio","command":"srv"}}}`,
		},
		{
			name: "vscode dev settings",
			doc:  `{"servers":{"a":{"type":"stdio","command":"srv","dev":{"watch":"src/**/*.ts"}}}}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := v.validate(tc.name+".json", []byte(tc.doc))
			if err != nil {
				t.Errorf("%s %v", tc.doc, err)
			}
		})
	}
}

func TestJSONSchemaRejectsInvalid(t *testing.T) {
	v := newJSONSchemaValidator(t)
	for _, doc := range []string{
		`{"servers":{"x":{"lifecycle":"sometimes"}}}`,
		`{"mcpServers":{"x":{"type":"carrier-pigeon"}}}`,
		`{"settings":{"bogus":1}}`,
		`{"version":2}`,
		`{"settings":{"maxOutputBytes":10}}`,
		`{"settings":{"callTimeoutMs":1.5}}`,
		`{"servers":{"x":{"command":"srv","idleTimeoutMs":-1}}}`,
		`{"mcpServers":{"x":{"command":"srv","connectTimeoutMs":5}}}`,
		`{"servers":{"x":{"type":"stdio","command":"srv","callTimeoutMs":"10s"}}}`,
		`{"servers":{"x":{"command":"srv","comand":"typo"}}}`,
		`{"servers":{"x":{"command":"srv","env":{"1BAD":"v"}}}}`,
		`{"servers":{"x":{"url":"ftp://example.com"}}}`,
		`{"servers":{"x":{"url":"https://example.com","auth":{"type":"bearer"}}}}`,
		`{"servers":{"x":{"url":"https://example.com","auth":{"type":"kerberos"}}}}`,
		`{"servers":{"x":{"command":"srv","includeTools":["has space"]}}}`,
		`{"mcpServers":{"x":{"command":["srv"]}}}`,
		`[]`,
	} {
		if err := v.validate("invalid.json", []byte(doc)); err == nil {
			t.Errorf("the JSON Schema accepts invalid %s", doc)
		}
	}
}
