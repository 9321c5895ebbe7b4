package policies

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// fillEvery sets every field of the struct v points to, nested structs
// included, to a value of its own that is not the zero value, and
// returns the paths of the fields it set. A field of a kind it does not
// know fails the test: whoever adds one teaches it here.
func fillEvery(t *testing.T, v reflect.Value, path string) []string {
	t.Helper()
	var paths []string
	for i := range v.NumField() {
		f, sf := v.Field(i), v.Type().Field(i)
		p := path + "." + sf.Name
		switch {
		case f.Type() == reflect.TypeFor[json.RawMessage]():
			f.SetBytes([]byte(`{"field":"` + p + `"}`))
		case f.Kind() == reflect.Struct:
			paths = append(paths, fillEvery(t, f, p)...)
			continue
		case f.Kind() == reflect.String:
			f.SetString("value of " + p)
		case f.Kind() == reflect.Bool:
			f.SetBool(true)
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.String:
			f.Set(reflect.ValueOf([]string{"first of " + p, "second of " + p}))
		default:
			t.Fatalf("field %s is a %s: teach fillEvery and ToolInputRecord about it", p, f.Type())
		}
		paths = append(paths, p)
	}
	return paths
}

// viaJSON is what a log gives back of a record's detail: the detail
// encoded as JSON and decoded into plain values.
func viaJSON(t *testing.T, detail map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(detail)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestToolInputRecordKeepsEveryField checks that every field of a
// ToolInput survives its record and a log's JSON: a field added to the
// input and not to toolDetails comes back empty, and fails here. The
// policy's input document is the same before and after.
func TestToolInputRecordKeepsEveryField(t *testing.T) {
	t.Parallel()
	var in ToolInput
	paths := fillEvery(t, reflect.ValueOf(&in).Elem(), "ToolInput")
	rec := in.Record()
	rec.Detail = viaJSON(t, rec.Detail)
	back, err := rec.Input()
	if err != nil {
		t.Fatal(err)
	}
	got, want := reflect.ValueOf(back), reflect.ValueOf(in)
	for _, p := range paths {
		g, w := got, want
		for _, name := range strings.Split(p, ".")[1:] {
			g, w = g.FieldByName(name), w.FieldByName(name)
		}
		if !reflect.DeepEqual(g.Interface(), w.Interface()) {
			t.Errorf("%s: recorded %v, read back %v: give it a line in toolDetails", p, w.Interface(), g.Interface())
		}
	}
	if !reflect.DeepEqual(back, in) {
		t.Errorf("read back\n %+v\nwant\n %+v", back, in)
	}
	b1, _ := json.Marshal(in)
	b2, _ := json.Marshal(back)
	if string(b1) != string(b2) {
		t.Errorf("the policy's input document changed:\n%s\n%s", b1, b2)
	}

	// Each detail has one name and reads one kind of field.
	seen := map[string]bool{}
	for _, d := range toolDetails {
		n := 0
		for _, set := range []bool{d.str != nil, d.strs != nil, d.flag != nil, d.raw != nil} {
			if set {
				n++
			}
		}
		if n != 1 || seen[d.name] {
			t.Errorf("detail %q: %d accessors, or named twice", d.name, n)
		}
		seen[d.name] = true
	}
}

// TestToolInputRecordEmptyAndZero checks what a record holds of an input
// with nothing set: every detail but title and annotations, so that the
// lines the log writes for tools without either stay as they were, and
// that it reads back as the input it came from.
func TestToolInputRecordEmptyAndZero(t *testing.T) {
	t.Parallel()
	in := githubTool()
	in.Tool.Title, in.Tool.Annotations, in.IncludeTools, in.ExcludeTools = "", nil, nil, nil
	rec := in.Record()
	var names []string
	for name := range rec.Detail {
		names = append(names, name)
	}
	for _, name := range []string{"title", "annotations"} {
		if _, ok := rec.Detail[name]; ok {
			t.Errorf("an empty %s is recorded", name)
		}
	}
	if len(rec.Detail) != len(toolDetails)-2 {
		t.Errorf("details %v", names)
	}
	rec.Detail = viaJSON(t, rec.Detail)
	if back, err := rec.Input(); err != nil || !reflect.DeepEqual(back, in) {
		t.Errorf("read back %+v, %v; want %+v", back, err, in)
	}
}

// TestToolInputRecordRedactsArgs checks that a record's arguments encode
// without their literal credentials, and the rest as given.
func TestToolInputRecordRedactsArgs(t *testing.T) {
	t.Parallel()
	in := githubTool()
	in.Server.Args = []string{"-y", "@acme/mcp@1.0.0", "--token", "tok-0123456789abcdef"}
	b, err := json.Marshal(in.Record().Detail)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "tok-0123456789abcdef") || !strings.Contains(string(b), `"--token"`) ||
		!strings.Contains(string(b), `"@acme/mcp@1.0.0"`) {
		t.Errorf("recorded %s", b)
	}
	if in.Server.Args[3] != "tok-0123456789abcdef" {
		t.Error("recording changed the input's arguments")
	}
}

// TestToolInputRecordWrongType checks that a detail of the wrong type is
// an error naming it, and that details Input does not know are ignored.
func TestToolInputRecordWrongType(t *testing.T) {
	t.Parallel()
	for name, v := range map[string]any{
		"args": "npx", "include_tools": []any{"a", 1}, "pin_state": 3.0, "quarantined": "true",
		"title": false, "annotations": func() {},
	} {
		rec := ToolInputRecord{Server: "s", Tool: "t", Detail: map[string]any{name: v, "tool_hash": "ab"}}
		if _, err := rec.Input(); err == nil || !strings.Contains(err.Error(), `"`+name+`"`) {
			t.Errorf("detail %s = %v: %v, want an error naming it", name, v, err)
		}
	}
	in, err := ToolInputRecord{Server: "s", Tool: "t", Risk: "read", Surface: "serve", Detail: map[string]any{"tool_hash": "ab"}}.Input()
	if err != nil || !reflect.DeepEqual(in, ToolInput{Server: Server{ID: "s"}, Tool: Tool{Name: "t"}, Risk: "read", Surface: "serve"}) {
		t.Errorf("read %+v, %v", in, err)
	}
}
