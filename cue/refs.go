package cue

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// EnvRefUse is one ${env:NAME} reference in a server definition: the
// variable and the field that holds it.
type EnvRefUse struct {
	// Name is the variable's name.
	Name string `json:"name"`
	// Field is the path of the field in the definition, in its JSON
	// spelling: "url", "args[2]", "headers.Authorization", "auth.token".
	Field string `json:"field"`
}

// EnvRefUses returns every ${env:NAME} reference in the server's
// definition, sorted by field, then name. It walks every string the
// definition holds (fields, list items, map values and keys, nested
// objects), so a field added to [Server] is covered without a change
// here: what a project would read from the host is listed in full.
func (s Server) EnvRefUses() []EnvRefUse {
	var out []EnvRefUse
	walkStrings(reflect.ValueOf(s), "", func(field, v string) {
		for _, name := range EnvRefs(v) {
			out = append(out, EnvRefUse{Name: name, Field: field})
		}
	})
	slices.SortFunc(out, func(a, b EnvRefUse) int {
		if c := strings.Compare(a.Field, b.Field); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return slices.Compact(out)
}

// walkStrings calls fn with the path and value of every string in v.
func walkStrings(v reflect.Value, path string, fn func(field, v string)) {
	switch v.Kind() {
	case reflect.String:
		fn(path, v.String())
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walkStrings(v.Elem(), path, fn)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name := f.Name
			if tag, _, _ := strings.Cut(f.Tag.Get("json"), ","); tag != "" && tag != "-" {
				name = tag
			}
			p := name
			if path != "" {
				p = path + "." + name
			}
			walkStrings(v.Field(i), p, fn)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			walkStrings(v.Index(i), path+"["+strconv.Itoa(i)+"]", fn)
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			k := iter.Key()
			p := path + "[" + strconv.Quote(k.String()) + "]"
			if k.Kind() == reflect.String {
				p = path + "." + k.String()
				fn(p, k.String())
			}
			walkStrings(iter.Value(), p, fn)
		}
	}
}
