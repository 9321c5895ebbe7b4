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
	// Secret marks a value to scrub from what the engine shows: one read
	// from the host, or a literal one that looks like a credential.
	Secret bool
}

// ChildEnv builds the environment of a stdio server, sorted by name:
// the baseline host variables (PATH, HOME, the locale and the like), the
// allowlisted host variables, then the explicit ones, each later one
// taking a name's place. lookup reads the host's environment. It also
// returns the values to scrub from every error the caller reports: those
// of the allowlisted variables present and of the explicit ones marked
// Secret.
func ChildEnv(allowlist []string, explicit []Var, lookup func(string) (string, bool)) (env, secrets []string) {
	vars := map[string]string{}
	for _, name := range baselineEnv() {
		if v, ok := lookup(name); ok {
			vars[name] = v
		}
	}
	for _, name := range allowlist {
		if v, ok := lookup(name); ok {
			vars[name] = v
			secrets = append(secrets, v)
		}
	}
	for _, v := range explicit {
		vars[v.Name] = v.Value
		if v.Secret {
			secrets = append(secrets, v.Value)
		}
	}
	names := make([]string, 0, len(vars))
	for k := range vars {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		env = append(env, k+"="+vars[k])
	}
	return env, secrets
}
