package cue

import (
	"encoding/json"
	"fmt"
	"strings"

	cuelang "cuelang.org/go/cue"
	"cuelang.org/go/encoding/jsonschema"
)

// JSONSchemaID is the $id of the emitted JSON Schema.
const JSONSchemaID = "https://voltmcp.dev/schema/mcp.json"

// JSONSchema returns a JSON Schema (draft 2020-12) for config files, in any
// of the three dialects, generated from the CUE schema so the two never
// drift. CUE's generator is experimental; this fixes up what it gets
// wrong for editors: it inlines embedded definitions (which it would
// otherwise close twice, rejecting valid files) and adds the defaults.
func (s *Schema) JSONSchema() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	file := s.root.LookupPath(cuelang.ParsePath("#File"))
	expr, err := jsonschema.Generate(file, &jsonschema.GenerateConfig{})
	if err != nil {
		return nil, fmt.Errorf("generate JSON Schema: %w", err)
	}
	raw, err := s.ctx.BuildExpr(expr).MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("generate JSON Schema: %w", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("generate JSON Schema: %w", err)
	}
	defs, _ := doc["$defs"].(map[string]any)
	for _, def := range defs {
		inlineEmbedded(def.(map[string]any), defs)
	}
	var defaults struct {
		Settings map[string]any `json:"settings"`
		Server   map[string]any `json:"server"`
	}
	if err := json.Unmarshal(s.defSettingsJSON(), &defaults); err != nil {
		return nil, fmt.Errorf("generate JSON Schema: defaults: %w", err)
	}
	addDefaults(defs["Settings"], defaults.Settings)
	for _, name := range []string{"Server", "ClaudeServer", "VSCodeServer"} {
		addDefaults(defs[name], defaults.Server)
	}
	doc["$id"] = JSONSchemaID
	doc["title"] = "MCP server configuration (voltmcp, Claude Code / Cursor, VS Code dialects)"
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

func (s *Schema) defSettingsJSON() []byte {
	n := &node{kind: kindObject}
	n.set("settings", s.defSettings)
	n.set("server", s.defServer)
	return n.appendJSON(nil)
}

// inlineEmbedded replaces a "$ref" that sits beside "properties" (CUE's
// rendering of an embedded definition) by the referenced properties.
func inlineEmbedded(def map[string]any, defs map[string]any) {
	ref, ok := def["$ref"].(string)
	props, hasProps := def["properties"].(map[string]any)
	if !ok || !hasProps {
		return
	}
	target, _ := defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any)
	if target == nil {
		return
	}
	inlineEmbedded(target, defs)
	for _, key := range []string{"properties", "patternProperties"} {
		tp, ok := target[key].(map[string]any)
		if !ok {
			continue
		}
		own, _ := def[key].(map[string]any)
		if own == nil {
			own = map[string]any{}
			def[key] = own
		}
		for k, v := range tp {
			if _, have := own[k]; !have {
				own[k] = v
			}
		}
	}
	_ = props
	delete(def, "$ref")
}

func addDefaults(def any, values map[string]any) {
	m, _ := def.(map[string]any)
	props, _ := m["properties"].(map[string]any)
	for k, v := range values {
		if p, ok := props[k].(map[string]any); ok {
			p["default"] = v
		}
	}
}
