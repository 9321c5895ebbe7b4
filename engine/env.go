package engine

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/engine/internal/transport"
	"github.com/voltmcp/voltmcp/redact"
)

// childEnv builds the environment of a stdio server (see
// [transport.ChildEnv]): the baseline, the allowlisted host variables,
// then the explicit env entries with their ${env:NAME} references
// resolved. The secrets among them are [serverSecrets]'s, which the
// server's scrubber knows from the start.
func childEnv(srv cue.Server, lookup func(string) (string, bool)) ([]string, error) {
	vars := make([]transport.Var, 0, len(srv.Env))
	for name, raw := range srv.Env {
		v, err := cue.ExpandEnv(raw, lookup)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", name, err)
		}
		vars = append(vars, transport.Var{Name: name, Value: v})
	}
	return transport.ChildEnv(srv.EnvAllowlist, vars, lookup), nil
}

// serverSecrets returns the secret values srv's definition resolves to
// through lookup, each as the server receives it: the values of its env
// entries that come from the host or that lint would call a credential,
// the host variables its envAllowlist passes, the literal credentials of
// its arguments and URL (--api-key V, --token=V, a secret query
// parameter, Authorization: Bearer V, a password), arguments and URL
// queries built from ${env:NAME}, header values from the host or shaped
// like a credential, and its auth token or client secret. A reference
// that lookup does not resolve contributes nothing (the server cannot
// start then). The engine seeds a server's scrubber with them when it
// makes the server's supervisor, before anything of the server is shown
// or stored, and the guard's scrubber with those of every server (see
// [configScrubber]).
func serverSecrets(srv cue.Server, lookup func(string) (string, bool)) []string {
	var out []string
	expand := func(raw string) (string, bool) {
		v, err := cue.ExpandEnv(raw, lookup)
		return v, err == nil
	}
	for _, m := range []map[string]string{srv.Env, srv.Headers} {
		for name, raw := range m {
			if v, ok := expand(raw); ok && (cue.HasEnvRef(raw) || redact.IsLiteralSecret(name, raw)) {
				out = append(out, v)
			}
		}
	}
	for name, raw := range srv.Headers {
		// The token of "Authorization: Bearer V" on its own too.
		if v, ok := expand(raw); ok {
			out = append(out, redact.ArgSecrets([]string{name + ": " + v})...)
		}
	}
	for _, name := range srv.EnvAllowlist {
		if v, ok := lookup(name); ok {
			out = append(out, v)
		}
	}
	args := make([]string, len(srv.Args))
	for i, raw := range srv.Args {
		args[i] = raw
		if v, ok := expand(raw); ok {
			args[i] = v
			if cue.HasEnvRef(raw) {
				out = append(out, v)
			}
		}
	}
	out = append(out, redact.ArgSecrets(srv.Args)...)
	out = append(out, redact.ArgSecrets(args)...)
	if srv.URL != "" {
		if u, ok := expand(srv.URL); ok {
			out = append(out, redact.ArgSecrets([]string{u})...)
			if p, err := url.Parse(u); err == nil && p.RawQuery != "" && cue.HasEnvRef(srv.URL) {
				out = append(out, p.RawQuery)
			}
		}
	}
	if a := srv.Auth; a != nil {
		for _, raw := range []string{a.Token, a.ClientSecret} {
			if v, ok := expand(raw); ok && v != "" {
				out = append(out, v)
			}
		}
		if a.Type == "env" && a.Variable != "" {
			if v, ok := lookup(a.Variable); ok {
				out = append(out, v)
			}
		}
	}
	return out
}

// configScrubber returns a scrubber of the secret values of every
// server of servers (see [serverSecrets]): the guard's, for what the
// policies and plugins say.
func configScrubber(servers []cue.Server, lookup func(string) (string, bool)) *redact.Scrubber {
	var values []string
	for _, s := range servers {
		values = append(values, serverSecrets(s, lookup)...)
	}
	return redact.NewScrubber(transport.ScrubMarker, values...)
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
	env, err := childEnv(locate, lookup)
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
