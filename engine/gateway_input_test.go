package engine

import (
	"bytes"
	"encoding/json"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/voltmcp/voltmcp/internal/testwait"
)

// wireGatewaySchema is the mcp tool's input schema as agents have been
// sent it: gatewayInputSchema must keep it byte for byte (compact), so
// that an agent's prompt cache and its idea of the tool stay valid. A
// change to it is a change of the wire, to make on purpose.
const wireGatewaySchema = `{
  "type": "object",
  "properties": {
    "action": {"type": "string", "enum": ["status", "list_servers", "search", "describe", "call", "connect", "disconnect", "list_resources", "read_resource", "list_prompts", "get_prompt", "read_cache"]},
    "server": {"type": "string"},
    "query": {"type": "string"},
    "tool": {"type": "string"},
    "arguments": {"type": "object"},
    "argumentsJson": {"type": "string", "description": "arguments as a JSON string, if passing an object is hard"},
    "resourceUri": {"type": "string"},
    "prompt": {"type": "string"},
    "cacheId": {"type": "string"},
    "limit": {"type": "integer", "minimum": 1, "maximum": 20},
    "offset": {"type": "integer", "minimum": 0},
    "startLine": {"type": "integer", "minimum": 1},
    "endLine": {"type": "integer", "minimum": 1},
    "pattern": {"type": "string", "description": "read_cache: only lines matching this regexp"},
    "cursor": {"type": "string"}
  },
  "required": ["action"]
}`

// TestGatewayInputSchemaIsTheWireSchema checks the schema derived from
// the tables against the one agents know, and what the SDK sends of it.
func TestGatewayInputSchemaIsTheWireSchema(t *testing.T) {
	t.Parallel()
	var want bytes.Buffer
	if err := json.Compact(&want, []byte(wireGatewaySchema)); err != nil {
		t.Fatal(err)
	}
	if got := gatewayInputSchema(); string(got) != want.String() {
		t.Errorf("the mcp tool's input schema changed:\n got  %s\n want %s", got, want.String())
	}
	b, err := json.Marshal(gatewayTool())
	if err != nil || !bytes.Contains(b, []byte(`"inputSchema":`+want.String())) {
		t.Errorf("the tool definition does not carry the schema as it is: %s, %v", b, err)
	}
}

// gatewayFieldNamed returns the field of gatewayFields named name, or
// nil.
func gatewayFieldNamed(name string) *gatewayField {
	for i := range gatewayFields {
		if gatewayFields[i].name == name {
			return &gatewayFields[i]
		}
	}
	return nil
}

// TestGatewayTablesMatchInputAndDescription checks what is not derived
// from gatewayActionTable and gatewayFields against them: GatewayInput's
// fields (names, order, kinds) and the actions and fields the tool's
// description names.
func TestGatewayTablesMatchInputAndDescription(t *testing.T) {
	t.Parallel()
	typ := reflect.TypeFor[GatewayInput]()
	var names []string
	for i := range typ.NumField() {
		sf := typ.Field(i)
		if !sf.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		names = append(names, name)
		f := gatewayFieldNamed(name)
		if f == nil {
			t.Errorf("GatewayInput.%s (%q) is not in gatewayFields", sf.Name, name)
			continue
		}
		var kind gatewayFieldKind
		switch sf.Type.Kind() {
		case reflect.String:
			kind = gwString
		case reflect.Int, reflect.Int64:
			kind = gwInteger
		case reflect.Map:
			kind = gwObject
		default:
			t.Errorf("GatewayInput.%s is a %s: teach gatewayFieldKind about it", sf.Name, sf.Type)
			continue
		}
		if f.kind != kind {
			t.Errorf("field %s: kind %s in gatewayFields, %s in GatewayInput", name, f.kind.schemaType(), kind.schemaType())
		}
	}
	if !slices.Equal(names, gatewayFieldNames()) {
		t.Errorf("GatewayInput's fields %v, gatewayFields %v: same names, same order", names, gatewayFieldNames())
	}
	if f := gatewayFieldNamed(actionField); f == nil || !f.required {
		t.Error("the action field is missing or not required")
	}
	actions := gatewayActions()
	for i, a := range gatewayActionTable {
		if a.run == nil || slices.Index(actions, a.name) != i {
			t.Errorf("action %q: no run, or named twice", a.name)
		}
	}

	// The description's Actions line: "name[/name] {field, field? | field?}; ...".
	line := ""
	for l := range strings.SplitSeq(gatewayDescription, "\n") {
		if rest, ok := strings.CutPrefix(l, "Actions: "); ok {
			line = strings.TrimSuffix(rest, ".")
		}
	}
	if line == "" {
		t.Fatal("the description has no Actions line")
	}
	item := regexp.MustCompile(`^([a-z_/]+)(?: \{([^}]*)\})?$`)
	var described []string
	mentioned := map[string]bool{}
	for it := range strings.SplitSeq(line, "; ") {
		m := item.FindStringSubmatch(it)
		if m == nil {
			t.Errorf("the description's action %q is not name {fields}", it)
			continue
		}
		described = append(described, strings.Split(m[1], "/")...)
		for f := range strings.FieldsFuncSeq(m[2], func(r rune) bool { return r == ',' || r == '|' || r == ' ' }) {
			f = strings.TrimSuffix(f, "?")
			mentioned[f] = true
			if gatewayFieldNamed(f) == nil {
				t.Errorf("the description names a field %q that is not in gatewayFields", f)
			}
		}
	}
	if !slices.Equal(described, actions) {
		t.Errorf("the description names the actions %v, gatewayActionTable %v", described, actions)
	}
	for _, f := range gatewayFields {
		if f.name != actionField && !mentioned[f.name] && !strings.Contains(f.schema, `"description"`) {
			t.Errorf("field %s is neither in the description nor described in the schema", f.name)
		}
	}
}

// TestGatewayDecodersFollowTheFields decodes an input with each field of
// gatewayFields both ways: the fast decoder reads every string and
// object field as encoding/json does (into the same field: each field
// gets a value of its own), and declines the integers, which
// encoding/json then reads.
func TestGatewayDecodersFollowTheFields(t *testing.T) {
	t.Parallel()
	for _, f := range gatewayFields {
		value := map[gatewayFieldKind]string{gwString: `"v"`, gwInteger: `3`, gwObject: `{"a":[1]}`}[f.kind]
		raw := []byte(`{"action":"status","` + f.name + `":` + value + `}`)
		if f.name == actionField {
			raw = []byte(`{"action":"v"}`)
		}
		var slow GatewayInput
		if err := decodeGatewayInputJSON(raw, &slow); err != nil {
			t.Errorf("%s: encoding/json: %v", raw, err)
			continue
		}
		var fast GatewayInput
		ok := fast.fastDecode(raw)
		if ok != (f.kind != gwInteger) {
			t.Errorf("%s: the fast decoder read it: %v", raw, ok)
			continue
		}
		if ok && !reflect.DeepEqual(fast, slow) {
			t.Errorf("%s: fast %+v, encoding/json %+v", raw, fast, slow)
		}
		var in GatewayInput
		if err := decodeGatewayInput(raw, &in); err != nil || !reflect.DeepEqual(in, slow) {
			t.Errorf("%s: decoded %+v, %v; want %+v", raw, in, err, slow)
		}
	}
	// An unknown field gets the closest known one.
	var in GatewayInput
	if err := decodeGatewayInput([]byte(`{"action":"read_cache","cachId":"x"}`), &in); err == nil || !strings.Contains(err.Error(), `did you mean "cacheId"`) {
		t.Errorf("unknown field: %v", err)
	}
}

// TestGatewayDispatchesEveryAction runs each action of the table through
// Gateway and the serving path: none is unknown to the dispatcher.
func TestGatewayDispatchesEveryAction(t *testing.T) {
	t.Parallel()
	e := start(t, workspace(t, map[string]server{}, nil))
	ctx := testwait.Context(t)
	for _, name := range gatewayActions() {
		r := e.Gateway(ctx, GatewayInput{Action: " " + name + " "})
		if strings.Contains(r.Text, "unknown action") || strings.Contains(r.Text, "missing action") {
			t.Errorf("Gateway: action %s: %s", name, r.Text)
		}
		raw, _ := json.Marshal(map[string]string{"action": name})
		if r := e.gatewayRun(ctx, raw); strings.Contains(r.Text, "unknown action") || strings.Contains(r.Text, "missing action") {
			t.Errorf("gatewayRun: action %s: %s", name, r.Text)
		}
	}
	if r := e.Gateway(ctx, GatewayInput{Action: "lst_servers"}); !r.IsError || !strings.Contains(r.Text, `did you mean "list_servers"`) ||
		!strings.Contains(r.Text, strings.Join(gatewayActions(), ", ")) {
		t.Errorf("unknown action: %s", r.Text)
	}
}
