package transport

import (
	"slices"
	"testing"
)

// TestChildEnv: only the baseline and the allowlisted host variables
// reach a server, under the explicit ones, sorted.
func TestChildEnv(t *testing.T) {
	host := map[string]string{"PATH": "/usr/bin", "HOME": "/home/u", "AWS_SECRET": "host-secret", "SHARED": "host", "OTHER": "not passed"}
	lookup := func(k string) (string, bool) { v, ok := host[k]; return v, ok }
	env := ChildEnv([]string{"AWS_SECRET", "MISSING", "SHARED"},
		[]Var{{Name: "SHARED", Value: "explicit"}, {Name: "TOKEN", Value: "tok-value"}}, lookup)
	want := []string{"AWS_SECRET=host-secret", "HOME=/home/u", "PATH=/usr/bin", "SHARED=explicit", "TOKEN=tok-value"}
	if !slices.Equal(env, want) {
		t.Errorf("env %q, want %q", env, want)
	}
}
