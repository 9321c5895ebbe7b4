package cue

import "testing"

// TestArgSecretRef: a secret passed by reference in args is found (it
// lands in argv, world-readable); a harmless reference is not.
func TestArgSecretRef(t *testing.T) {
	for _, c := range []struct {
		args []string
		i    int
		want bool
	}{
		{[]string{"--token", "${env:X}"}, 1, true},
		{[]string{"--api-key=${env:X}"}, 0, true},
		{[]string{"serve", "${env:GITHUB_TOKEN}"}, 1, true},
		{[]string{"-H", "Authorization: Bearer ${env:X}"}, 1, true},
		{[]string{"--root", "${env:HOME}/src"}, 1, false},
		{[]string{"--token", "literal"}, 1, false},
		{[]string{"${env:PORT}"}, 0, false},
	} {
		if _, got := argSecretRef(c.args, c.i); got != c.want {
			t.Errorf("argSecretRef(%q, %d) = %v, want %v", c.args, c.i, got, c.want)
		}
	}
}
