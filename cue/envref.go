package cue

import (
	"fmt"
	"regexp"
)

var envRefAnyRE = regexp.MustCompile(`\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}`)

// EnvRefs returns the variable names referenced as ${env:NAME} in s, in
// order of appearance.
func EnvRefs(s string) []string {
	var names []string
	for _, m := range envRefAnyRE.FindAllStringSubmatch(s, -1) {
		names = append(names, m[1])
	}
	return names
}

// HasEnvRef reports whether s holds an ${env:NAME} reference.
func HasEnvRef(s string) bool { return envRefAnyRE.MatchString(s) }

// MissingEnvError reports a referenced variable that is not set. It names
// the variable, never a value.
type MissingEnvError struct{ Name string }

func (e *MissingEnvError) Error() string {
	return fmt.Sprintf("environment variable %s is not set", e.Name)
}

// ExpandEnv replaces every ${env:NAME} in s with lookup(NAME). Call it only
// where the value is used (spawning a process, sending a request), and
// never show its result: it may be a secret. An unset variable is a
// *MissingEnvError.
func ExpandEnv(s string, lookup func(string) (string, bool)) (string, error) {
	var missing error
	out := envRefAnyRE.ReplaceAllStringFunc(s, func(ref string) string {
		name := envRefAnyRE.FindStringSubmatch(ref)[1]
		v, ok := lookup(name)
		if !ok && missing == nil {
			missing = &MissingEnvError{Name: name}
		}
		return v
	})
	if missing != nil {
		return "", missing
	}
	return out, nil
}
