package search

import "github.com/voltmcp/voltmcp/engine/internal/jsonwire"

// walkLimited walks the first maxSchemaBytes of data with w, or with a
// new Walker when w is nil, stopping at maxSchemaDepth levels of nesting.
func walkLimited(w *jsonwire.Walker, data []byte, fn func(path []jsonwire.Step, key, str []byte) bool) {
	if w == nil {
		w = new(jsonwire.Walker)
	}
	w.MaxDepth = maxSchemaDepth
	w.Walk(data[:min(len(data), maxSchemaBytes)], fn)
}

// schemaParams calls fn with each property name of a JSON Schema, raw as
// between its quotes: the keys of its "properties", and those of each
// property's own "properties" or "items"."properties", one level down;
// at most maxParams of them.
func schemaParams(w *jsonwire.Walker, schema []byte, fn func(name []byte)) {
	count := 0
	walkLimited(w, schema, func(path []jsonwire.Step, key []byte, _ []byte) bool {
		if isParams(path) {
			if count++; count > maxParams {
				return false
			}
			fn(key)
		}
		return true
	})
}

// isParams reports whether path leads to an object whose keys are
// property names: properties, properties.X.properties or
// properties.X.items.properties.
func isParams(path []jsonwire.Step) bool {
	is := func(s jsonwire.Step, name string) bool { return !s.Elem && string(s.Key) == name }
	switch len(path) {
	case 1:
		return is(path[0], "properties")
	case 3:
		return is(path[0], "properties") && !path[1].Elem && is(path[2], "properties")
	case 4:
		return is(path[0], "properties") && !path[1].Elem && is(path[2], "items") && is(path[3], "properties")
	}
	return false
}

// annotationsTitle appends the "title" string of a tool's annotations.
func annotationsTitle(w *jsonwire.Walker, ann []byte, dst []byte) []byte {
	walkLimited(w, ann, func(path []jsonwire.Step, key, str []byte) bool {
		if len(path) == 0 && str != nil && string(key) == "title" {
			dst = jsonwire.AppendUnescaped(dst, str)
			return false
		}
		return true
	})
	return dst
}
