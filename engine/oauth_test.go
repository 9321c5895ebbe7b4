package engine

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/voltmcp/voltmcp/engine/internal/oauth"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// oauthFixture is an OAuth authorization server and an MCP server that
// accepts only its tokens, both on loopback. The authorization endpoint
// redirects at once, as if the user had approved.
type oauthFixture struct {
	mcpURL     string
	asURL      string // the authorization server, the issuer
	prmURL     string // the protected resource metadata
	ttl        time.Duration
	authorizes atomic.Int32 // requests to the authorization endpoint
	refreshes  atomic.Int32 // refresh_token grants
	revokes    atomic.Int32 // grants revoked for a refresh token presented twice

	mu        sync.Mutex
	challenge map[string]string    // code → PKCE challenge
	valid     map[string]time.Time // access token → expiry
	refresh   map[string]bool      // refresh tokens issued
	used      map[string]bool      // refresh tokens presented once (they rotate)
	secrets   []string             // every token and code issued
}

// newOAuthFixture starts the servers; they stop when the test ends. Access
// tokens live for ttl. With hidePRM, the server's 401 does not say where its protected
// resource metadata is, and it is not at a well-known URL either: only a
// client configured with resourceMetadataUrl finds it.
func newOAuthFixture(t *testing.T, ttl time.Duration, hidePRM ...bool) *oauthFixture {
	t.Helper()
	hide := len(hidePRM) > 0 && hidePRM[0]
	f := &oauthFixture{ttl: ttl, challenge: map[string]string{}, valid: map[string]time.Time{}, refresh: map[string]bool{}, used: map[string]bool{}}
	as, asURL := serveLoopback(t)
	rs, rsURL := serveLoopback(t)
	f.asURL = asURL

	asMux := http.NewServeMux()
	asMux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{
			"issuer": asURL, "authorization_endpoint": asURL + "/authorize", "token_endpoint": asURL + "/token",
			"registration_endpoint": asURL + "/register", "response_types_supported": []string{"code"},
			"grant_types_supported":            []string{"authorization_code", "refresh_token"},
			"code_challenge_methods_supported": []string{"S256"}, "token_endpoint_auth_methods_supported": []string{"none"},
		})
	})
	asMux.HandleFunc("POST /register", func(w http.ResponseWriter, r *http.Request) {
		var meta oauthex.ClientRegistrationMetadata
		_ = json.NewDecoder(r.Body).Decode(&meta)
		writeJSON(w, http.StatusCreated, map[string]any{"client_id": "client-1", "redirect_uris": meta.RedirectURIs,
			"token_endpoint_auth_method": "none"})
	})
	asMux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		f.authorizes.Add(1)
		q := r.URL.Query()
		if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("client_id") != "client-1" {
			http.Error(w, "bad authorization request", http.StatusBadRequest)
			return
		}
		code := f.secret("code")
		f.mu.Lock()
		f.challenge[code] = q.Get("code_challenge")
		f.mu.Unlock()
		back, err := url.Parse(q.Get("redirect_uri"))
		if err != nil {
			http.Error(w, "bad redirect_uri", http.StatusBadRequest)
			return
		}
		v := back.Query()
		v.Set("code", code)
		v.Set("state", q.Get("state"))
		back.RawQuery = v.Encode()
		http.Redirect(w, r, back.String(), http.StatusFound)
	})
	asMux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		f.mu.Lock()
		defer f.mu.Unlock()
		switch r.PostForm.Get("grant_type") {
		case "authorization_code":
			want, ok := f.challenge[r.PostForm.Get("code")]
			sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
			if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != want {
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
				return
			}
			delete(f.challenge, r.PostForm.Get("code"))
		case "refresh_token":
			// Refresh tokens rotate, and one presented a second time
			// revokes every token of the grant, as RFC 9700 (4.14.2)
			// advises.
			rt := r.PostForm.Get("refresh_token")
			if f.used[rt] {
				clear(f.valid)
				clear(f.refresh)
				f.revokes.Add(1)
			}
			if !f.refresh[rt] {
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
				return
			}
			f.used[rt] = true
			delete(f.refresh, rt)
			f.refreshes.Add(1)
		default:
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
			return
		}
		access, refresh := f.secretLocked("at"), f.secretLocked("rt")
		f.valid[access] = time.Now().Add(f.ttl)
		f.refresh[refresh] = true
		writeJSON(w, http.StatusOK, map[string]any{"access_token": access, "token_type": "Bearer",
			"refresh_token": refresh, "expires_in": int(f.ttl.Seconds())})
	})
	as.Config.Handler = asMux

	server := mcp.NewServer(&mcp.Implementation{Name: "oauth-test", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	t.Cleanup(func() {
		for ss := range server.Sessions() {
			_ = ss.Close()
		}
	})
	f.mcpURL = rsURL + "/mcp"
	f.prmURL = rsURL + "/.well-known/oauth-protected-resource/mcp"
	challengeURL := f.prmURL
	if hide {
		f.prmURL, challengeURL = rsURL+"/meta/prm", ""
	}
	verify := func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		exp, ok := f.valid[tok]
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Expiration: exp}, nil
	}
	rsMux := http.NewServeMux()
	rsMux.Handle(strings.TrimPrefix(f.prmURL, rsURL), auth.ProtectedResourceMetadataHandler(
		&oauthex.ProtectedResourceMetadata{Resource: f.mcpURL, AuthorizationServers: []string{asURL}}))
	rsMux.Handle("/mcp", auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: challengeURL})(
		mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)))
	rs.Config.Handler = rsMux
	as.Start()
	rs.Start()
	return f
}

// serveLoopback returns an unstarted server on 127.0.0.1, which the test
// closes with its connections when it ends, and its URL (the handlers
// need it before Start).
func serveLoopback(t *testing.T) (*httptest.Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := &httptest.Server{Listener: ln, Config: &http.Server{}}
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
	})
	return ts, "http://" + ln.Addr().String()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// secret returns a new random token value and remembers it.
func (f *oauthFixture) secret(prefix string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.secretLocked(prefix)
}

func (f *oauthFixture) secretLocked(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	s := prefix + "_" + hex.EncodeToString(b[:])
	f.secrets = append(f.secrets, s)
	return s
}

// leaked returns the first issued secret that text holds.
func (f *oauthFixture) leaked(text string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.secrets {
		if strings.Contains(text, s) {
			return s
		}
	}
	return ""
}

// headless is an Options.Authorize that follows the authorization URL's
// redirect without a browser, and counts its calls.
func headless(t *testing.T, calls *atomic.Int32) func(context.Context, string, string) (string, error) {
	return func(ctx context.Context, server, authURL string) (string, error) {
		calls.Add(1)
		client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
		if err != nil {
			return "", err
		}
		resp, err := client.Do(req)
		if err != nil {
			return "", err
		}
		resp.Body.Close()
		loc, err := url.Parse(resp.Header.Get("Location"))
		if err != nil || resp.StatusCode != http.StatusFound {
			return "", fmt.Errorf("authorize answered %s", resp.Status)
		}
		if loc.Scheme != "http" || loc.Hostname() != "127.0.0.1" || loc.Port() == "" || loc.Path != "/callback" {
			t.Errorf("redirect URI %q is not a loopback callback", loc.Redacted())
		}
		return loc.String(), nil
	}
}

// oauthWorkspace is a workspace with one OAuth server, "o", at u, logging
// to log.
func oauthWorkspace(t *testing.T, u string, log *bytes.Buffer) Options {
	opts := workspace(t, map[string]server{
		"o": {"url": u, "transport": "streamable-http", "connectTimeoutMs": 5000, "auth": map[string]any{"type": "oauth", "allowInsecureLoopback": true}},
	}, nil)
	opts.Logger = slog.New(slog.NewTextHandler(&syncWriter{w: log}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts.AgentDir = filepath.Join(opts.Home, ".volt", "agent")
	return opts
}

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// drain returns the events received so far.
func drain(ch <-chan Event) []Event {
	var out []Event
	for {
		select {
		case ev := <-ch:
			out = append(out, ev)
		default:
			return out
		}
	}
}

func TestOAuthAuthorizeStoreAndReuse(t *testing.T) {
	f := newOAuthFixture(t, time.Hour)
	var log bytes.Buffer
	opts := oauthWorkspace(t, f.mcpURL, &log)
	var calls atomic.Int32
	opts.Authorize = headless(t, &calls)
	e := start(t, opts)
	events, stop := e.Subscribe(256)
	defer stop()
	ctx := testwait.Context(t)

	res, err := e.CallTool(ctx, "o", "echo", map[string]any{"text": "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if text(res) != "hi" || calls.Load() != 1 || f.authorizes.Load() != 1 {
		t.Fatalf("echo %q after %d authorizations (%d at the server)", text(res), calls.Load(), f.authorizes.Load())
	}
	var statuses []Status
	var authEvents []string
	evs := drain(events)
	for _, ev := range evs {
		switch ev.Type {
		case EventServerStatusChanged:
			statuses = append(statuses, ev.Status)
		case EventAuthRequest, EventAuthUpdate:
			authEvents = append(authEvents, string(ev.Type)+":"+ev.AuthStatus)
		}
	}
	want := []Status{StatusConnecting, StatusNeedsAuth, StatusAuthenticating, StatusConnecting, StatusConnected, StatusDiscovering, StatusReady}
	if fmt.Sprint(statuses) != fmt.Sprint(want) {
		t.Errorf("statuses %v, want %v", statuses, want)
	}
	if fmt.Sprint(authEvents) != "[mcp_auth_request: mcp_auth_update:authorized]" {
		t.Errorf("auth events %v", authEvents)
	}

	path := filepath.Join(opts.AgentDir, "mcp", "auth", "o.json")
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", st.Mode().Perm())
	}
	if dir, _ := os.Stat(filepath.Dir(path)); dir.Mode().Perm() != 0o700 {
		t.Errorf("token dir mode %v, want 0700", dir.Mode().Perm())
	}
	data, _ := os.ReadFile(path)
	if f.leaked(string(data)) == "" {
		t.Error("the token file holds no token")
	}

	// Nothing that leaves the engine shows a token or code.
	checkNoLeak := func(what string, e *Engine, evs []Event) {
		t.Helper()
		sums, _ := json.Marshal(e.Servers())
		evJSON, _ := json.Marshal(evs)
		for name, text := range map[string]string{"summaries": string(sums), "events": string(evJSON), "log": log.String()} {
			if s := f.leaked(text); s != "" {
				t.Errorf("%s: %s show %s", what, name, s)
			}
		}
	}
	checkNoLeak("first engine", e, evs)
	e.Close()

	// A second engine uses the stored token without asking.
	opts.Authorize = func(context.Context, string, string) (string, error) {
		t.Error("the second engine asked for an authorization")
		return "", errors.New("no")
	}
	e2 := start(t, opts)
	events2, stop2 := e2.Subscribe(256)
	defer stop2()
	if res, err := e2.CallTool(ctx, "o", "echo", map[string]any{"text": "again"}); err != nil || text(res) != "again" {
		t.Fatalf("second engine: %v", err)
	}
	if f.authorizes.Load() != 1 {
		t.Errorf("%d authorizations at the server, want 1", f.authorizes.Load())
	}
	checkNoLeak("second engine", e2, drain(events2))
}

func TestOAuthRefreshesStoredToken(t *testing.T) {
	// Tokens that expire within oauth2's 10 s margin are refreshed at once.
	f := newOAuthFixture(t, 5*time.Second)
	var log bytes.Buffer
	opts := oauthWorkspace(t, f.mcpURL, &log)
	var calls atomic.Int32
	opts.Authorize = headless(t, &calls)
	e := start(t, opts)
	ctx := testwait.Context(t)
	if err := e.Connect(ctx, "o"); err != nil {
		t.Fatal(err)
	}
	e.Close()
	path := filepath.Join(opts.AgentDir, "mcp", "auth", "o.json")
	before, _ := os.ReadFile(path)
	refreshes := f.refreshes.Load()

	opts.Authorize = nil
	e2 := start(t, opts)
	if err := e2.Connect(ctx, "o"); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(path)
	if f.refreshes.Load() == refreshes || bytes.Equal(before, after) || calls.Load() != 1 {
		t.Errorf("refreshes %d → %d, file changed %v, authorizations %d", refreshes, f.refreshes.Load(), !bytes.Equal(before, after), calls.Load())
	}
	if s := f.leaked(log.String()); s != "" {
		t.Errorf("log shows %s", s)
	}
	e2.Close()

	// The authorization server forgets every grant: the refresh fails, and
	// the server needs a new authorization instead of failing outright.
	f.mu.Lock()
	clear(f.refresh)
	clear(f.valid)
	f.mu.Unlock()
	e3 := start(t, opts)
	if err := e3.Connect(ctx, "o"); err == nil || !strings.Contains(err.Error(), "authorization required") {
		t.Errorf("after a failed refresh: %v", err)
	}
	if s, _ := e3.Server("o"); s.Status != StatusNeedsAuth {
		t.Errorf("after a failed refresh: status %s", s.Status)
	}
	e3.Close()
	opts.Authorize = headless(t, &calls)
	e4 := start(t, opts)
	if err := e4.Connect(ctx, "o"); err != nil || calls.Load() != 2 {
		t.Errorf("new authorization after a failed refresh: %v (%d authorizations)", err, calls.Load())
	}
	if s := f.leaked(log.String()); s != "" {
		t.Errorf("log shows %s", s)
	}
}

func TestOAuthWithoutAuthorizerNeedsAuth(t *testing.T) {
	f := newOAuthFixture(t, time.Hour)
	var log bytes.Buffer
	opts := oauthWorkspace(t, f.mcpURL, &log)
	e := start(t, opts)
	events, stop := e.Subscribe(256)
	defer stop()
	ctx := testwait.Context(t)
	began := time.Now()
	err := e.Connect(ctx, "o")
	if err == nil || !strings.Contains(err.Error(), "authorization required") {
		t.Fatalf("connect: %v", err)
	}
	// The fixture waits an hour: far beyond this bound under any load.
	if d := time.Since(began); d > 30*time.Second {
		t.Errorf("took %s", d)
	}
	s, _ := e.Server("o")
	if s.Status != StatusNeedsAuth || !strings.HasPrefix(s.LastError, "authorization required for server o: log in with `voltmcp auth o`") {
		t.Errorf("status %s, last error %q", s.Status, s.LastError)
	}
	if f.authorizes.Load() != 0 {
		t.Error("the authorization endpoint was visited")
	}
	var update *Event
	for _, ev := range drain(events) {
		if ev.Type == EventAuthUpdate {
			update = &ev
		}
	}
	if update == nil || update.AuthStatus != oauth.Required || !strings.Contains(update.Error, "authorization required") {
		t.Errorf("auth update %+v", update)
	}
	// Calls fail the same way, at once, and the server stays in needs_auth.
	if _, err := e.CallTool(ctx, "o", "echo", map[string]any{"text": "x"}); err == nil || !strings.Contains(err.Error(), "authorization required") {
		t.Errorf("call: %v", err)
	}
	if s, _ := e.Server("o"); s.Status != StatusNeedsAuth {
		t.Errorf("after a call: %s", s.Status)
	}
}

func TestOAuthTokenNotReusedForAnotherURL(t *testing.T) {
	f := newOAuthFixture(t, time.Hour)
	var log bytes.Buffer
	opts := oauthWorkspace(t, f.mcpURL, &log)
	var calls atomic.Int32
	opts.Authorize = headless(t, &calls)
	e := start(t, opts)
	ctx := testwait.Context(t)
	if err := e.Connect(ctx, "o"); err != nil {
		t.Fatal(err)
	}
	e.Close()

	// The same server under another URL (a query the server ignores).
	other := oauthWorkspace(t, f.mcpURL+"?v=2", &log)
	other.AgentDir = opts.AgentDir
	e2 := start(t, other)
	if err := e2.Connect(ctx, "o"); err == nil || !strings.Contains(err.Error(), "authorization required") {
		t.Errorf("connect under another URL: %v", err)
	}
	e2.Close()

	// A token file that others can read is not used.
	path := filepath.Join(opts.AgentDir, "mcp", "auth", "o.json")
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	opts.Authorize = nil
	e3 := start(t, opts)
	if err := e3.Connect(ctx, "o"); err == nil {
		t.Error("a token file readable by others was used")
	}
}

func TestOAuthTimeouts(t *testing.T) {
	f := newOAuthFixture(t, time.Hour)
	opts := workspace(t, map[string]server{
		"o": {"url": f.mcpURL, "transport": "streamable-http", "connectTimeoutMs": 300, "auth": map[string]any{"type": "oauth", "allowInsecureLoopback": true}},
	}, map[string]any{"authTimeoutMs": 1000})
	var calls atomic.Int32
	slow := headless(t, &calls)
	var wait atomic.Bool
	opts.Authorize = func(ctx context.Context, server, authURL string) (string, error) {
		if wait.Load() { // a user who never comes back
			<-ctx.Done()
			return "", ctx.Err()
		}
		// A user slower than connectTimeoutMs, within authTimeoutMs.
		select {
		// testwait: the slow user under test, beyond connectTimeoutMs
		case <-time.After(600 * time.Millisecond):
		case <-ctx.Done():
			return "", ctx.Err()
		}
		return slow(ctx, server, authURL)
	}
	e := start(t, opts)
	ctx := testwait.Context(t)
	if err := e.Connect(ctx, "o"); err != nil {
		t.Fatalf("an authorization longer than connectTimeoutMs: %v", err)
	}
	e.Close()

	if err := os.RemoveAll(filepath.Join(opts.Home, ".volt", "agent", "mcp", "auth")); err != nil {
		t.Fatal(err)
	}
	wait.Store(true)
	e2 := start(t, opts)
	began := time.Now()
	err := e2.Connect(ctx, "o")
	if err == nil || !strings.Contains(err.Error(), "authTimeoutMs") {
		t.Errorf("an authorization that never ends: %v", err)
	}
	// The user never comes back: without authTimeoutMs the connect
	// would end only with the test's patience.
	if d := time.Since(began); d > 30*time.Second {
		t.Errorf("gave up after %s, want about 1 s", d)
	}
	if s, _ := e2.Server("o"); s.Status != StatusNeedsAuth || !strings.Contains(s.LastError, "authorization failed") {
		t.Errorf("status %s, last error %q", s.Status, s.LastError)
	}
}

func TestOAuthConfiguredClientAndResourceMetadata(t *testing.T) {
	f := newOAuthFixture(t, time.Hour, true)
	const secret = "client_secret_0123456789"
	opts := workspace(t, map[string]server{
		"o": {"url": f.mcpURL, "transport": "streamable-http", "auth": map[string]any{
			"type": "oauth", "clientId": "client-1", "clientSecret": "${env:OAUTH_SECRET}", "issuer": f.asURL,
			"resourceMetadataUrl": f.prmURL, "scope": "notes:read notes:write", "allowInsecureLoopback": true}},
		"plain": {"url": f.mcpURL, "transport": "streamable-http", "auth": map[string]any{"type": "oauth", "allowInsecureLoopback": true}},
	}, nil)
	host := opts.LookupEnv
	opts.LookupEnv = func(k string) (string, bool) {
		if k == "OAUTH_SECRET" {
			return secret, true
		}
		return host(k)
	}
	var calls atomic.Int32
	authorize := headless(t, &calls)
	var scopes []string
	opts.Authorize = func(ctx context.Context, server, authURL string) (string, error) {
		u, _ := url.Parse(authURL)
		scopes = append(scopes, server+": "+u.Query().Get("scope"))
		return authorize(ctx, server, authURL)
	}
	e := start(t, opts)
	ctx := testwait.Context(t)
	if err := e.Connect(ctx, "o"); err != nil {
		t.Fatal(err)
	}
	// The SDK may order the scopes either way; the set is what counts.
	if len(scopes) != 1 || (scopes[0] != "o: notes:read notes:write" && scopes[0] != "o: notes:write notes:read") {
		t.Errorf("scopes asked for: %q", scopes)
	}
	data, err := os.ReadFile(filepath.Join(e.opts.AgentDir, "mcp", "auth", "o.json"))
	if err != nil || strings.Contains(string(data), secret) || !strings.Contains(string(data), `"clientId": "client-1"`) {
		t.Errorf("token file (%v): %s", err, data)
	}
	// Without resourceMetadataUrl the metadata is not found: the SDK falls
	// back to the server's origin as the authorization server, which has
	// no authorization endpoint.
	if err := e.Connect(ctx, "plain"); err == nil {
		t.Error("connected without finding the resource metadata")
	}
	for _, s := range e.Servers() {
		if strings.Contains(s.LastError, secret) {
			t.Errorf("%s: last error shows the client secret", s.ID)
		}
	}
}

func TestOAuthRefusedAuthorizationIsAClearError(t *testing.T) {
	f := newOAuthFixture(t, time.Hour)
	opts := workspace(t, map[string]server{
		"o": {"url": f.mcpURL, "transport": "streamable-http", "auth": map[string]any{"type": "oauth", "allowInsecureLoopback": true}},
	}, nil)
	opts.Authorize = func(ctx context.Context, server, authURL string) (string, error) {
		return "http://127.0.0.1:1/callback?error=access_denied&error_description=the+user+said+no", nil
	}
	e := start(t, opts)
	err := e.Connect(testwait.Context(t), "o")
	if err == nil || !strings.Contains(err.Error(), "access_denied") {
		t.Fatalf("err = %v", err)
	}
}
