package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/voltmcp/voltmcp/engine/internal/oauthguard"
	"github.com/voltmcp/voltmcp/engine/internal/transport"
	"github.com/voltmcp/voltmcp/redact"
)

// DefaultAuthTimeout bounds an authorization when [Options.AuthTimeout]
// is zero (the default of the authTimeoutMs setting).
const DefaultAuthTimeout = 5 * time.Minute

// How an authorization ended, as [Hooks.Update] gets it.
const (
	Authorized = "authorized" // a token was obtained
	Failed     = "failed"     // the authorization failed; the error says why
	Required   = "required"   // no user can be asked: no [Options.Authorize] (or DeviceAuthorize), or [Options.CanAuthorize] said why not
)

// Hooks tell a [Handler]'s caller what an authorization does, so that
// it can show it (statuses, events). Each nil hook does nothing; a nil
// Connecting reports false. While the server is connecting the hooks
// run in the order Request, Authenticating, Update and then Authorized
// or NeedsAuth; an authorization on a live session (a step-up) calls
// only Request and Update.
type Hooks struct {
	// Connecting reports whether the server is connecting (rather than
	// live) when an authorization starts.
	Connecting func() bool
	// Request is called when an authorization starts, before the user
	// is asked.
	Request func()
	// Authenticating is called, while connecting, just before the user
	// is asked: the server needs authorization, and it is in progress.
	Authenticating func()
	// Update is called when an authorization ends, with [Authorized] and
	// a nil error, or with [Failed] or [Required] and why (scrubbed).
	Update func(status string, err error)
	// Authorized is called after Update, while connecting, when a token
	// was obtained: the connection goes on.
	Authorized func()
	// NeedsAuth is called after Update, while connecting, when the
	// authorization failed or could not run: the server needs
	// authorization, and err says why. The connection attempt then ends
	// with that error, which [State.TakeFailure] returns.
	NeedsAuth func(err error)
}

// Options are a server's OAuth client as its config gives it, with
// every environment reference resolved, and what a [Handler] reports
// to. The zero value registers a client dynamically (RFC 7591),
// requests the scopes the server advertises, waits [DefaultAuthTimeout]
// for the user, goes through http.DefaultTransport, cannot ask the user
// (every authorization ends [Required]), reports nothing and scrubs into
// a scrubber of its own.
type Options struct {
	// ClientID names a pre-registered client, and ClientSecret its
	// secret when TokenEndpointAuthMethod is not "none". A pre-registered
	// client is bound to its authorization server (Issuer, or without it
	// one at the origin of the endpoint): discovery that leads anywhere
	// else is refused before its credentials could be sent.
	ClientID, ClientSecret string
	// ClientMetadataURL, without a ClientID, is the URL of a client ID
	// metadata document, with dynamic registration as the fallback for
	// an authorization server that does not support those documents.
	ClientMetadataURL string
	// Issuer is the authorization server a pre-registered client was
	// issued by.
	Issuer string
	// ResourceMetadataURL is the protected resource metadata to use
	// rather than the one a server's challenge names.
	ResourceMetadataURL string
	// Scopes are requested instead of those the server advertises; a
	// step-up (403 insufficient_scope) adds what the server asks for.
	Scopes []string
	// TokenEndpointAuthMethod is the client's token endpoint
	// authentication method ("none", "client_secret_basic", …); empty
	// leaves it to the SDK.
	TokenEndpointAuthMethod string
	// AllowInsecureLoopback lets the OAuth client use plain http to a
	// loopback address ([oauthguard.Policy] AllowLoopback).
	AllowInsecureLoopback bool
	// AuthTimeout bounds the user's authorization. Zero means
	// [DefaultAuthTimeout].
	AuthTimeout time.Duration
	// AuthTimeoutName is the setting AuthTimeout comes from, which the
	// error of an authorization that ran out of time names; empty names
	// none.
	AuthTimeoutName string
	// Base is the transport the guard's is cloned from when it is an
	// *http.Transport (its proxy, TLS and pool settings); nil or any
	// other RoundTripper means http.DefaultTransport ([oauthguard.New]).
	Base http.RoundTripper
	// Authorize asks the user to authorize at authURL for server, and
	// returns the URL the authorization server redirected back to. Nil
	// means no user can be asked.
	Authorize func(ctx context.Context, server, authURL string) (callbackURL string, err error)
	// Flow is the flow an authorization runs: [FlowBrowser] (the zero
	// value means it too), [FlowDevice] or [FlowAuto].
	Flow string
	// DeviceAuthorize shows the user the page and code of a device
	// authorization (RFC 8628) for server, and returns once they are
	// shown; the handler then polls for the token until the user
	// approves, refuses, the code expires or the auth timeout ends. An
	// error it returns ends the authorization. Nil means the device
	// grant cannot ask the user.
	DeviceAuthorize func(ctx context.Context, server string, code *DeviceCode) error
	// CanAuthorize reports whether Authorize can ask a user for the
	// request under ctx, and when it cannot, why (a reason for people).
	// It runs before any request to the authorization server; an error
	// ends the authorization [Required], as without Authorize, with the
	// error as the reason. Nil: Authorize can always ask.
	CanAuthorize func(ctx context.Context) error
	// Hooks report what an authorization does.
	Hooks Hooks
	// Log gets what the handler logs. Nil discards it.
	Log *slog.Logger
	// Scrub gets every secret the handler learns (codes, tokens, client
	// secrets) and scrubs the errors it returns. Nil means a scrubber of
	// its own.
	Scrub *transport.Scrubber
}

// Handler is the auth.OAuthHandler of one connection attempt to an
// OAuth server. Each attempt gets a fresh one, with a fresh loopback
// redirect port; the token source carries over through the server's
// [State]. Make one with [NewHandler].
type Handler struct {
	server       string
	endpoint     string
	state        *State
	store        *Store
	opts         Options
	sdk          *auth.AuthorizationCodeHandler
	client       *http.Client // through guard
	guard        *oauthguard.Guard
	authTimeout  time.Duration
	resourceMeta string
	log          *slog.Logger
	scrub        *transport.Scrubber
	redirect     string // the loopback redirect URI, which a registration holds
	stepUp       bool   // set while a step-up authorization runs (one at a time)

	mu sync.Mutex
	ts oauth2.TokenSource // the source of the last token obtained, nil before
}

var _ auth.OAuthHandler = (*Handler)(nil)

// NewHandler returns the handler of a connection to endpoint of the
// server whose token store is store and whose OAuth state is state: a
// pre-registered client when opts names a ClientID; else a client ID
// metadata document when it names a ClientMetadataURL, with dynamic
// registration as the fallback; else dynamic registration. The first
// token it offers is the one state holds for endpoint, else the one
// store holds.
func NewHandler(endpoint string, state *State, store *Store, opts *Options) (*Handler, error) {
	h := &Handler{server: store.Server(), endpoint: endpoint, state: state, store: store}
	if opts != nil {
		h.opts = *opts
	}
	o := &h.opts
	h.opts.Scopes = slices.Clone(o.Scopes)
	h.resourceMeta = o.ResourceMetadataURL
	h.authTimeout = o.AuthTimeout
	if h.authTimeout <= 0 {
		h.authTimeout = DefaultAuthTimeout
	}
	h.log, h.scrub = o.Log, o.Scrub
	if h.log == nil {
		h.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if h.scrub == nil {
		h.scrub = new(transport.Scrubber)
	}
	redirect, err := loopbackRedirect()
	if err != nil {
		return nil, err
	}
	// A pre-registered client is bound to the authorization server that
	// issued it (Issuer, or one at the url's origin): the guard refuses
	// discovery that leads anywhere else before the client's credentials
	// could be sent.
	policy := oauthguard.Policy{AllowLoopback: o.AllowInsecureLoopback, Bound: o.ClientID != "", Issuer: o.Issuer}
	for i, own := range []string{endpoint, o.ResourceMetadataURL} {
		if u, err := url.Parse(own); err == nil && own != "" {
			if org, ok := transport.OriginOf(u); ok {
				policy.Own = append(policy.Own, org)
				if i == 0 {
					policy.Home = org
				}
			}
		}
	}
	h.redirect = redirect
	h.guard = oauthguard.New(h.server, policy, redirect, o.Base)
	h.client = transport.HTTPClient(h.guard)
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:              redirect,
		AuthorizationCodeFetcher: h.fetchCode,
		Client:                   h.client,
		RequestRefreshToken:      true,
		NewTokenSource:           h.newTokenSource,
	}
	if len(o.Scopes) > 0 {
		cfg.ScopeFilter = h.filterScopes
	}
	dcr := &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
		RedirectURIs: []string{redirect}, ClientName: "voltmcp", ResponseTypes: []string{"code"},
		GrantTypes: []string{"authorization_code", "refresh_token"}, TokenEndpointAuthMethod: o.TokenEndpointAuthMethod,
	}}
	switch {
	case o.ClientID != "":
		// The SDK holds the binding too, when Issuer names it.
		creds := &oauthex.ClientCredentials{ClientID: o.ClientID, Issuer: o.Issuer}
		if o.ClientSecret != "" && o.TokenEndpointAuthMethod != "none" {
			creds.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: o.ClientSecret}
		}
		cfg.PreregisteredClient = creds
	case o.ClientMetadataURL != "":
		cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: o.ClientMetadataURL}
		cfg.DynamicClientRegistrationConfig = dcr
	default:
		cfg.DynamicClientRegistrationConfig = dcr
	}
	if ts := state.source(endpoint); ts != nil {
		cfg.InitialTokenSource = ts
	} else if ts := store.Load(endpoint, h.client, o.ClientID, o.ClientSecret, h.guard.Policy()); ts != nil {
		state.setSource(endpoint, ts)
		cfg.InitialTokenSource = ts
	}
	sdk, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	h.sdk = sdk
	return h, nil
}

// loopbackRedirect returns http://127.0.0.1:<port>/callback with a port
// that is free now, for a surface to listen on during the authorization
// (RFC 8252 loopback redirect).
func loopbackRedirect() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("auth: pick a loopback port for the redirect: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	return "http://127.0.0.1:" + strconv.Itoa(port) + "/callback", nil
}

// TokenSource returns the token source in use, nil before any token:
// the one of the last authorization (either flow's), else the stored
// one the handler started with.
func (h *Handler) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	h.mu.Lock()
	ts := h.ts
	h.mu.Unlock()
	if ts != nil {
		return ts, nil
	}
	return h.sdk.TokenSource(ctx)
}

// Authorize runs when a request is answered 401, or 403: it gets a user's
// authorization through [Options.Authorize] or, in the device flow,
// [Options.DeviceAuthorize] ([Options.Flow]), or, without one, reports
// that an authorization is required. Either way it never blocks beyond
// the auth timeout. It reports what happens through [Options.Hooks].
func (h *Handler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	hooks := &h.opts.Hooks
	challenges, perr := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	stepUp := resp.StatusCode == http.StatusForbidden
	if stepUp && perr == nil && bearerParam(challenges, "error") != "insufficient_scope" {
		// Not a scope problem: the SDK lets the request fail as answered.
		return h.sdk.Authorize(ctx, req, resp)
	}
	gen := h.state.generation()
	release, err := h.state.acquire(ctx)
	if err != nil {
		transport.Discard(resp)
		return err
	}
	defer release()
	if h.state.generation() != gen {
		// Another request got a token while this one waited: retry with it.
		transport.Discard(resp)
		return nil
	}
	connecting := hooks.Connecting != nil && hooks.Connecting()
	if hooks.Request != nil {
		hooks.Request()
	}
	if err := h.store.Check(); err != nil {
		// The token could not be kept: say so before the user is asked.
		transport.Discard(resp)
		err = h.scrub.Err(fmt.Errorf("authorization failed: %w", err))
		h.failed(connecting, err, Failed)
		return err
	}
	var why string
	switch {
	case !h.canAsk():
		why = "nothing in this session can ask the user to log in"
	case !h.useDevice() && h.opts.CanAuthorize != nil:
		if err := h.opts.CanAuthorize(ctx); err != nil {
			why = h.scrub.Err(err).Error()
		}
	}
	if why != "" {
		transport.Discard(resp)
		err := fmt.Errorf("authorization required for server %s: log in with `voltmcp auth %s`, then call again (%s)", h.server, h.server, why)
		h.failed(connecting, err, Required)
		return err
	}
	if connecting && hooks.Authenticating != nil {
		hooks.Authenticating()
	}
	// The user may take longer than the connect timeout: the auth timeout
	// bounds the authorization, and the connect timeout starts again
	// after it.
	if t, d := connectTimerFrom(ctx); t != nil && t.Stop() {
		defer t.Reset(d)
	}
	actx, cancel := context.WithTimeout(ctx, h.authTimeout)
	defer cancel()
	h.guard.Reset()
	defer h.guard.Reset()
	if err := h.checkChallenge(challenges, perr); err != nil {
		transport.Discard(resp)
		err = h.scrub.Err(fmt.Errorf("authorization failed: %w", err))
		h.failed(connecting, err, Failed)
		return err
	}
	if h.resourceMeta != "" {
		// The configured metadata URL comes first; the SDK takes the first.
		key := http.CanonicalHeaderKey("WWW-Authenticate")
		resp.Header[key] = append([]string{fmt.Sprintf("Bearer resource_metadata=%q", h.resourceMeta)}, resp.Header[key]...)
	}
	h.stepUp = stepUp
	err = h.authorize(actx, req, resp, challenges)
	h.stepUp = false
	if err != nil {
		if r := h.guard.Refusal(); r != nil {
			// What the guard refused, named by field; the SDK's error
			// would quote the URL, or lose the reason.
			err = r
		}
		if errors.Is(actx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			if n := h.opts.AuthTimeoutName; n != "" {
				err = fmt.Errorf("no authorization after %s (%s): %w", h.authTimeout, n, err)
			} else {
				err = fmt.Errorf("no authorization after %s: %w", h.authTimeout, err)
			}
		}
		err = h.scrub.Err(fmt.Errorf("authorization failed: %w", err))
		h.failed(connecting, err, Failed)
		return err
	}
	h.state.authorized()
	if hooks.Update != nil {
		hooks.Update(Authorized, nil)
	}
	if connecting && hooks.Authorized != nil {
		hooks.Authorized()
	}
	return nil
}

// checkChallenge refuses, before any request, a challenge the SDK would
// follow to a URL the guard's policy refuses: its resource_metadata (the
// first, which the SDK takes, unless a resource metadata URL is
// configured), or a header it cannot parse (the SDK's error would quote
// it).
func (h *Handler) checkChallenge(challenges []oauthex.Challenge, parseErr error) error {
	if parseErr != nil {
		return h.guard.Refuse(errors.New("the WWW-Authenticate header of its answer is malformed"))
	}
	if h.resourceMeta != "" {
		return nil
	}
	for _, c := range challenges {
		if u := c.Params["resource_metadata"]; u != "" {
			if err := h.guard.Policy().CheckURL("resource_metadata (of WWW-Authenticate)", u); err != nil {
				return h.guard.Refuse(err)
			}
			return nil
		}
	}
	return nil
}

// failed reports a failed or impossible authorization. While connecting,
// the server needs authorization with the reason as its last error, and
// the connection attempt takes that reason ([State.TakeFailure]).
func (h *Handler) failed(connecting bool, err error, status string) {
	hooks := &h.opts.Hooks
	h.log.Info("oauth authorization", "status", status, "err", err)
	if hooks.Update != nil {
		hooks.Update(status, err)
	}
	if !connecting {
		return
	}
	if hooks.NeedsAuth != nil {
		hooks.NeedsAuth(err)
	}
	h.state.setFailure(fmt.Errorf("server %s: %w", h.server, err))
}

// fetchCode asks the user, through Options.Authorize, to authorize at
// authURL, and reads the code, state and issuer the authorization server
// redirected back with.
func (h *Handler) fetchCode(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	// The user is sent there: it passes the checks of every URL a server
	// names (the guard checked it in the metadata; the SDK's fallback
	// derives it from the authorization server's URL).
	au, err := url.Parse(args.URL)
	if err != nil {
		return nil, h.guard.Refuse(errors.New("authorization_endpoint is not a URL"))
	}
	au.RawQuery = ""
	if err := h.guard.Policy().CheckURL("authorization_endpoint", au.String()); err != nil {
		return nil, h.guard.Refuse(err)
	}
	callback, err := h.opts.Authorize(ctx, h.server, args.URL)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(callback)
	if err != nil {
		return nil, errors.New("the authorization returned an unreadable redirect")
	}
	q := u.Query()
	if e := q.Get("error"); e != "" {
		// error and error_description come from the server: bounded text.
		desc := q.Get("error_description")
		if len(desc) > 200 {
			desc = desc[:200]
		}
		return nil, fmt.Errorf("the authorization was refused: %s %s", e, strings.ToValidUTF8(desc, "?"))
	}
	code := q.Get("code")
	if code == "" {
		return nil, errors.New("the authorization returned no code")
	}
	h.scrub.Add(code)
	return &auth.AuthorizationResult{Code: code, State: q.Get("state"), Iss: q.Get("iss")}, nil
}

// filterScopes requests the configured scopes instead of those the server
// advertises; a step-up (403 insufficient_scope) adds what the server
// asks for.
func (h *Handler) filterScopes(discovered []string) []string {
	out := slices.Clone(h.opts.Scopes)
	if h.stepUp {
		for _, sc := range discovered {
			if !slices.Contains(out, sc) {
				out = append(out, sc)
			}
		}
	}
	return out
}

// newTokenSource wraps the token source of a fresh token so that it, and
// every refresh of it, is stored and scrubbed.
func (h *Handler) newTokenSource(ctx context.Context, cfg *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
	h.scrub.Add(cfg.ClientSecret)
	file := File{Format: Format, Server: h.server, URL: redact.URL(h.endpoint), URLHash: URLHash(h.endpoint),
		ClientID: cfg.ClientID, Issuer: h.guard.AuthServer(), TokenURL: cfg.Endpoint.TokenURL, AuthStyle: int(cfg.Endpoint.AuthStyle),
		Scopes: cfg.Scopes}
	if cfg.ClientSecret != "" && cfg.ClientSecret != h.opts.ClientSecret {
		// Issued at registration, needed to refresh; the configured one
		// stays in the config (or the environment), never in the store.
		file.ClientSecret = cfg.ClientSecret
	}
	ts := h.store.NewTokenSource(ctx, cfg, tok, file)
	h.state.setSource(h.endpoint, ts)
	h.mu.Lock()
	h.ts = ts
	h.mu.Unlock()
	return ts, nil
}

// bearerParam returns a parameter of the first Bearer challenge that has it.
func bearerParam(cs []oauthex.Challenge, name string) string {
	for _, c := range cs {
		if c.Scheme == "bearer" && c.Params[name] != "" {
			return c.Params[name]
		}
	}
	return ""
}
