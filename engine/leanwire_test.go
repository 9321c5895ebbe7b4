package engine

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/voltmcp/voltmcp/engine/internal/jsonwire"
)

// TestCallAnswerMirrorsCallResult checks that the types the lean path
// writes a call's answer from (jsonwire.CallData, Truncation, CacheRef)
// have the fields of the engine's (CallResult, Truncation, CacheRef), in
// the same order, with the same JSON names and options: a field added
// to one and not the other fails here, before the answers differ.
func TestCallAnswerMirrorsCallResult(t *testing.T) {
	t.Parallel()
	for _, pair := range [][2]reflect.Type{
		{reflect.TypeFor[CallResult](), reflect.TypeFor[jsonwire.CallData]()},
		{reflect.TypeFor[Truncation](), reflect.TypeFor[jsonwire.Truncation]()},
		{reflect.TypeFor[CacheRef](), reflect.TypeFor[jsonwire.CacheRef]()},
		{reflect.TypeFor[MediaItem](), reflect.TypeFor[jsonwire.MediaItem]()},
	} {
		e, w := pair[0], pair[1]
		if e.NumField() != w.NumField() {
			t.Errorf("%v has %d fields, %v %d", e, e.NumField(), w, w.NumField())
			continue
		}
		for i := range e.NumField() {
			ef, wf := e.Field(i), w.Field(i)
			if ef.Name != wf.Name || ef.Tag.Get("json") != wf.Tag.Get("json") {
				t.Errorf("field %d: %v.%s `json:%q`, %v.%s `json:%q`", i, e, ef.Name, ef.Tag.Get("json"), w, wf.Name, wf.Tag.Get("json"))
			}
			ek, wk := ef.Type.Kind(), wf.Type.Kind()
			switch {
			case ef.Name == "Structured":
				// any in the engine, the json.RawMessage callAnswer
				// accepts in jsonwire.
			case ek != wk:
				t.Errorf("%v.%s is a %v, %v.%s a %v", e, ef.Name, ek, w, wf.Name, wk)
			}
		}
	}
}

// TestCallAnswerEncodesAsCallResult checks that callAnswer hands the
// hand writing every call result it can write, and that what it writes
// is encoding/json's encoding of the engine's result.
func TestCallAnswerEncodesAsCallResult(t *testing.T) {
	t.Parallel()
	full := CallResult{Server: "s<", Tool: "t&", Status: "completed", Risk: RiskWrite, Content: "c\u2028",
		Structured: json.RawMessage(`{"a":[1,"\u00e9"]}`), Notes: []string{"n1", "n2"},
		Truncation: &Truncation{Truncated: true, ReturnedBytes: 1, TotalBytes: 2, ReturnedLines: 3, TotalLines: 4},
		Cache:      &CacheRef{ID: "mcpout_x", Read: "read it"}}
	for _, c := range []struct {
		r    GatewayResult
		hand bool
	}{
		{GatewayResult{Text: "all", Data: full, IsError: true}, true},
		{GatewayResult{Text: "bare", Data: CallResult{}}, true},
		{GatewayResult{Text: "spaced", Data: CallResult{Structured: json.RawMessage(`{ "a": 1 }`)}}, true}, // declined by jsonwire
		{GatewayResult{Text: "nil raw", Data: CallResult{Structured: json.RawMessage(nil)}}, false},
		{GatewayResult{Text: "decoded", Data: CallResult{Structured: map[string]any{"a": 1}}}, false},
		{GatewayResult{Text: "not a call", Data: map[string]any{"a": 1}}, false},
		{GatewayResult{Text: "media", Data: CallResult{Media: []MediaItem{{Kind: "image"}}}}, false},
		{GatewayResult{Text: "attached", Data: CallResult{}, Attachments: []Attachment{{Kind: "image", MIMEType: "image/png", Data: []byte{1}}}}, false},
	} {
		for _, complete := range []bool{false, true} {
			if _, ok := callAnswer(c.r, complete); ok != c.hand {
				t.Errorf("%s: callAnswer took it: %v, want %v", c.r.Text, ok, c.hand)
			}
			got, gotErr := encodeLeanResult(c.r, complete)
			want, wantErr := encodeLeanResultJSON(c.r, complete)
			if (gotErr == nil) != (wantErr == nil) || string(got) != string(want) {
				t.Errorf("%s: %s (%v), encoding/json %s (%v)", c.r.Text, got, gotErr, want, wantErr)
			}
		}
	}
}
