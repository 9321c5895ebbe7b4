package engine

import (
	"fmt"

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
