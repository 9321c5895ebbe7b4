package engine

import (
	"context"

	"github.com/voltmcp/voltmcp/policies"
)

// RemoteRequest is a management command (an RPC method such as
// connect_mcp_server) that a surface asks the engine to decide before it
// runs it, for a caller that is the local owner or a paired remote client.
type RemoteRequest struct {
	// Command is the RPC method, e.g. "connect_mcp_server".
	Command string
	// Remote is set for a paired remote client (a device over the
	// daemon's HTTP listener); unset for the local owner (stdio, the
	// daemon's unix socket).
	Remote bool
	// Server is the id of the server the command acts on, "" for a
	// command on the workspace as a whole.
	Server string
	// AuthFlow is start_mcp_server_auth's flow: "device", "browser" or "".
	AuthFlow string
}

// RemoteDecision is the voltmcp.remote policy's answer to a RemoteRequest.
type RemoteDecision struct {
	Allowed bool
	// Reasons say why, each with the rule (and, for a user's or a
	// project's rule, the file) that gave it.
	Reasons []string
}

// DecideRemote decides req with the voltmcp.remote policy of the current
// config (policies/rego/remote.rego and the user's and project's deny
// rules): the owner may run every command a deny rule does not refuse; a
// remote client only the spec's remote-safe commands, on a server that
// exists in trusted config, with device-code auth only. Whether the server
// is in trusted config is the engine's own knowledge (a server configured
// in a layer it loaded, of a project still trusted), never the caller's
// claim. It fails closed: a policy that cannot decide (an error, a
// timeout, its memory budget) refuses, and a policy_error record says
// why. Surfaces call it before every command of a caller they serve.
func (e *Engine) DecideRemote(ctx context.Context, req RemoteRequest) RemoteDecision {
	caller := "local"
	if req.Remote {
		caller = "remote"
	}
	in := policies.RemoteInput{Command: req.Command, Caller: caller, Server: req.Server, AuthFlow: req.AuthFlow}
	if req.Server != "" {
		// A server the engine runs: configured in a layer it loaded,
		// and, for a project's server, of a project still trusted.
		if s, err := e.supervisor(req.Server); err == nil {
			in.ServerInTrustedConfig = !s.cfg.Layer.IsProject() || e.projectTrustError(ctx) == nil
		}
	}
	g := e.guard.Load()
	if g == nil {
		return RemoteDecision{Reasons: []string{"the engine is closed"}}
	}
	pd := g.policies().Remote(ctx, in)
	d := RemoteDecision{Allowed: pd.Allow && pd.Err == nil}
	for _, r := range pd.Reasons {
		d.Reasons = append(d.Reasons, g.secrets.Text(r.String()))
	}
	if pd.Err != nil {
		e.recordPolicyError(ctx, policies.AreaRemote, pd.Err, map[string]any{"command": req.Command, "server": req.Server})
	}
	return d
}
