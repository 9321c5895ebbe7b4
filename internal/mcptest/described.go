package mcptest

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ModeDescribed (raw) lists what describe and the paged answers of a
// gateway are tested with: [ToolReport], with an output schema, task
// support [ReportTaskSupport] and a read-only hint; [ToolWide], whose
// input schema is about [WideSchemaBytes]; [DescribedLookups] tools
// lookup_0000 … whose descriptions all say "lookup"; [DescribedResources]
// resources, [DescribedTemplates] resource templates and
// [DescribedPrompts] prompts, each on one page. Every call answers "ok".
const ModeDescribed = "described"

// The tools and items of mode described.
const (
	ToolReport        = "report"
	ToolWide          = "wide"
	ReportTaskSupport = "optional"
	// WideSchemaBytes is about the size of ToolWide's input schema, in
	// bytes of compact JSON: over 16 KiB, under the 64 KiB a schema may
	// have.
	WideSchemaBytes    = 32 << 10
	DescribedLookups   = 30
	DescribedResources = 130
	DescribedTemplates = 5
	DescribedPrompts   = 70
)

// ReportOutputSchema is the output schema of ToolReport, compact.
const ReportOutputSchema = `{"type":"object","properties":{"temperature":{"type":"number","description":"degrees Celsius"}},"required":["temperature"]}`

// wideSchema is ToolWide's input schema: 40 object properties, each with
// a long description below it, about WideSchemaBytes in all.
func wideSchema() map[string]any {
	props := map[string]any{}
	for i := range 40 {
		props[fmt.Sprintf("field%02d", i)] = map[string]any{
			"type": "object", "description": fmt.Sprintf("field %d", i),
			"properties": map[string]any{"inner": map[string]any{"type": "string", "description": strings.Repeat("long text ", 76)}},
		}
	}
	return map[string]any{"type": "object", "properties": props, "required": []string{"field00"}}
}

// describedTools lists the tools of mode described.
func describedTools() []any {
	report := rawTool(ToolReport, "Reports the weather of a city.", map[string]any{
		"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"},
	})
	report["outputSchema"] = json.RawMessage(ReportOutputSchema)
	report["annotations"] = map[string]any{"readOnlyHint": true}
	report["execution"] = map[string]any{"taskSupport": ReportTaskSupport}
	tools := []any{report, rawTool(ToolWide, "Takes a wide input.", wideSchema())}
	for i := range DescribedLookups {
		tools = append(tools, rawTool(fmt.Sprintf("lookup_%04d", i), fmt.Sprintf("Lookup number %d.", i), objectSchema()))
	}
	return tools
}

// describedList answers the resources/list, resources/templates/list
// and prompts/list of mode described, or reports false for another
// method.
func describedList(method string) (map[string]any, bool) {
	var items []any
	switch method {
	case "resources/list":
		for i := range DescribedResources {
			items = append(items, map[string]any{"uri": fmt.Sprintf("mcptest://r/%04d", i), "name": fmt.Sprintf("r%04d", i),
				"description": fmt.Sprintf("Resource %d.", i)})
		}
		return map[string]any{"resources": items}, true
	case "resources/templates/list":
		for i := range DescribedTemplates {
			items = append(items, map[string]any{"uriTemplate": fmt.Sprintf("mcptest://t%d/{id}", i), "name": fmt.Sprintf("t%d", i)})
		}
		return map[string]any{"resourceTemplates": items}, true
	case "prompts/list":
		for i := range DescribedPrompts {
			items = append(items, map[string]any{"name": fmt.Sprintf("p%04d", i), "description": fmt.Sprintf("Prompt %d.", i)})
		}
		return map[string]any{"prompts": items}, true
	}
	return nil, false
}
