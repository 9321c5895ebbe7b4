package cue

import (
	"reflect"
	"strings"
	"testing"
)

// TestEnvRefUsesCoversEveryStringField puts a reference in every string
// a Server can hold, found by reflection, and checks that EnvRefUses
// lists each: a field added to Server later is covered, or this fails.
func TestEnvRefUsesCoversEveryStringField(t *testing.T) {
	var s Server
	want := map[string]bool{}
	n := 0
	var fill func(v reflect.Value)
	fill = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.String:
			n++
			name := "V" + strings.Repeat("X", n)
			v.SetString("${env:" + name + "}")
			want[name] = true
		case reflect.Pointer:
			v.Set(reflect.New(v.Type().Elem()))
			fill(v.Elem())
		case reflect.Struct:
			for i := range v.NumField() {
				if v.Type().Field(i).IsExported() {
					fill(v.Field(i))
				}
			}
		case reflect.Slice:
			if v.Type().Elem().Kind() == reflect.String {
				v.Set(reflect.MakeSlice(v.Type(), 1, 1))
				fill(v.Index(0))
			}
		case reflect.Map:
			if v.Type().Elem().Kind() == reflect.String {
				v.Set(reflect.MakeMap(v.Type()))
				n++
				name := "V" + strings.Repeat("X", n)
				v.SetMapIndex(reflect.ValueOf("K"), reflect.ValueOf("${env:"+name+"}"))
				want[name] = true
			}
		}
	}
	fill(reflect.ValueOf(&s).Elem())
	if n < 20 {
		t.Fatalf("only %d string fields filled", n)
	}
	for _, u := range s.EnvRefUses() {
		if u.Field == "" {
			t.Errorf("%s has no field path", u.Name)
		}
		delete(want, u.Name)
	}
	for name := range want {
		t.Errorf("reference %s not listed", name)
	}
	for _, u := range s.EnvRefUses() {
		if u.Name == "VX" && u.Field != "id" {
			t.Errorf("first field is %q", u.Field)
		}
	}
}
