package engine

import (
	"fmt"
	"runtime"
	"sort"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/redact"
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

// childEnv builds the environment of a stdio server: the baseline, the
// allowlisted host variables, then the explicit env entries with their
// ${env:NAME} references resolved. It also returns the resolved explicit
// values, which the caller scrubs from every error it reports.
func childEnv(srv cue.Server, lookup func(string) (string, bool)) (env []string, secrets []string, err error) {
	vars := map[string]string{}
	for _, name := range baselineEnv() {
		if v, ok := lookup(name); ok {
			vars[name] = v
		}
	}
	for _, name := range srv.EnvAllowlist {
		if v, ok := lookup(name); ok {
			vars[name] = v
			secrets = append(secrets, v)
		}
	}
	for name, raw := range srv.Env {
		v, err := cue.ExpandEnv(raw, lookup)
		if err != nil {
			return nil, nil, fmt.Errorf("env %s: %w", name, err)
		}
		vars[name] = v
		// A value from the host is a secret; a literal one is when lint
		// would call it one (a secret name or a credential's shape).
		if cue.HasEnvRef(raw) || redact.IsLiteralSecret(name, raw) {
			secrets = append(secrets, v)
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
	return env, secrets, nil
}
