package engine

import (
	"context"
	"fmt"
	"runtime"
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
// the user's authorization through Options.Authorize or
// Options.DeviceAuthorize, in the flow the server's auth.flow (or
// Options.AuthFlow) chooses.

// The OAuth flows, as a server's auth.flow and [Options.AuthFlow] name
// them.
const (
	// AuthFlowBrowser is the authorization code flow with PKCE: the user
	// approves in a browser, through [Options.Authorize].
	AuthFlowBrowser = "browser"
	// AuthFlowDevice is the device authorization grant (RFC 8628): the
	// user approves a code on a page, on any device, through
	// [Options.DeviceAuthorize]. The authorization server must offer it
	// (device_authorization_endpoint).
	AuthFlowDevice = "device"
	// AuthFlowAuto is the device flow when there is no usable display
	// (see [HasDisplay]) or no [Options.Authorize], and the authorization
	// server offers it; else the browser flow.
	AuthFlowAuto = "auto"
)

// DeviceAuthorization is what a user needs to approve a device
// authorization, as [Options.DeviceAuthorize] gets it. None of it is a
// secret (the device code the engine polls with is, and is not here);
// the engine has checked that both URLs are https with a host, at the
// same host, and that the code is at most 64 printable ASCII bytes.
type DeviceAuthorization struct {
	// VerificationURI is the page where the user enters UserCode.
	VerificationURI string `json:"verificationUri"`
	// VerificationURIComplete is the page with the code in it (for a
	// link or a QR code), or "" when the authorization server gives none.
	VerificationURIComplete string `json:"verificationUriComplete,omitempty"`
	// UserCode is the code to enter.
	UserCode string `json:"userCode"`
	// Expiry is when the code expires; zero when the server does not say.
	Expiry time.Time `json:"expiry,omitzero"`
}

// HasDisplay reports whether the user can be shown a browser where the
// engine runs, as [AuthFlowAuto] judges it from the environment (lookup,
// as [Options.LookupEnv]) and the operating system goos: in an SSH
// session (SSH_CONNECTION, SSH_CLIENT or SSH_TTY set) only with a
// display (DISPLAY or WAYLAND_DISPLAY set, a forwarded one); else always
// on macOS and Windows, and elsewhere (Linux, the BSDs) only with a
// display.
func HasDisplay(lookup func(string) (string, bool), goos string) bool {
	set := func(k string) bool {
		v, ok := lookup(k)
		return ok && v != ""
	}
	display := set("DISPLAY") || set("WAYLAND_DISPLAY")
	if set("SSH_CONNECTION") || set("SSH_CLIENT") || set("SSH_TTY") {
		return display
	}
	if goos == "darwin" || goos == "windows" {
		return true
	}
	return display
}

// oauthFlow is the flow of the server's authorizations, as package oauth
// names it: Options.AuthFlow, else auth.flow; "auto" (or none) is the
// device flow, falling back to the browser flow where the authorization
// server offers none, when there is a DeviceAuthorize and either no
// Authorize or no display.
func (s *supervisor) oauthFlow() (string, error) {
	flow := s.e.opts.AuthFlow
	if flow == "" {
		flow = s.cfg.Auth.Flow
	}
	switch flow {
	case AuthFlowBrowser:
		return oauth.FlowBrowser, nil
	case AuthFlowDevice:
		return oauth.FlowDevice, nil
	case "", AuthFlowAuto:
	default:
		return "", fmt.Errorf("auth: Options.AuthFlow %q: want %q, %q or %q", flow, AuthFlowBrowser, AuthFlowDevice, AuthFlowAuto)
	}
	o := &s.e.opts
	if o.DeviceAuthorize != nil && (o.Authorize == nil || !HasDisplay(s.e.lookup, runtime.GOOS)) {
		return oauth.FlowAuto, nil
	}
	return oauth.FlowBrowser, nil
}

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
	flow, err := s.oauthFlow()
	if err != nil {
		return nil, err
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
		Base: s.e.httpBase, Authorize: s.e.opts.Authorize, CanAuthorize: s.e.opts.CanAuthorize, Flow: flow, Log: s.log, Scrub: &s.scrub, Hooks: s.oauthHooks()}
	if show := s.e.opts.DeviceAuthorize; show != nil {
		opts.DeviceAuthorize = func(ctx context.Context, server string, c *oauth.DeviceCode) error {
			return show(ctx, server, DeviceAuthorization{VerificationURI: c.VerificationURI,
				VerificationURIComplete: c.VerificationURIComplete, UserCode: c.UserCode, Expiry: c.Expiry})
		}
	}
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
// token file could not be removed; a removed token is published as
// mcp_auth_update "logged_out". A failed revocation is
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
	s.e.bus.publish(Event{Type: EventAuthUpdate, Server: s.cfg.ID, AuthStatus: "logged_out"})
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
