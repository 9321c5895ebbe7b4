package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/engine/internal/oauthguard"
	"github.com/voltmcp/voltmcp/engine/internal/transport"
	"github.com/voltmcp/voltmcp/safefile"
)

// OAuth for HTTP servers with auth type "oauth". The SDK's authorization
// code handler does the protocol (protected resource and authorization
// server metadata, client registration, PKCE, the token exchange and
// refresh); this file adapts it to the supervisor: statuses, events,
// scrubbing, the user's authorization through Options.Authorize, and the
// token store.

const (
	tokenFormat        = 1
	maxTokenFile       = 1 << 20
	defaultAuthTimeout = 5 * time.Minute // the default of the authTimeoutMs setting
)

// Values of Event.AuthStatus on mcp_auth_update.
const (
	authAuthorized = "authorized" // a token was obtained
	authFailed     = "failed"     // the authorization failed; Error says why
	authRequired   = "required"   // the engine has no Options.Authorize to ask with
)

// oauthState is what a supervisor keeps of OAuth across its connections:
// the token source in use, so a reconnect reuses it without reading the
// store, and one authorization at a time.
type oauthState struct {
	mu       sync.Mutex
	sem      chan struct{} // held while an authorization runs
	ts       *storedTokenSource
	endpoint string // the URL ts was issued for
	gen      uint64 // bumps at each successful authorization
	failure  error  // why an authorization failed while connecting; connect takes it
}

func (o *oauthState) init() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.sem == nil {
		o.sem = make(chan struct{}, 1)
	}
}

// acquire waits for the right to run an authorization.
func (o *oauthState) acquire(ctx context.Context) (release func(), err error) {
	o.init()
	select {
	case o.sem <- struct{}{}:
		return func() { <-o.sem }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (o *oauthState) generation() uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.gen
}

// takeAuthFailure returns, and forgets, why an authorization failed while
// the server was connecting. The status is then needs_auth, and lastError
// says why.
func (s *supervisor) takeAuthFailure() error {
	s.oauth.mu.Lock()
	defer s.oauth.mu.Unlock()
	err := s.oauth.failure
	s.oauth.failure = nil
	return err
}

// oauthHandler is the auth.OAuthHandler of one connection attempt to an
// OAuth server. Each attempt gets a fresh one, with a fresh loopback
// redirect port; the token source carries over through oauthState.
type oauthHandler struct {
	s            *supervisor
	sdk          *auth.AuthorizationCodeHandler
	client       *http.Client // through guard
	guard        *oauthguard.Guard
	endpoint     string
	resourceMeta string   // auth.resourceMetadataUrl, expanded
	scopes       []string // auth.scope, split
	authTimeout  time.Duration
	stepUp       bool // set while a step-up authorization runs (one at a time)
}

var _ auth.OAuthHandler = (*oauthHandler)(nil)

// newOAuthHandler builds the handler for a connection to endpoint from
// the server's auth config: a pre-registered client when clientId is
// set; else a client ID metadata document when clientMetadataUrl is set,
// with dynamic registration as the fallback for an authorization server
// that does not support those documents; else dynamic registration.
func (s *supervisor) newOAuthHandler(endpoint string) (*oauthHandler, error) {
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
	clientID, err := expand("clientId", a.ClientID, false)
	if err != nil {
		return nil, err
	}
	secret, err := expand("clientSecret", a.ClientSecret, true)
	if err != nil {
		return nil, err
	}
	metaURL, err := expand("clientMetadataUrl", a.ClientMetadataURL, false)
	if err != nil {
		return nil, err
	}
	resourceMeta, err := expand("resourceMetadataUrl", a.ResourceMetadataURL, false)
	if err != nil {
		return nil, err
	}
	scope, err := expand("scope", a.Scope, false)
	if err != nil {
		return nil, err
	}
	issuer, err := expand("issuer", a.Issuer, false)
	if err != nil {
		return nil, err
	}
	redirect, err := loopbackRedirect()
	if err != nil {
		return nil, err
	}
	timeout := defaultAuthTimeout
	if n := s.e.Config().Settings.AuthTimeoutMs; n > 0 {
		timeout = ms(n)
	}
	// A pre-registered client is bound to the authorization server that
	// issued it (auth.issuer, or one at the url's origin): the guard
	// refuses discovery that leads anywhere else before the client's
	// credentials could be sent.
	policy := oauthguard.Policy{AllowLoopback: a.AllowInsecureLoopback, Bound: clientID != "", Issuer: issuer}
	for i, own := range []string{endpoint, resourceMeta} {
		if u, err := url.Parse(own); err == nil && own != "" {
			if o, ok := transport.OriginOf(u); ok {
				policy.Own = append(policy.Own, o)
				if i == 0 {
					policy.Home = o
				}
			}
		}
	}
	guard := oauthguard.New(s.cfg.ID, policy, redirect, s.e.httpBase)
	h := &oauthHandler{s: s, client: transport.HTTPClient(guard), guard: guard, endpoint: endpoint, resourceMeta: resourceMeta,
		scopes: strings.Fields(scope), authTimeout: timeout}
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:              redirect,
		AuthorizationCodeFetcher: h.fetchCode,
		Client:                   h.client,
		RequestRefreshToken:      true,
		NewTokenSource:           h.newTokenSource,
	}
	if len(h.scopes) > 0 {
		cfg.ScopeFilter = h.filterScopes
	}
	dcr := &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
		RedirectURIs: []string{redirect}, ClientName: "voltmcp", ResponseTypes: []string{"code"},
		GrantTypes: []string{"authorization_code", "refresh_token"}, TokenEndpointAuthMethod: a.TokenEndpointAuthMethod,
	}}
	switch {
	case clientID != "":
		// The SDK holds the binding too, when auth.issuer names it.
		creds := &oauthex.ClientCredentials{ClientID: clientID, Issuer: issuer}
		if secret != "" && a.TokenEndpointAuthMethod != "none" {
			creds.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: secret}
		}
		cfg.PreregisteredClient = creds
	case metaURL != "":
		cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: metaURL}
		cfg.DynamicClientRegistrationConfig = dcr
	default:
		cfg.DynamicClientRegistrationConfig = dcr
	}
	s.oauth.mu.Lock()
	s.oauth.failure = nil
	if s.oauth.ts != nil && s.oauth.endpoint == endpoint && !s.oauth.ts.isDead() {
		cfg.InitialTokenSource = s.oauth.ts
	}
	s.oauth.mu.Unlock()
	if cfg.InitialTokenSource == nil {
		if ts := s.loadToken(endpoint, h.client, clientID, secret, guard.Policy()); ts != nil {
			s.oauth.mu.Lock()
			s.oauth.ts, s.oauth.endpoint = ts, endpoint
			s.oauth.mu.Unlock()
			cfg.InitialTokenSource = ts
		}
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

// TokenSource returns the token source in use, nil before any token.
func (h *oauthHandler) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	return h.sdk.TokenSource(ctx)
}

// Authorize runs when a request is answered 401, or 403: it gets a user's
// authorization through Options.Authorize, or, without one, records that
// an authorization is required. Either way it never blocks beyond
// authTimeoutMs. While the server is connecting, the status goes
// needs_auth → authenticating → connecting (or back to needs_auth when
// the authorization fails); an authorization on a live session (a
// step-up) shows only as events.
func (h *oauthHandler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	s := h.s
	challenges, perr := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	stepUp := resp.StatusCode == http.StatusForbidden
	if stepUp && perr == nil && bearerParam(challenges, "error") != "insufficient_scope" {
		// Not a scope problem: the SDK lets the request fail as answered.
		return h.sdk.Authorize(ctx, req, resp)
	}
	gen := s.oauth.generation()
	release, err := s.oauth.acquire(ctx)
	if err != nil {
		transport.Discard(resp)
		return err
	}
	defer release()
	if s.oauth.generation() != gen {
		// Another request got a token while this one waited: retry with it.
		transport.Discard(resp)
		return nil
	}
	connecting := s.getStatus() == StatusConnecting
	s.e.bus.publish(Event{Type: EventAuthRequest, Server: s.cfg.ID})
	if s.e.opts.Authorize == nil {
		transport.Discard(resp)
		err := fmt.Errorf("authorization required: run the OAuth authorization for server %s from a surface that can ask the user "+
			"(this engine has no Options.Authorize)", s.cfg.ID)
		h.failed(connecting, err, authRequired)
		return err
	}
	if connecting {
		s.setStatus(StatusNeedsAuth, "")
		s.setStatus(StatusAuthenticating, "")
	}
	// The user may take longer than connectTimeoutMs: authTimeoutMs bounds
	// the authorization, and the connect timeout starts again after it.
	if t, d := connectTimerFrom(ctx); t != nil && t.Stop() {
		defer t.Reset(d)
	}
	actx, cancel := context.WithTimeout(ctx, h.authTimeout)
	defer cancel()
	h.guard.Reset()
	defer h.guard.Reset()
	if err := h.checkChallenge(challenges, perr); err != nil {
		transport.Discard(resp)
		err = s.scrub.Err(fmt.Errorf("authorization failed: %w", err))
		h.failed(connecting, err, authFailed)
		return err
	}
	if h.resourceMeta != "" {
		// The configured metadata URL comes first; the SDK takes the first.
		key := http.CanonicalHeaderKey("WWW-Authenticate")
		resp.Header[key] = append([]string{fmt.Sprintf("Bearer resource_metadata=%q", h.resourceMeta)}, resp.Header[key]...)
	}
	h.stepUp = stepUp
	err = h.sdk.Authorize(actx, req, resp)
	h.stepUp = false
	if err != nil {
		if r := h.guard.Refusal(); r != nil {
			// What the guard refused, named by field; the SDK's error
			// would quote the URL, or lose the reason.
			err = r
		}
		if errors.Is(actx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			err = fmt.Errorf("no authorization after %s (authTimeoutMs): %w", h.authTimeout, err)
		}
		err = s.scrub.Err(fmt.Errorf("authorization failed: %w", err))
		h.failed(connecting, err, authFailed)
		return err
	}
	s.oauth.mu.Lock()
	s.oauth.gen++
	s.oauth.mu.Unlock()
	s.e.bus.publish(Event{Type: EventAuthUpdate, Server: s.cfg.ID, AuthStatus: authAuthorized})
	if connecting {
		s.setStatus(StatusConnecting, "")
	}
	return nil
}

// checkChallenge refuses, before any request, a challenge the SDK would
// follow to a URL the guard's policy refuses: its resource_metadata (the
// first, which the SDK takes, unless resourceMetadataUrl is configured),
// or a header it cannot parse (the SDK's error would quote it).
func (h *oauthHandler) checkChallenge(challenges []oauthex.Challenge, parseErr error) error {
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
// the server goes to needs_auth with the reason as its last error, and
// connect returns that reason.
func (h *oauthHandler) failed(connecting bool, err error, status string) {
	s := h.s
	s.log.Info("oauth authorization", "status", status, "err", err)
	s.e.bus.publish(Event{Type: EventAuthUpdate, Server: s.cfg.ID, AuthStatus: status, Error: err.Error()})
	if !connecting {
		return
	}
	s.mu.Lock()
	s.lastErr = err.Error()
	s.mu.Unlock()
	s.setStatus(StatusNeedsAuth, "")
	s.oauth.mu.Lock()
	s.oauth.failure = fmt.Errorf("server %s: %w", s.cfg.ID, err)
	s.oauth.mu.Unlock()
}

// fetchCode asks the user, through Options.Authorize, to authorize at
// authURL, and reads the code, state and issuer the authorization server
// redirected back with.
func (h *oauthHandler) fetchCode(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
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
	callback, err := h.s.e.opts.Authorize(ctx, h.s.cfg.ID, args.URL)
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
	h.s.scrub.Add(code)
	return &auth.AuthorizationResult{Code: code, State: q.Get("state"), Iss: q.Get("iss")}, nil
}

// filterScopes requests the configured scopes instead of those the server
// advertises; a step-up (403 insufficient_scope) adds what the server
// asks for.
func (h *oauthHandler) filterScopes(discovered []string) []string {
	out := slices.Clone(h.scopes)
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
func (h *oauthHandler) newTokenSource(ctx context.Context, cfg *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
	s := h.s
	s.scrub.Add(cfg.ClientSecret)
	file := tokenFile{Format: tokenFormat, Server: s.cfg.ID, URL: cue.RedactURL(h.endpoint), URLHash: urlHash(h.endpoint),
		ClientID: cfg.ClientID, Issuer: h.guard.AuthServer(), TokenURL: cfg.Endpoint.TokenURL, AuthStyle: int(cfg.Endpoint.AuthStyle),
		Scopes: cfg.Scopes}
	if cfg.ClientSecret != "" && !h.configuredSecret(cfg.ClientSecret) {
		file.ClientSecret = cfg.ClientSecret // issued at registration: needed to refresh
	}
	ts := &storedTokenSource{s: s, cfg: cfg, ctx: ctx, file: file, tok: tok, at: time.Now().UTC()}
	s.oauth.mu.Lock()
	s.oauth.ts, s.oauth.endpoint = ts, h.endpoint
	s.oauth.mu.Unlock()
	return ts, nil
}

// configuredSecret reports whether secret is the one the config gives:
// that one stays in the config (or the environment), never in the store.
func (h *oauthHandler) configuredSecret(secret string) bool {
	v, err := cue.ExpandEnv(h.s.cfg.Auth.ClientSecret, h.s.e.lookup)
	return err == nil && v == secret
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

// connectTimerKey carries connect's timeout timer to the OAuth handler,
// which stops it while the user authorizes.
type connectTimerKey struct{}

type connectTimer struct {
	t *time.Timer
	d time.Duration
}

func withConnectTimer(ctx context.Context, t *time.Timer, d time.Duration) context.Context {
	return context.WithValue(ctx, connectTimerKey{}, connectTimer{t, d})
}

func connectTimerFrom(ctx context.Context) (*time.Timer, time.Duration) {
	ct, _ := ctx.Value(connectTimerKey{}).(connectTimer)
	return ct.t, ct.d
}

// tokenFile is a server's stored OAuth token: <agent-dir>/mcp/auth/<id>.json,
// 0600. It is used only for the URL it was issued for.
type tokenFile struct {
	Format int    `json:"format"`
	Server string `json:"server"`
	// URL is the endpoint with its credentials redacted, for people;
	// URLHash is the sha256 of the endpoint as connected to.
	URL     string `json:"url"`
	URLHash string `json:"urlSha256"`
	// The client the token was issued to, for refreshing it. ClientSecret
	// is only one the authorization server issued at registration; a
	// configured secret stays in the config. Issuer is the authorization
	// server the token came from: a pre-registered client uses only a
	// token of its own issuer.
	ClientID     string        `json:"clientId"`
	ClientSecret string        `json:"clientSecret,omitempty"`
	Issuer       string        `json:"issuer,omitempty"`
	TokenURL     string        `json:"tokenUrl"`
	AuthStyle    int           `json:"authStyle"`
	Scopes       []string      `json:"scopes,omitempty"`
	Token        *oauth2.Token `json:"token"`
	SavedAt      time.Time     `json:"savedAt"`
}

func urlHash(u string) string {
	sum := sha256.Sum256([]byte(u))
	return hex.EncodeToString(sum[:])
}

func (s *supervisor) tokenPath() string {
	return filepath.Join(s.e.opts.AgentDir, "mcp", "auth", s.cfg.ID+".json")
}

// readTokenFile reads the token file at path: nil when there is none
// usable (no file, a file others can read, an unreadable or corrupt one,
// one of another format or server), with a warning for those that are
// there but not usable.
func (s *supervisor) readTokenFile(path string) *tokenFile {
	data, err := safefile.ReadFile(path, &safefile.ReadOptions{MaxSize: maxTokenFile, Private: true})
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case errors.Is(err, safefile.ErrNotPrivate):
		s.log.Warn("oauth token store: ignoring a token file that others can read", "file", path)
		return nil
	case err != nil:
		s.log.Warn("oauth token store: unreadable token file ignored", "file", path)
		return nil
	}
	var tf tokenFile
	if err := json.Unmarshal(data, &tf); err != nil {
		s.log.Warn("oauth token store: corrupt token file ignored", "file", path)
		return nil
	}
	if tf.Format != tokenFormat || tf.Server != s.cfg.ID || tf.Token == nil || tf.Token.AccessToken == "" {
		return nil
	}
	return &tf
}

// loadToken reads the stored token for endpoint. It returns nil when
// there is none usable: no file, another URL, a file others can read, an
// expired token that cannot be refreshed, a token of the pre-registered
// client from an authorization server policy does not send it to (its
// refresh would carry the client's credentials there).
func (s *supervisor) loadToken(endpoint string, client *http.Client, clientID, secret string, policy *oauthguard.Policy) *storedTokenSource {
	tf := s.readTokenFile(s.tokenPath())
	switch {
	case tf == nil:
		return nil
	case tf.URLHash != urlHash(endpoint):
		s.log.Info("oauth token store: the stored token is for another URL; not used")
		return nil
	case !tf.Token.Valid() && tf.Token.RefreshToken == "":
		return nil // expired, and nothing to refresh it with
	case policy.Bound && tf.ClientID == clientID && (tf.Issuer == "" || policy.CheckIssuer("issuer", tf.Issuer) != nil):
		s.log.Info("oauth token store: the stored token is from another authorization server than the configured client's; not used")
		return nil
	}
	if tf.ClientSecret == "" && tf.ClientID == clientID {
		tf.ClientSecret = secret
	}
	s.scrub.Add(tf.Token.AccessToken, tf.Token.RefreshToken, tf.ClientSecret)
	cfg := &oauth2.Config{ClientID: tf.ClientID, ClientSecret: tf.ClientSecret, Scopes: tf.Scopes,
		Endpoint: oauth2.Endpoint{TokenURL: tf.TokenURL, AuthStyle: oauth2.AuthStyle(tf.AuthStyle)}}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, client)
	file := *tf
	file.Token = nil
	if file.ClientSecret == secret {
		file.ClientSecret = ""
	}
	return &storedTokenSource{s: s, cfg: cfg, ctx: ctx, file: file, tok: tf.Token, last: tf.Token.AccessToken, at: tf.SavedAt}
}

// storedTokenSource hands out a server's token, refreshing it when it
// expires, and stores every new one. After a failed refresh it answers
// invalid_grant, which the SDK's transport takes as "no token": the
// request goes without one, and the server's 401 starts a new
// authorization rather than every request failing.
//
// A refresh is serialized with every other process that shares the agent
// dir: it holds the token file's lock (safefile.Lock), reads the file
// again inside it, and when another gateway has already refreshed (the
// file holds a token other than the one this source has), takes that
// token rather than presenting a refresh token that was already used,
// which an authorization server that rotates refresh tokens answers by
// revoking the whole grant.
type storedTokenSource struct {
	s    *supervisor
	cfg  *oauth2.Config
	ctx  context.Context // carries the HTTP client of refreshes
	file tokenFile       // what is stored beside the token

	mu   sync.Mutex
	tok  *oauth2.Token // the token in use
	at   time.Time     // when tok was obtained or stored
	last string        // the access token last stored
	dead bool
}

func (t *storedTokenSource) isDead() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.dead
}

// errNeedsGrant is what a storedTokenSource answers once it cannot
// refresh.
var errNeedsGrant = &oauth2.RetrieveError{ErrorCode: "invalid_grant", ErrorDescription: "the token could not be refreshed"}

// tokenLockTimeout bounds the wait for another process's refresh.
const tokenLockTimeout = time.Minute

func (t *storedTokenSource) Token() (*oauth2.Token, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.dead {
		return nil, errNeedsGrant
	}
	if t.tok.Valid() && t.tok.AccessToken == t.last {
		return t.tok, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), tokenLockTimeout)
	defer cancel()
	path := t.s.tokenPath()
	unlock, err := safefile.Lock(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("oauth token store: %w", err)
	}
	defer unlock()
	if !t.tok.Valid() {
		// Another gateway may have refreshed while this one waited: its
		// token, newer and for the same URL and client, replaces this one.
		if tf := t.s.readTokenFile(path); tf != nil && tf.SavedAt.After(t.at) && tf.URLHash == t.file.URLHash &&
			tf.ClientID == t.file.ClientID && tf.TokenURL == t.file.TokenURL && tf.Token.AccessToken != t.tok.AccessToken {
			t.s.scrub.Add(tf.Token.AccessToken, tf.Token.RefreshToken)
			t.tok, t.last, t.at = tf.Token, tf.Token.AccessToken, tf.SavedAt
		}
	}
	if t.tok.Valid() && t.tok.AccessToken == t.last {
		return t.tok, nil
	}
	tok := t.tok
	if !tok.Valid() {
		if tok, err = t.cfg.TokenSource(t.ctx, tok).Token(); err != nil {
			t.dead = true
			t.s.log.Warn("oauth token refresh failed; the server will need a new authorization", "err", t.s.scrub.Err(err))
			return nil, errNeedsGrant
		}
		t.s.scrub.Add(tok.AccessToken, tok.RefreshToken)
	}
	f := t.file
	f.Token, f.SavedAt = tok, time.Now().UTC()
	t.tok, t.last, t.at = tok, tok.AccessToken, f.SavedAt
	if err := t.s.saveToken(&f); err != nil {
		t.s.log.Warn("oauth token store", "err", t.s.scrub.Err(err))
	}
	return tok, nil
}

// saveToken writes a token file atomically, 0600. The caller holds the
// file's lock.
func (s *supervisor) saveToken(f *tokenFile) error {
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("oauth token store: %w", err)
	}
	if err := safefile.WriteFile(s.tokenPath(), data, nil); err != nil {
		return fmt.Errorf("oauth token store: %w", err)
	}
	return nil
}
