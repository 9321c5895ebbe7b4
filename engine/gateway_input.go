package engine

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
)

// The mcp tool's actions and input fields are defined here, once: the
// input schema the agent sees (gatewayInputSchema), the dispatcher
// (Engine.Gateway, gatewayRunThen) and the names in errors and
// suggestions are derived from gatewayActionTable and gatewayFields.
// What is not derived is checked against them by tests: the fields of
// GatewayInput and the tool's description
// (TestGatewayTablesMatchInputAndDescription), and the fast decoder
// (TestGatewayDecodersFollowTheFields), whose switch keeps the input it
// decodes on the stack where a lookup in the table would not.

// gatewayAction is one action of the mcp tool.
type gatewayAction struct {
	name string
	// run answers the action.
	run func(e *Engine, ctx context.Context, in GatewayInput) GatewayResult
	// then, when set, is run for a call that may answer on the server's
	// connection's reader (the lean path): it hands its result to then,
	// once. gatewayRunThen takes it; Gateway takes run.
	then func(e *Engine, ctx context.Context, in GatewayInput, then func(yield func(), r GatewayResult))
}

// gatewayActionTable lists the actions of the mcp tool, in the order
// the schema's enum and the errors name them.
var gatewayActionTable = [...]gatewayAction{
	{name: "status", run: func(e *Engine, ctx context.Context, in GatewayInput) GatewayResult { return e.gwStatus(ctx, in) }},
	{name: "list_servers", run: func(e *Engine, _ context.Context, _ GatewayInput) GatewayResult { return e.gwListServers() }},
	{name: "search", run: (*Engine).gwSearch},
	{name: "describe", run: (*Engine).gwDescribe},
	{name: "call", run: (*Engine).gwCall, then: (*Engine).gwCallThen},
	{name: "connect", run: func(e *Engine, ctx context.Context, in GatewayInput) GatewayResult { return e.gwConnect(ctx, in, true) }},
	{name: "disconnect", run: func(e *Engine, ctx context.Context, in GatewayInput) GatewayResult {
		return e.gwConnect(ctx, in, false)
	}},
	{name: "list_resources", run: (*Engine).gwListResources},
	{name: "read_resource", run: (*Engine).gwReadResource},
	{name: "list_prompts", run: (*Engine).gwListPrompts},
	{name: "get_prompt", run: (*Engine).gwGetPrompt},
	{name: "read_cache", run: func(e *Engine, _ context.Context, in GatewayInput) GatewayResult { return e.gwReadCache(in) }},
}

// gatewayActionNamed returns the action named name, or nil.
func gatewayActionNamed(name string) *gatewayAction {
	for i := range gatewayActionTable {
		if gatewayActionTable[i].name == name {
			return &gatewayActionTable[i]
		}
	}
	return nil
}

// gatewayActions lists the names of the actions, for errors and
// suggestions.
func gatewayActions() []string {
	names := make([]string, len(gatewayActionTable))
	for i, a := range gatewayActionTable {
		names[i] = a.name
	}
	return names
}

// gatewayFieldKind is the JSON type of an input field of the mcp tool.
type gatewayFieldKind uint8

const (
	gwString  gatewayFieldKind = iota // a string
	gwInteger                         // an integer
	gwObject                          // an object, kept as the JSON it came as
)

// schemaType is the kind's name in JSON Schema.
func (k gatewayFieldKind) schemaType() string {
	switch k {
	case gwInteger:
		return "integer"
	case gwObject:
		return "object"
	}
	return "string"
}

// gatewayField is one input field of the mcp tool.
type gatewayField struct {
	// name is the field's JSON name, the json tag of its GatewayInput
	// field.
	name string
	kind gatewayFieldKind
	// required marks a field every input must have.
	required bool
	// schema is what the field's JSON Schema says besides its type (and,
	// for the action, the enum of the actions): JSON object members.
	schema string
}

// actionField is the name of the field that selects the action.
const actionField = "action"

// gatewayFields lists the input fields of the mcp tool, in the order of
// GatewayInput's fields and of the schema's properties. The fast decoder
// reads the strings and the object (the arguments, kept as JSON), and
// leaves the integers to encoding/json.
var gatewayFields = [...]gatewayField{
	{name: actionField, kind: gwString, required: true},
	{name: "server", kind: gwString},
	{name: "query", kind: gwString},
	{name: "tool", kind: gwString},
	{name: "arguments", kind: gwObject},
	{name: "argumentsJson", kind: gwString, schema: `"description":"arguments as a JSON string, if passing an object is hard"`},
	{name: "resourceUri", kind: gwString},
	{name: "prompt", kind: gwString},
	{name: "cacheId", kind: gwString},
	{name: "limit", kind: gwInteger, schema: `"minimum":1,"maximum":` + strconv.Itoa(maxMatches)},
	{name: "offset", kind: gwInteger, schema: `"minimum":0`},
	{name: "startLine", kind: gwInteger, schema: `"minimum":1`},
	{name: "endLine", kind: gwInteger, schema: `"minimum":1`},
	{name: "pattern", kind: gwString, schema: `"description":"read_cache: only lines matching this regexp"`},
	{name: "cursor", kind: gwString},
}

// gatewayFieldNames lists the names of the input fields, for the
// suggestion an unknown field gets.
func gatewayFieldNames() []string {
	names := make([]string, len(gatewayFields))
	for i, f := range gatewayFields {
		names[i] = f.name
	}
	return names
}

// gatewayInputSchema is the mcp tool's input schema, compact JSON: an
// object of the fields, the action's values the actions, and the
// required fields required. It is constant, like the tool's
// description: nothing of the servers or their state is in it.
func gatewayInputSchema() json.RawMessage {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	var required []string
	for i, f := range gatewayFields {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Quote(f.name) + `:{"type":"` + f.kind.schemaType() + `"`)
		if f.name == actionField {
			b.WriteString(`,"enum":[`)
			for j, a := range gatewayActionTable {
				if j > 0 {
					b.WriteByte(',')
				}
				b.WriteString(strconv.Quote(a.name))
			}
			b.WriteByte(']')
		}
		if f.schema != "" {
			b.WriteString("," + f.schema)
		}
		b.WriteByte('}')
		if f.required {
			required = append(required, strconv.Quote(f.name))
		}
	}
	b.WriteString(`},"required":[` + strings.Join(required, ",") + `]}`)
	return json.RawMessage(b.String())
}
