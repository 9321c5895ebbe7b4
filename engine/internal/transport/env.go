package transport

import (
	"runtime"
	"sort"
)

// baselineEnv names the host variables every stdio server gets: what
// programs need to find executables, a home, a temp dir and a locale.
// Nothing else of the host's environment reaches a server unless the
// config lists it in env or envAllowlist.
func baselineEnv() []string {
	names := []string{"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "USER", "LOGNAME"}
	if runtime.GOOS == "windows" {
		names = append(names, "SYSTEMROOT", "SYSTEMDRIVE", "WINDIR", "COMSPEC", "PATHEXT", "TEMP", "TMP",
			"USERPROFILE", "APPDATA", "LOCALAPPDATA", "PROGRAMDATA", "PROGRAMFILES")
	}
	return names
}

// Var is an explicit variable of a stdio server's environment (its
// config's env), its value resolved.
type Var struct {
	Name, Value string
}

// ChildEnv builds the environment of a stdio server, sorted by name:
// the baseline host variables (PATH, HOME, the locale and the like), the
// allowlisted host variables, then the explicit ones, each later one
// taking a name's place. lookup reads the host's environment. Which of
// the values are secret is the engine's to say (its serverSecrets).
func ChildEnv(allowlist []string, explicit []Var, lookup func(string) (string, bool)) (env []string) {
	vars := map[string]string{}
	for _, name := range baselineEnv() {
		if v, ok := lookup(name); ok {
			vars[name] = v
		}
	}
	for _, name := range allowlist {
		if v, ok := lookup(name); ok {
			vars[name] = v
		}
	}
	for _, v := range explicit {
		vars[v.Name] = v.Value
	}
	names := make([]string, 0, len(vars))
	for k := range vars {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		env = append(env, k+"="+vars[k])
	}
	return env
}
