// Package oauthtest is an OAuth 2.1 authorization server and an MCP
// server that accepts only its tokens, both on 127.0.0.1 over plain http
// (so a client needs the server's auth.allowInsecureLoopback), for tests
// of the OAuth client end to end. It is a test-only helper package:
// library and CLI code never import it.
//
// The authorization server serves its metadata (RFC 8414), dynamic
// client registration (RFC 7591), client ID metadata documents (as
// client ids only: it does not fetch them), an authorization endpoint
// that approves at once (redirecting to the client's redirect_uri with a
// code, as if the user had approved; a test follows the redirect itself
// with an http.Client), a token endpoint that checks PKCE S256 and the
// client, and rotates refresh tokens (one presented twice revokes the
// grant, RFC 9700 §4.14.2), and a revocation endpoint (RFC 7009). With
// [Options].Device it also offers the device authorization grant (RFC
// 8628): a device authorization endpoint, a verification page at
// /device where a test approves or denies a user code as a user would
// ([Server.ApproveDevice], [Server.DenyDevice]), and the device_code
// grant at the token endpoint, with knobs for authorization_pending,
// slow_down and expired_token; the polls it sees are recorded
// ([Server.DevicePolls]). The MCP
// server serves its protected resource metadata (RFC 9728) and one tool,
// echo, to a bearer of a valid access token, over Streamable HTTP or,
// with [Options.SSE], the legacy SSE transport (both its stream and the
// POSTs to its endpoint need the token).
//
// Every token and code it issues is remembered, so that a test can check
// that none reaches an output ([Server.Leaked]).
package oauthtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/internal/testwait"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Options shape a [Server]. The zero value is an authorization server
// with dynamic registration, S256 and revocation, whose access tokens
// live an hour.
type Options struct {
	// TTL is how long an access token lives, and the expires_in the
	// token endpoint answers. Zero: an hour. [Server.SetTTL] changes it
	// for the tokens issued after.
	TTL time.Duration
	// SSE serves the MCP server over the legacy SSE transport of
	// 2024-11-05 (a GET of MCPURL opens the stream, whose endpoint event
	// names where to POST) rather than Streamable HTTP.
	SSE bool
	// ClientID and ClientSecret are a pre-registered client; an empty
	// ClientSecret makes it a public one.
	ClientID, ClientSecret string
	// NoRegistration leaves dynamic registration out of the metadata.
	NoRegistration bool
	// ClientMetadataDocuments advertises client ID metadata documents:
	// a client_id that is an https URL is accepted as such.
	ClientMetadataDocuments bool
	// ChallengeMethods are the PKCE methods advertised. Nil: S256.
	ChallengeMethods []string
	// NoRevocation leaves the revocation endpoint out of the metadata.
	NoRevocation bool
	// Scopes are the protected resource's scopes_supported.
	Scopes []string
	// HidePRM hides the protected resource metadata: the MCP server's
	// 401 does not say where it is, and it is not at a well-known URL
	// but at PRMURL, /meta/prm, which only a client configured with
	// resourceMetadataUrl finds.
	HidePRM bool
	// AuthorizationEndpoint replaces the authorization endpoint the
	// metadata names (one a client must refuse, say).
	AuthorizationEndpoint string

	// Device offers the device authorization grant (RFC 8628): the
	// metadata names a device_authorization_endpoint, and the token
	// endpoint takes the device_code grant.
	Device bool
	// DeviceInterval is the interval, in seconds, a device authorization
	// answers. Zero leaves it out (a client then waits 5 s).
	DeviceInterval int
	// DevicePending is how many polls of a device code are answered
	// authorization_pending even after the user approved it.
	DevicePending int
	// DeviceSlowDownAt is the poll of each device code (1 for the
	// first) answered slow_down, once; zero: none.
	DeviceSlowDownAt int
	// DeviceExpiresIn is the expires_in, in seconds, a device
	// authorization answers. Zero: 600.
	DeviceExpiresIn int
	// VerificationURI is the verification_uri a device authorization
	// answers; empty: https://verify.example/device (which no test
	// visits: the page is /device on the authorization server).
	VerificationURI string
	// VerificationURIComplete answers a verification_uri_complete too:
	// the VerificationURI with ?user_code=CODE.
	VerificationURIComplete bool
}

// DeviceRequest is what a client sent to the device authorization
// endpoint.
type DeviceRequest struct {
	ClientID, Scope, Resource string
}

// deviceGrant is a device code's state.
type deviceGrant struct {
	grant
	userCode         string
	approved, denied bool
	polls            int // device_code grant requests so far
	pending          int // authorization_pending answers left after approval
}

// AuthRequest is what a client sent to the authorization endpoint.
type AuthRequest struct {
	ClientID, RedirectURI, Scope, Resource, State, ChallengeMethod string
}

// Server is the pair of servers. Make one with [New].
type Server struct {
	// MCPURL is the MCP endpoint; Issuer the authorization server's
	// URL, its issuer identifier; PRMURL the protected resource
	// metadata.
	MCPURL, Issuer, PRMURL string

	// Authorizes, Exchanges, Refreshes and Revocations count the
	// requests to the authorization endpoint, the authorization_code
	// and refresh_token grants, and the tokens revoked at the
	// revocation endpoint; DeviceGrants the device_code grants that
	// issued a token. Reuses counts the refresh tokens presented again
	// after they were rotated (each revokes the grant).
	Authorizes, Exchanges, Refreshes, Revocations, DeviceGrants, Reuses atomic.Int32

	opts   Options
	as     *httptest.Server
	ttl    atomic.Int64 // time.Duration
	deny   atomic.Bool
	junk   atomic.Bool
	mu     sync.Mutex
	codes  map[string]grant     // code → its grant, until exchanged
	valid  map[string]time.Time // access token → expiry
	fresh  map[string]grant     // refresh token → its grant
	used   map[string]bool      // refresh tokens presented once (they rotate)
	dcr    map[string][]string  // registered client → redirect URIs
	reqs   []AuthRequest
	issued []string // every token and code issued

	devices  map[string]*deviceGrant // device code → its state, until it issued a token
	devReqs  []DeviceRequest
	devPolls []time.Time // when each device_code grant request came
	expired  bool        // every device code answers expired_token
}

type grant struct {
	client, challenge, redirect, scope string
}

// New starts the servers; they stop when the test ends.
func New(tb testing.TB, opts *Options) *Server {
	tb.Helper()
	s := &Server{codes: map[string]grant{}, valid: map[string]time.Time{}, fresh: map[string]grant{}, used: map[string]bool{}, dcr: map[string][]string{},
		devices: map[string]*deviceGrant{}}
	if opts != nil {
		s.opts = *opts
	}
	s.SetTTL(s.opts.TTL)
	as, asURL := serveLoopback(tb)
	rs, rsURL := serveLoopback(tb)
	s.as, s.Issuer = as, asURL
	s.MCPURL = rsURL + "/mcp"
	s.PRMURL = rsURL + "/.well-known/oauth-protected-resource/mcp"
	challengeURL := s.PRMURL
	if s.opts.HidePRM {
		s.PRMURL, challengeURL = rsURL+"/meta/prm", ""
	}

	asMux := http.NewServeMux()
	asMux.HandleFunc("GET /.well-known/oauth-authorization-server", s.metadata)
	asMux.HandleFunc("POST /register", s.register)
	asMux.HandleFunc("GET /authorize", s.authorize)
	asMux.HandleFunc("POST /token", s.token)
	asMux.HandleFunc("POST /revoke", s.revoke)
	asMux.HandleFunc("POST /device_authorization", s.deviceAuthorization)
	asMux.HandleFunc("POST /device", s.verify)
	as.Config.Handler = asMux

	server := mcp.NewServer(&mcp.Implementation{Name: "oauthtest", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "echo", Description: "Echo the text back."}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	tb.Cleanup(func() {
		for ss := range server.Sessions() {
			_ = ss.Close()
		}
	})
	verify := func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		exp, ok := s.valid[tok]
		if !ok || time.Now().After(exp) {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Expiration: exp}, nil
	}
	rsMux := http.NewServeMux()
	rsMux.Handle(strings.TrimPrefix(s.PRMURL, rsURL), auth.ProtectedResourceMetadataHandler(
		&oauthex.ProtectedResourceMetadata{Resource: s.MCPURL, AuthorizationServers: []string{asURL}, ScopesSupported: s.opts.Scopes}))
	var mcpHandler http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	if s.opts.SSE {
		mcpHandler = mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return server }, nil)
	}
	rsMux.Handle("/mcp", auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: challengeURL})(mcpHandler))
	rs.Config.Handler = rsMux
	as.Start()
	rs.Start()
	return s
}

// serveLoopback returns an unstarted server on 127.0.0.1, which the test
// closes with its connections when it ends, and its URL.
func serveLoopback(tb testing.TB) (*httptest.Server, string) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	ts := &httptest.Server{Listener: ln, Config: &http.Server{}}
	tb.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
	})
	return ts, "http://" + ln.Addr().String()
}

// SetTTL sets how long the access tokens issued from now on live (and
// the expires_in answered); zero or less means an hour.
func (s *Server) SetTTL(d time.Duration) {
	if d <= 0 {
		d = time.Hour
	}
	s.ttl.Store(int64(d))
}

// StopAuthServer stops the authorization server (the MCP server stays):
// an authorization server that goes away mid-flow.
func (s *Server) StopAuthServer() {
	s.as.CloseClientConnections()
	s.as.Close()
}

// Deny makes the authorization endpoint redirect with
// error=access_denied, as if the user had refused.
func (s *Server) Deny(on bool) { s.deny.Store(on) }

// Garbage makes the token endpoint answer 200 with a body that is not
// JSON.
func (s *Server) Garbage(on bool) { s.junk.Store(on) }

// Requests returns what clients sent to the authorization endpoint.
func (s *Server) Requests() []AuthRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs)
}

// Valid reports whether tok is a live access token.
func (s *Server) Valid(tok string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.valid[tok]
	return ok
}

// Issued returns every token and code issued so far.
func (s *Server) Issued() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.issued)
}

// Leaked returns the first issued token or code that text holds, or "".
func (s *Server) Leaked(text string) string {
	for _, t := range s.Issued() {
		if strings.Contains(text, t) {
			return t
		}
	}
	return ""
}

// WaitExpired waits until the access token stored in a gateway's token
// file (its "token" object, as golang.org/x/oauth2 writes it) has
// expired, so that the gateway refreshes it at its next use whatever its
// refresh margin: the way a test makes a stored token due without
// relying on how long before its expiry the gateway refreshes it.
func WaitExpired(tb testing.TB, tokenFile string) {
	tb.Helper()
	data, err := os.ReadFile(tokenFile)
	if err != nil {
		tb.Fatal(err)
	}
	var f struct {
		Token struct {
			Expiry time.Time `json:"expiry"`
		} `json:"token"`
	}
	if err := json.Unmarshal(data, &f); err != nil || f.Token.Expiry.IsZero() {
		tb.Fatalf("%s holds no token expiry (%v)", tokenFile, err)
	}
	testwait.For(tb, "the stored token to expire", func() bool { return time.Now().After(f.Token.Expiry) })
}

// ForgetGrants revokes every token, as an authorization server that lost
// its state would.
func (s *Server) ForgetGrants() {
	s.mu.Lock()
	clear(s.valid)
	clear(s.fresh)
	s.mu.Unlock()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func oauthError(w http.ResponseWriter, status int, code string) {
	writeJSON(w, status, map[string]string{"error": code})
}

func (s *Server) metadata(w http.ResponseWriter, _ *http.Request) {
	methods := s.opts.ChallengeMethods
	if methods == nil {
		methods = []string{"S256"}
	}
	m := map[string]any{
		"issuer": s.Issuer, "authorization_endpoint": s.Issuer + "/authorize", "token_endpoint": s.Issuer + "/token",
		"response_types_supported": []string{"code"}, "grant_types_supported": []string{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported":      methods,
		"token_endpoint_auth_methods_supported": []string{"none", "client_secret_post", "client_secret_basic"},
	}
	if s.opts.AuthorizationEndpoint != "" {
		m["authorization_endpoint"] = s.opts.AuthorizationEndpoint
	}
	if !s.opts.NoRegistration {
		m["registration_endpoint"] = s.Issuer + "/register"
	}
	if !s.opts.NoRevocation {
		m["revocation_endpoint"] = s.Issuer + "/revoke"
	}
	if s.opts.ClientMetadataDocuments {
		m["client_id_metadata_document_supported"] = true
	}
	if s.opts.Device {
		m["device_authorization_endpoint"] = s.Issuer + "/device_authorization"
		m["grant_types_supported"] = []string{"authorization_code", "refresh_token", deviceGrantType}
	}
	writeJSON(w, http.StatusOK, m)
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	if s.opts.NoRegistration {
		http.NotFound(w, r)
		return
	}
	var meta oauthex.ClientRegistrationMetadata
	if err := json.NewDecoder(r.Body).Decode(&meta); err != nil || len(meta.RedirectURIs) == 0 {
		oauthError(w, http.StatusBadRequest, "invalid_client_metadata")
		return
	}
	s.mu.Lock()
	id := fmt.Sprintf("dcr-%d", len(s.dcr)+1)
	s.dcr[id] = meta.RedirectURIs
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, map[string]any{"client_id": id, "redirect_uris": meta.RedirectURIs, "token_endpoint_auth_method": "none"})
}

// knownClient reports whether the authorization endpoint accepts
// client with redirect.
func (s *Server) knownClient(client, redirect string) bool {
	u, err := url.Parse(redirect)
	loopback := err == nil && u.Scheme == "http" && u.Hostname() == "127.0.0.1" && u.Path == "/callback"
	switch {
	case client == "":
		return false
	case client == s.opts.ClientID:
		return loopback // RFC 8252 §7.3: any port
	case s.opts.ClientMetadataDocuments && strings.HasPrefix(client, "https://"):
		return loopback
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Contains(s.dcr[client], redirect)
}

func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	s.Authorizes.Add(1)
	q := r.URL.Query()
	req := AuthRequest{ClientID: q.Get("client_id"), RedirectURI: q.Get("redirect_uri"), Scope: q.Get("scope"),
		Resource: q.Get("resource"), State: q.Get("state"), ChallengeMethod: q.Get("code_challenge_method")}
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	s.mu.Unlock()
	if !s.knownClient(req.ClientID, req.RedirectURI) {
		http.Error(w, "unknown client or redirect_uri", http.StatusBadRequest)
		return
	}
	back, _ := url.Parse(req.RedirectURI)
	v := back.Query()
	v.Set("state", req.State)
	switch {
	case s.deny.Load():
		v.Set("error", "access_denied")
		v.Set("error_description", "the user refused")
	case q.Get("response_type") != "code" || req.ChallengeMethod != "S256" || q.Get("code_challenge") == "":
		v.Set("error", "invalid_request")
	default:
		code := s.secret("code")
		s.mu.Lock()
		s.codes[code] = grant{client: req.ClientID, challenge: q.Get("code_challenge"), redirect: req.RedirectURI, scope: req.Scope}
		s.mu.Unlock()
		v.Set("code", code)
	}
	back.RawQuery = v.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

// client returns the client a token or revocation request authenticates
// as, and whether its credentials hold.
func (s *Server) client(r *http.Request) (string, bool) {
	id, secret, basic := r.BasicAuth()
	if basic {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if id != "" && id == s.opts.ClientID {
		return id, secret == s.opts.ClientSecret
	}
	return id, secret == ""
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request")
		return
	}
	if s.junk.Load() {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("<html>this is not a token answer</html>"))
		return
	}
	client, ok := s.client(r)
	if !ok {
		oauthError(w, http.StatusUnauthorized, "invalid_client")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var g grant
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		code := r.PostForm.Get("code")
		g, ok = s.codes[code]
		delete(s.codes, code) // one use
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if !ok || g.client != client || g.redirect != r.PostForm.Get("redirect_uri") || base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
			oauthError(w, http.StatusBadRequest, "invalid_grant")
			return
		}
		s.Exchanges.Add(1)
	case "refresh_token":
		rt := r.PostForm.Get("refresh_token")
		if s.used[rt] {
			s.Reuses.Add(1)
			clear(s.valid)
			clear(s.fresh)
		}
		g, ok = s.fresh[rt]
		if !ok || g.client != client {
			oauthError(w, http.StatusBadRequest, "invalid_grant")
			return
		}
		s.used[rt] = true
		delete(s.fresh, rt)
		s.Refreshes.Add(1)
	case deviceGrantType:
		if !s.opts.Device {
			oauthError(w, http.StatusBadRequest, "unsupported_grant_type")
			return
		}
		s.devPolls = append(s.devPolls, time.Now())
		dc := r.PostForm.Get("device_code")
		d, ok := s.devices[dc]
		switch {
		case !ok || d.client != client:
			oauthError(w, http.StatusBadRequest, "invalid_grant")
			return
		case s.expired:
			oauthError(w, http.StatusBadRequest, "expired_token")
			return
		case d.denied:
			delete(s.devices, dc)
			oauthError(w, http.StatusBadRequest, "access_denied")
			return
		}
		d.polls++
		switch {
		case d.polls == s.opts.DeviceSlowDownAt:
			oauthError(w, http.StatusBadRequest, "slow_down")
			return
		case !d.approved:
			oauthError(w, http.StatusBadRequest, "authorization_pending")
			return
		case d.pending > 0:
			d.pending--
			oauthError(w, http.StatusBadRequest, "authorization_pending")
			return
		}
		delete(s.devices, dc) // one use
		g = d.grant
		s.DeviceGrants.Add(1)
	default:
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type")
		return
	}
	access, refresh := s.secretLocked("at"), s.secretLocked("rt")
	ttl := time.Duration(s.ttl.Load())
	s.valid[access] = time.Now().Add(ttl)
	s.fresh[refresh] = g
	answer := map[string]any{"access_token": access, "token_type": "Bearer", "refresh_token": refresh, "expires_in": int(ttl.Seconds())}
	if g.scope != "" {
		answer["scope"] = g.scope
	}
	writeJSON(w, http.StatusOK, answer)
}

func (s *Server) revoke(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request")
		return
	}
	if _, ok := s.client(r); !ok {
		oauthError(w, http.StatusUnauthorized, "invalid_client")
		return
	}
	tok := r.PostForm.Get("token")
	s.mu.Lock()
	_, live := s.valid[tok]
	_, fresh := s.fresh[tok]
	delete(s.valid, tok)
	delete(s.fresh, tok)
	s.mu.Unlock()
	if live || fresh {
		s.Revocations.Add(1)
	}
	w.WriteHeader(http.StatusOK) // RFC 7009 §2.2: also for a token it does not know
}

const deviceGrantType = "urn:ietf:params:oauth:grant-type:device_code"

// deviceAuthorization is the device authorization endpoint (RFC 8628
// §3.1): a device code (a secret, as [Server.Leaked] knows) and a user
// code (meant to be shown) for a known client.
func (s *Server) deviceAuthorization(w http.ResponseWriter, r *http.Request) {
	if !s.opts.Device {
		http.NotFound(w, r)
		return
	}
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request")
		return
	}
	req := DeviceRequest{ClientID: r.PostForm.Get("client_id"), Scope: r.PostForm.Get("scope"), Resource: r.PostForm.Get("resource")}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.devReqs = append(s.devReqs, req)
	_, registered := s.dcr[req.ClientID]
	if !registered && (req.ClientID == "" || req.ClientID != s.opts.ClientID) &&
		!(s.opts.ClientMetadataDocuments && strings.HasPrefix(req.ClientID, "https://")) {
		oauthError(w, http.StatusUnauthorized, "invalid_client")
		return
	}
	dc := s.secretLocked("dc")
	var b [4]byte
	_, _ = rand.Read(b[:])
	user := strings.ToUpper(hex.EncodeToString(b[:2]) + "-" + hex.EncodeToString(b[2:]))
	s.devices[dc] = &deviceGrant{grant: grant{client: req.ClientID, scope: req.Scope}, userCode: user, pending: s.opts.DevicePending}
	verify := s.opts.VerificationURI
	if verify == "" {
		verify = "https://verify.example/device"
	}
	expires := s.opts.DeviceExpiresIn
	if expires == 0 {
		expires = 600
	}
	answer := map[string]any{"device_code": dc, "user_code": user, "verification_uri": verify, "expires_in": expires}
	if s.opts.DeviceInterval > 0 {
		answer["interval"] = s.opts.DeviceInterval
	}
	if s.opts.VerificationURIComplete {
		answer["verification_uri_complete"] = verify + "?user_code=" + url.QueryEscape(user)
	}
	writeJSON(w, http.StatusOK, answer)
}

// verify is the verification page, as a user's browser posts it: the
// form's user_code is approved, or denied with action=deny.
func (s *Server) verify(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	code := r.PostForm.Get("user_code")
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.devices {
		if d.userCode == code && code != "" {
			if r.PostForm.Get("action") == "deny" {
				d.denied = true
			} else {
				d.approved = true
			}
			w.WriteHeader(http.StatusOK)
			return
		}
	}
	http.Error(w, "unknown user code", http.StatusNotFound)
}

// ApproveDevice approves userCode on the verification page, as the user
// would.
func (s *Server) ApproveDevice(userCode string) error { return s.answerDevice(userCode, "approve") }

// DenyDevice refuses userCode on the verification page, as the user
// would.
func (s *Server) DenyDevice(userCode string) error { return s.answerDevice(userCode, "deny") }

func (s *Server) answerDevice(userCode, action string) error {
	resp, err := http.PostForm(s.Issuer+"/device", url.Values{"user_code": {userCode}, "action": {action}})
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the verification page answered %s", resp.Status)
	}
	return nil
}

// ExpireDevices makes every device code answer expired_token from now
// on, as if the user had taken too long.
func (s *Server) ExpireDevices() {
	s.mu.Lock()
	s.expired = true
	s.mu.Unlock()
}

// DevicePolls returns when each device_code grant request came, in
// order.
func (s *Server) DevicePolls() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.devPolls)
}

// DeviceRequests returns what clients sent to the device authorization
// endpoint.
func (s *Server) DeviceRequests() []DeviceRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.devReqs)
}

func (s *Server) secret(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.secretLocked(prefix)
}

func (s *Server) secretLocked(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	v := prefix + "_" + hex.EncodeToString(b[:])
	s.issued = append(s.issued, v)
	return v
}
