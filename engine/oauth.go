package engine

import (
	"errors"
	"fmt"
	"strings"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/engine/internal/oauth"
)

// OAuth for HTTP servers with auth type "oauth". Package
// engine/internal/oauth holds the handler, its state across connections
// and the token store; this file resolves a server's auth config for it
// and maps its hooks onto the supervisor: statuses, events, scrubbing,
// the user's authorization through Options.Authorize.

// takeAuthFailure returns, and forgets, why an authorization failed while
// the server was connecting. The status is then needs_auth, and lastError
// says why.
func (s *supervisor) takeAuthFailure() error { return s.oauth.TakeFailure() }

// tokenStore returns the server's OAuth token store,
// <agent-dir>/mcp/auth/<id>.json.
func (s *supervisor) tokenStore() *oauth.Store {
	return oauth.NewStore(oauth.Path(s.e.opts.AgentDir, s.cfg.ID), s.cfg.ID, &oauth.StoreOptions{Log: s.log, Scrub: &s.scrub})
}

// newOAuthHandler builds the handler for a connection to endpoint from
// the server's auth config, its environment references resolved (and
// scrubbed when secret), and the authTimeoutMs setting.
func (s *supervisor) newOAuthHandler(endpoint string) (*oauth.Handler, error) {
	a := s.cfg.Auth
	if s.cfg.Transport == cue.TransportSSE && !s.cfg.TransportAuto {
		return nil, errors.New(`auth: oauth works over Streamable HTTP only, not "transport": "sse"`)
	}
	if a.Flow == "device" {
		return nil, errors.New(`auth: the "device" flow is not supported yet; use "browser" or "auto"`)
	}
	expand := func(field, v string, secret bool) (string, error) {
		out, err := cue.ExpandEnv(v, s.e.lookup)
		if err != nil {
			return "", fmt.Errorf("auth %s: %w", field, err)
		}
		if secret || cue.HasEnvRef(v) && field != "clientId" {
			s.scrub.Add(out)
		}
		return out, nil
	}
	opts := &oauth.Options{TokenEndpointAuthMethod: a.TokenEndpointAuthMethod, AllowInsecureLoopback: a.AllowInsecureLoopback,
		Base: s.e.httpBase, Authorize: s.e.opts.Authorize, Log: s.log, Scrub: &s.scrub, Hooks: s.oauthHooks()}
	var scope string
	for _, f := range []struct {
		field, v string
		to       *string
	}{
		{"clientId", a.ClientID, &opts.ClientID},
		{"clientSecret", a.ClientSecret, &opts.ClientSecret},
		{"clientMetadataUrl", a.ClientMetadataURL, &opts.ClientMetadataURL},
		{"resourceMetadataUrl", a.ResourceMetadataURL, &opts.ResourceMetadataURL},
		{"scope", a.Scope, &scope},
		{"issuer", a.Issuer, &opts.Issuer},
	} {
		v, err := expand(f.field, f.v, f.field == "clientSecret")
		if err != nil {
			return nil, err
		}
		*f.to = v
	}
	opts.Scopes = strings.Fields(scope)
	if n := s.e.Config().Settings.AuthTimeoutMs; n > 0 {
		opts.AuthTimeout = ms(n)
	}
	return oauth.NewHandler(endpoint, &s.oauth, s.tokenStore(), opts)
}

// oauthHooks map what an authorization does onto the server's statuses
// (needs_auth → authenticating → connecting, or back to needs_auth with
// the reason as lastError) and the mcp_auth_request and mcp_auth_update
// events.
func (s *supervisor) oauthHooks() oauth.Hooks {
	return oauth.Hooks{
		Connecting: func() bool { return s.getStatus() == StatusConnecting },
		Request:    func() { s.e.bus.publish(Event{Type: EventAuthRequest, Server: s.cfg.ID}) },
		Authenticating: func() {
			s.setStatus(StatusNeedsAuth, "")
			s.setStatus(StatusAuthenticating, "")
		},
		Update: func(status string, err error) {
			ev := Event{Type: EventAuthUpdate, Server: s.cfg.ID, AuthStatus: status}
			if err != nil {
				ev.Error = err.Error()
			}
			s.e.bus.publish(ev)
		},
		Authorized: func() { s.setStatus(StatusConnecting, "") },
		NeedsAuth: func(err error) {
			s.mu.Lock()
			s.lastErr = err.Error()
			s.mu.Unlock()
			s.setStatus(StatusNeedsAuth, "")
		},
	}
}
