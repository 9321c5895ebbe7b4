package engine

import (
	"fmt"
	"strings"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/engine/internal/transport"
	"github.com/voltmcp/voltmcp/redact"
)

// childEnv builds the environment of a stdio server (see
// [transport.ChildEnv]): the baseline, the allowlisted host variables,
// then the explicit env entries with their ${env:NAME} references
// resolved. It also returns the values the caller scrubs from every
// error it reports: the allowlisted ones, those read from the host and
// literal ones that look like credentials.
func childEnv(srv cue.Server, lookup func(string) (string, bool)) (env []string, secrets []string, err error) {
	vars := make([]transport.Var, 0, len(srv.Env))
	for name, raw := range srv.Env {
		v, err := cue.ExpandEnv(raw, lookup)
		if err != nil {
			return nil, nil, fmt.Errorf("env %s: %w", name, err)
		}
		// A value from the host is a secret; a literal one is when lint
		// would call it one (a secret name or a credential's shape).
		vars = append(vars, transport.Var{Name: name, Value: v, Secret: cue.HasEnvRef(raw) || redact.IsLiteralSecret(name, raw)})
	}
	env, secrets = transport.ChildEnv(srv.EnvAllowlist, vars, lookup)
	return env, secrets, nil
}

// ResolveCommand finds the program a stdio server runs, as the gateway
// does when it starts the server, and starts nothing: its cwd and
// command with their ${env:NAME} references expanded through lookup, a
// bare name looked up in the PATH of the server's restricted
// environment (the host's PATH unless the server's env sets one), a
// relative path resolved against its working directory. A path is
// returned whether or not a file is there; the caller checks. Only the
// fields that locate the program are expanded: a variable unset in
// another env entry or in args does not keep the program from being
// found ([UnsetEnv] names those). The error says which variable of the
// command, the cwd or the env's PATH is unset (a *cue.MissingEnvError
// inside), or that the command is not in PATH.
func ResolveCommand(srv cue.Server, lookup func(string) (string, bool)) (string, error) {
	locate := srv
	locate.Env = nil
	if p, ok := srv.Env["PATH"]; ok {
		locate.Env = map[string]string{"PATH": p}
	}
	env, _, err := childEnv(locate, lookup)
	if err != nil {
		return "", err
	}
	path, _, err := commandPath(srv, lookup, env)
	return path, err
}

// UnsetEnv returns the environment variables a server's config reads
// that lookup does not find, each once, with the first field (in
// [cue.Server.EnvRefUses] order) that reads it: the ${env:NAME}
// references of the fields the engine expands when it starts or
// contacts the server (command, args, cwd, env, url, headers, auth),
// and the variable an auth of type env names ("auth.variable"). The
// server cannot start (stdio) or connect (HTTP) while one is unset.
// Only names are returned, never a value.
func UnsetEnv(srv cue.Server, lookup func(string) (string, bool)) []cue.EnvRefUse {
	refs := srv.EnvRefUses()
	if a := srv.Auth; a != nil && a.Type == "env" && a.Variable != "" {
		refs = append(refs, cue.EnvRefUse{Name: a.Variable, Field: "auth.variable"})
	}
	var out []cue.EnvRefUse
	seen := map[string]bool{}
	for _, r := range refs {
		if seen[r.Name] || !expandedField(r.Field) {
			continue
		}
		seen[r.Name] = true
		if _, ok := lookup(r.Name); !ok {
			out = append(out, r)
		}
	}
	return out
}

// expandedField reports whether the engine expands the ${env:NAME}
// references of a server's field (a path of [cue.Server.EnvRefUses]).
func expandedField(field string) bool {
	for _, p := range []string{"command", "cwd", "url"} {
		if field == p {
			return true
		}
	}
	for _, p := range []string{"args[", "env.", "headers.", "auth."} {
		if strings.HasPrefix(field, p) {
			return true
		}
	}
	return false
}

// commandPath expands a stdio server's cwd and command and finds its
// program in the PATH of env, the server's environment (see
// [transport.ResolveCommand]); dir is the directory it runs in.
func commandPath(srv cue.Server, lookup func(string) (string, bool), env []string) (path, dir string, err error) {
	cwd, err := cue.ExpandEnv(srv.Cwd, lookup)
	if err != nil {
		return "", "", fmt.Errorf("cwd: %w", err)
	}
	dir = srv.WorkDir(cwd)
	command, err := cue.ExpandEnv(srv.Command, lookup)
	if err != nil {
		return "", "", fmt.Errorf("command: %w", err)
	}
	path, err = transport.ResolveCommand(command, dir, env)
	return path, dir, err
}

// RunEnv names the environment variable the engine sets in every stdio
// server it starts, which the server's own children inherit: its run
// mark, by which a stop finds every process of the server. A process
// that finds it set runs under a voltmcp gateway. `voltmcp serve` refuses
// to serve there: an entry that starts the gateway as one of its own
// servers (under any command name, through any wrapper) would otherwise
// start its servers again, itself among them, without end.
const RunEnv = transport.RunEnv

// UnderGateway returns the run mark when getenv says this process was
// started by a voltmcp gateway, directly or through one of that
// gateway's servers, and "" otherwise.
func UnderGateway(getenv func(string) string) string { return getenv(RunEnv) }
