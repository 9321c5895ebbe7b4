package rpc

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/voltmcp/voltmcp/engine"
)

// wireTypes are the types docs/rpc.schema.json defines, by definition
// name.
var wireTypes = map[string]reflect.Type{
	"McpServerSummary":     reflect.TypeFor[McpServerSummary](),
	"McpToolCounts":        reflect.TypeFor[McpToolCounts](),
	"McpCapabilities":      reflect.TypeFor[McpCapabilities](),
	"McpRecentCallSummary": reflect.TypeFor[McpRecentCallSummary](),
	"McpTool":              reflect.TypeFor[McpTool](),
	"McpToolDetail":        reflect.TypeFor[McpToolDetail](),
	"McpResource":          reflect.TypeFor[McpResource](),
	"McpPrompt":            reflect.TypeFor[McpPrompt](),
	"McpPromptArgument":    reflect.TypeFor[McpPromptArgument](),
	"McpTruncation":        reflect.TypeFor[McpTruncation](),
	"McpCacheRef":          reflect.TypeFor[McpCacheRef](),
	"McpContent":           reflect.TypeFor[McpContent](),
	"McpCallResult":        reflect.TypeFor[McpCallResult](),
	"McpPin":               reflect.TypeFor[McpPin](),
	"McpPendingChange":     reflect.TypeFor[McpPendingChange](),
	"McpAuthFlow":          reflect.TypeFor[McpAuthFlow](),
	"McpEvent":             reflect.TypeFor[McpEvent](),
	"Capabilities":         reflect.TypeFor[Capabilities](),
	"McpServerLog":         reflect.TypeFor[McpServerLog](),
	"McpLogRecord":         reflect.TypeFor[McpLogRecord](),
}

// schemaType is the JSON Schema type of a Go type, "" for any JSON.
func schemaType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == rawMessageType || t.Kind() == reflect.Interface {
		return ""
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint64, reflect.Uint32:
		return "integer"
	case reflect.Float64, reflect.Float32:
		return "number"
	case reflect.Slice:
		return "array"
	case reflect.Struct, reflect.Map:
		return "object"
	}
	return "?" + t.Kind().String()
}

// TestSchemaMatchesWireTypes checks docs/rpc.schema.json against the
// wire types: each definition has exactly the type's fields, each of the
// field's JSON type, and requires exactly the fields always present (no
// omitempty).
func TestSchemaMatchesWireTypes(t *testing.T) {
	data, err := os.ReadFile("../docs/rpc.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Defs map[string]struct {
			Type       string                    `json:"type"`
			Properties map[string]map[string]any `json:"properties"`
			Required   []string                  `json:"required"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	for name := range doc.Defs {
		if wireTypes[name] == nil {
			t.Errorf("the schema defines %s, which is no wire type", name)
		}
	}
	for name, typ := range wireTypes {
		def, ok := doc.Defs[name]
		if !ok {
			t.Errorf("the schema lacks %s", name)
			continue
		}
		var required []string
		tags := map[string]bool{}
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			tag, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			tags[tag] = true
			prop, ok := def.Properties[tag]
			if !ok {
				t.Errorf("%s.%s (%s) is not in the schema", name, tag, f.Name)
				continue
			}
			want := schemaType(f.Type)
			got, _ := prop["type"].(string)
			if _, isRef := prop["$ref"]; isRef {
				got = "object"
			}
			if got != want {
				t.Errorf("%s.%s: the schema's type is %q, the Go type's %q", name, tag, got, want)
			}
			if !strings.Contains(opts, "omitempty") {
				required = append(required, tag)
			}
		}
		for prop := range def.Properties {
			if !tags[prop] {
				t.Errorf("the schema's %s.%s is no field of the Go type", name, prop)
			}
		}
		sort.Strings(required)
		got := slices.Clone(def.Required)
		sort.Strings(got)
		if !slices.Equal(got, required) {
			t.Errorf("%s: the schema requires %v, the Go type always has %v", name, got, required)
		}
	}
}

// TestEventCarriesEveryEngineField checks that McpEvent has a field for
// each of the engine's Event fields (its time is "at"): a field the
// engine adds must reach the wire.
func TestEventCarriesEveryEngineField(t *testing.T) {
	have := map[string]bool{}
	wt := reflect.TypeFor[McpEvent]()
	for i := 0; i < wt.NumField(); i++ {
		tag, _, _ := strings.Cut(wt.Field(i).Tag.Get("json"), ",")
		have[tag] = true
	}
	et := reflect.TypeFor[engine.Event]()
	for i := 0; i < et.NumField(); i++ {
		tag, _, _ := strings.Cut(et.Field(i).Tag.Get("json"), ",")
		if tag == "time" {
			tag = "at"
		}
		if !have[tag] {
			t.Errorf("engine.Event's %s is not carried by McpEvent", tag)
		}
	}
}

// TestDocumentedMethods checks docs/rpc.md against the server: every
// method has a section, every section names a method, and every example
// request decodes strictly with its method's params.
func TestDocumentedMethods(t *testing.T) {
	data, err := os.ReadFile("../docs/rpc.md")
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^### `([a-z_]+)`").FindAllSubmatch(data, -1) {
		documented = append(documented, string(m[1]))
	}
	for _, m := range Methods() {
		if !slices.Contains(documented, m) {
			t.Errorf("docs/rpc.md does not document %s", m)
		}
	}
	for _, d := range documented {
		if methodsByName[d] == nil {
			t.Errorf("docs/rpc.md documents %s, which the server does not answer", d)
		}
	}
	examples := 0
	for _, line := range bytes.Split(data, []byte("\n")) {
		if !bytes.HasPrefix(line, []byte(`{"jsonrpc":"2.0","id":`)) || !bytes.Contains(line, []byte(`"method":`)) {
			continue
		}
		examples++
		req, rerr := decodeRequest(line)
		if rerr != nil {
			t.Errorf("example %s: %v", line, rerr)
			continue
		}
		m := methodsByName[req.Method]
		if m == nil {
			continue
		}
		if p := paramsOf(req.Method); p != nil {
			if perr := decodeParams(req.Params, p); perr != nil {
				t.Errorf("example %s: %v", line, perr)
			}
		}
	}
	if examples < len(Methods()) {
		t.Errorf("docs/rpc.md has %d example requests, fewer than the %d methods", examples, len(Methods()))
	}
}

// paramsOf is a fresh params value of method, nil for one that takes
// its params as they came.
func paramsOf(method string) any {
	if m := methodsByName[method]; m != nil && m.params != nil {
		return m.params()
	}
	return nil
}
