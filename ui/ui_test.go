package ui

import (
	"encoding/json"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// TestTypesAreTheWireTypes checks each of the UI's types against its wire
// type in docs/rpc.schema.json: every field the UI decodes is a property
// of the schema, of the same JSON type, so the UI's types cannot drift
// from what the RPC sends.
func TestTypesAreTheWireTypes(t *testing.T) {
	raw, err := os.ReadFile("../docs/rpc.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Defs map[string]struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		def string
		v   any
	}{
		{"McpServerSummary", ServerSummary{}}, {"McpToolCounts", ToolCounts{}}, {"McpCapabilities", ServerCapabilities{}},
		{"McpRecentCallSummary", RecentCall{}}, {"McpTool", Tool{}}, {"McpToolDetail", ToolDetail{}}, {"McpEvent", Event{}},
		{"McpServerLog", serverLog{}}, {"McpLogRecord", LogRecord{}},
	} {
		def, ok := schema.Defs[tc.def]
		if !ok {
			t.Errorf("docs/rpc.schema.json has no %s", tc.def)
			continue
		}
		typ := reflect.TypeOf(tc.v)
		for i := range typ.NumField() {
			f := typ.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			prop, ok := def.Properties[name]
			if !ok {
				t.Errorf("%s.%s (json %q) is not a property of %s", typ.Name(), f.Name, name, tc.def)
				continue
			}
			var p struct {
				Type any    `json:"type"`
				Ref  string `json:"$ref"`
			}
			json.Unmarshal(prop, &p)
			want := map[reflect.Kind]string{reflect.String: "string", reflect.Bool: "boolean", reflect.Int: "integer", reflect.Int64: "integer",
				reflect.Uint64: "integer", reflect.Slice: "array", reflect.Struct: "object"}
			k := f.Type.Kind()
			if k == reflect.Pointer {
				k = f.Type.Elem().Kind()
			}
			if f.Type == reflect.TypeOf(json.RawMessage{}) || p.Ref != "" {
				continue
			}
			if w, ok := want[k]; ok && !strings.Contains(string(mustJSON(p.Type)), `"`+w+`"`) {
				t.Errorf("%s.%s is a %s, but %s.%s is %s", typ.Name(), f.Name, k, tc.def, name, mustJSON(p.Type))
			}
		}
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// TestStatusLineCounts checks the line's counts over several shapes of
// server lists.
func TestStatusLineCounts(t *testing.T) {
	live := 3
	for _, tc := range []struct {
		name    string
		servers []ServerSummary
		want    string
	}{
		{"none", nil, "MCP 0 configured / 0 connected / 0 auth"},
		{"the spec's", []ServerSummary{
			{ID: "a", Status: "ready", AuthState: "none", ToolCounts: ToolCounts{Live: &live}},
			{ID: "b", Status: "needs_auth", AuthState: "required"},
			{ID: "c", Status: "disabled", AuthState: "none"},
			{ID: "d", Status: "cold", AuthState: "authenticated"},
		}, "MCP 4 configured / 1 connected / 1 auth"},
		{"untrusted and failing", []ServerSummary{
			{ID: "a", Status: "untrusted"}, {ID: "b", Status: "error", AuthState: "failed"},
			{ID: "c", Status: "connected", AuthState: "pending"}, {ID: "d", Status: "connecting"},
		}, "MCP 4 configured / 1 connected / 2 auth"},
	} {
		if got := StatusLine(tc.servers); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestCellsAreClean checks that a server's string of each hostile shape
// comes out of the cell helpers without anything a terminal would act on
// or hide, and within its width.
func TestCellsAreClean(t *testing.T) {
	for _, in := range []string{
		"\x1b[31mred\x1b[0m",
		"\x1b]52;c;SGVsbG8=\x07clipboard",
		"\x1b]0;title\x1b\\x",
		"\u009b2Jc1",
		"bidi \u202eevil\u202c \u2066iso\u2069",
		"zero\u200bwidth\ufeff",
		"tab\tand\nnewline\r",
		"\xff\xfe invalid",
		"wide 日本語テキストの長い名前",
	} {
		for _, w := range []int{1, 8, 20} {
			for _, out := range []string{fit(clean(in), w), cut(clean(in), w)} {
				if strings.ContainsAny(out, "\x1b\x07\u009b\u202e\u202c\u2066\u2069\u200b\ufeff\t\n\r") {
					t.Errorf("fit(clean(%q), %d) = %q: it holds what a terminal acts on or hides", in, w, out)
				}
				if n := len([]rune(out)); n == 0 && w > 0 {
					t.Errorf("fit(clean(%q), %d) is empty", in, w)
				}
			}
		}
		for _, line := range wrap(clean(in), 6, 3) {
			if strings.ContainsAny(line, "\x1b\x07\u202e") {
				t.Errorf("wrap(clean(%q)) = %q", in, line)
			}
		}
	}
	if got := cleanBlock("{\n  \"a\": \"\x1b]52;c;eA==\x07x\u202e\"\n}"); strings.ContainsAny(got, "\x1b\x07\u202e") || !strings.Contains(got, "\n") {
		t.Errorf("cleanBlock = %q", got)
	}
}

// TestEventsNeverBlockTheReader checks the inbox: an mcp_event is queued,
// another method ignored, one that does not decode or does not fit asks
// for a resync, and Notify returns at once however far the UI is behind.
func TestEventsNeverBlockTheReader(t *testing.T) {
	e := NewEvents()
	e.Notify("other", json.RawMessage(`{"type":"x"}`))
	e.Notify("mcp_event", json.RawMessage(`{"schema":"mcp_events.v1","seq":1,"type":"mcp_server_status_changed","server":"a"}`))
	if got := <-e.ch; got.Seq != 1 || got.Server != "a" || got.Type != "mcp_server_status_changed" {
		t.Errorf("queued %+v", got)
	}
	if len(e.ch) != 0 || len(e.resync) != 0 {
		t.Fatalf("a notification of another method was queued")
	}
	e.Notify("mcp_event", json.RawMessage(`{"seq":"not a number"}`))
	if len(e.resync) != 1 {
		t.Errorf("an event that does not decode asked for no resync")
	}
	<-e.resync
	for i := range eventQueue + 10 {
		e.Notify("mcp_event", json.RawMessage(`{"seq":`+strconv.Itoa(i+2)+`,"type":"mcp_call_end","server":"a"}`))
	}
	if len(e.ch) != eventQueue || len(e.resync) != 1 {
		t.Errorf("after %d events: %d queued, %d resyncs; want %d and 1", eventQueue+10, len(e.ch), len(e.resync), eventQueue)
	}
}
