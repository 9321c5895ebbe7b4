package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

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
	if d := s.e.opts.AuthTimeout; d > 0 {
		opts.AuthTimeout = d
	} else if n := s.e.Config().Settings.AuthTimeoutMs; n > 0 {
		opts.AuthTimeout, opts.AuthTimeoutName = ms(n), "authTimeoutMs"
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

// AuthState is the state of a server's stored OAuth token, as
// [Engine.AuthStatus] reports it.
type AuthState string

// The states of a stored OAuth token.
const (
	// AuthAuthenticated: a token for the server's URL that has not
	// expired.
	AuthAuthenticated AuthState = "authenticated"
	// AuthExpired: the token expired, and a refresh token is there to
	// get a new one at the next connection.
	AuthExpired AuthState = "expired"
	// AuthNeedsAuth: no token usable for the server's URL; it needs an
	// authorization.
	AuthNeedsAuth AuthState = "needs_auth"
)

// AuthInfo is what is stored of a server's OAuth authorization: never a
// token or a secret.
type AuthInfo struct {
	Server string    `json:"server"`
	State  AuthState `json:"state"`
	// Expiry is when the access token expires; nil when it does not say,
	// or without a token.
	Expiry *time.Time `json:"expiry,omitempty"`
	// Scopes are the scopes that were asked for.
	Scopes []string `json:"scopes,omitempty"`
	// Refreshable reports a refresh token.
	Refreshable bool `json:"refreshable"`
	// Issuer is the authorization server that issued the token.
	Issuer string `json:"issuer,omitempty"`
}

// oauthSupervisor returns the supervisor of a server with auth type
// "oauth".
func (e *Engine) oauthSupervisor(id string) (*supervisor, error) {
	s, err := e.supervisor(id)
	if err != nil {
		return nil, err
	}
	if s.cfg.Auth == nil || s.cfg.Auth.Type != "oauth" {
		return nil, fmt.Errorf("server %s does not use OAuth (its auth type is not \"oauth\")", s.cfg.ID)
	}
	return s, nil
}

// AuthStatus returns the state of the stored OAuth token of a server
// with auth type "oauth", read from its token store without connecting.
// A token stored for another URL than the server's counts as none.
func (e *Engine) AuthStatus(id string) (AuthInfo, error) {
	s, err := e.oauthSupervisor(id)
	if err != nil {
		return AuthInfo{}, err
	}
	return s.authInfo(), nil
}

// AuthServers returns [Engine.AuthStatus] of every server with auth
// type "oauth", by id.
func (e *Engine) AuthServers() []AuthInfo {
	e.mu.Lock()
	var sups []*supervisor
	for _, s := range e.servers {
		if s.cfg.Auth != nil && s.cfg.Auth.Type == "oauth" {
			sups = append(sups, s)
		}
	}
	e.mu.Unlock()
	sort.Slice(sups, func(i, j int) bool { return sups[i].cfg.ID < sups[j].cfg.ID })
	out := make([]AuthInfo, 0, len(sups))
	for _, s := range sups {
		out = append(out, s.authInfo())
	}
	return out
}

func (s *supervisor) authInfo() AuthInfo {
	info := AuthInfo{Server: s.cfg.ID, State: AuthNeedsAuth}
	endpoint, err := resolveURL(s.cfg, s.e.lookup, &s.scrub)
	if err != nil {
		return info
	}
	f := s.tokenStore().Read()
	if f == nil || f.URLHash != oauth.URLHash(endpoint) {
		return info
	}
	info.Scopes, info.Issuer, info.Refreshable = f.Scopes, f.Issuer, f.Token.RefreshToken != ""
	if !f.Token.Expiry.IsZero() {
		exp := f.Token.Expiry
		info.Expiry = &exp
	}
	switch {
	case f.Token.Valid():
		info.State = AuthAuthenticated
	case info.Refreshable:
		info.State = AuthExpired
	}
	return info
}

// LogoutResult is what [Engine.Logout] did.
type LogoutResult struct {
	Server string `json:"server"`
	// Removed reports that a token was stored, and is removed.
	Removed bool `json:"removed"`
	// Revoked reports that the authorization server revoked the tokens.
	Revoked bool `json:"revoked"`
	// RevokeError says why the tokens could not be revoked (they are
	// removed all the same); empty when they were, or when the
	// authorization server offers no revocation.
	RevokeError string `json:"revokeError,omitempty"`
}

// revokeTimeout bounds a revocation at the authorization server.
const revokeTimeout = 30 * time.Second

// Logout forgets a server's OAuth authorization: it disconnects the
// server, removes its token file (holding the file's lock; other
// servers' tokens are not touched) and then, best effort, revokes the
// tokens at the authorization server when its metadata offers a
// revocation_endpoint (RFC 7009). It returns an error only when the
// token file could not be removed; a failed revocation is
// [LogoutResult.RevokeError], which never holds a token.
func (e *Engine) Logout(ctx context.Context, id string) (LogoutResult, error) {
	s, err := e.oauthSupervisor(id)
	if err != nil {
		return LogoutResult{}, err
	}
	res := LogoutResult{Server: s.cfg.ID}
	switch s.getStatus() {
	case StatusCold, StatusDisabled, StatusUntrusted, StatusDisconnected:
	default:
		s.disconnect(StatusDisconnected)
	}
	f, err := s.tokenStore().Remove(ctx)
	s.oauth.Forget()
	if err != nil {
		return res, fmt.Errorf("server %s: %w", s.cfg.ID, s.scrub.Err(err))
	}
	if f == nil {
		return res, nil
	}
	res.Removed = true
	endpoint, err := resolveURL(s.cfg, s.e.lookup, &s.scrub)
	var h *oauth.Handler
	if err == nil {
		h, err = s.newOAuthHandler(endpoint)
	}
	if err == nil {
		rctx, cancel := context.WithTimeout(ctx, revokeTimeout)
		res.Revoked, err = h.Revoke(rctx, f)
		cancel()
	}
	if err != nil {
		res.RevokeError = s.scrub.Err(err).Error()
	}
	return res, nil
}
