package transport

import (
	"slices"
	"testing"
)

// TestChildEnv: only the baseline and the allowlisted host variables
// reach a server, under the explicit ones, sorted; the allowlisted
// values and the explicit secrets are returned to scrub.
func TestChildEnv(t *testing.T) {
	host := map[string]string{"PATH": "/usr/bin", "HOME": "/home/u", "AWS_SECRET": "host-secret", "SHARED": "host", "OTHER": "not passed"}
	lookup := func(k string) (string, bool) { v, ok := host[k]; return v, ok }
	env, secrets := ChildEnv([]string{"AWS_SECRET", "MISSING", "SHARED"},
		[]Var{{Name: "SHARED", Value: "explicit"}, {Name: "TOKEN", Value: "tok-value", Secret: true}}, lookup)
	want := []string{"AWS_SECRET=host-secret", "HOME=/home/u", "PATH=/usr/bin", "SHARED=explicit", "TOKEN=tok-value"}
	if !slices.Equal(env, want) {
		t.Errorf("env %q, want %q", env, want)
	}
	if want := []string{"host-secret", "host", "tok-value"}; !slices.Equal(secrets, want) {
		t.Errorf("secrets %q, want %q", secrets, want)
	}
}
