package engine

import (
	"bytes"
	"context"
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

	"github.com/voltmcp/voltmcp/engine/internal/oauth"
	"github.com/voltmcp/voltmcp/internal/oauthtest"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

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
	t.Parallel()
	f := oauthtest.New(t, nil)
	var log bytes.Buffer
	opts := oauthWorkspace(t, f.MCPURL, &log)
	var calls atomic.Int32
	opts.Authorize = headless(t, &calls)
	e := start(t, opts)
	events, stop := e.Subscribe(256)
	defer stop()
	ctx := testwait.Context(t)

	res, err := e.callUngated(ctx, "o", "echo", map[string]any{"text": "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if text(res) != "hi" || calls.Load() != 1 || f.Authorizes.Load() != 1 {
		t.Fatalf("echo %q after %d authorizations (%d at the server)", text(res), calls.Load(), f.Authorizes.Load())
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
	if f.Leaked(string(data)) == "" {
		t.Error("the token file holds no token")
	}

	// Nothing that leaves the engine shows a token or code.
	checkNoLeak := func(what string, e *Engine, evs []Event) {
		t.Helper()
		sums, _ := json.Marshal(e.Servers())
		evJSON, _ := json.Marshal(evs)
		for name, text := range map[string]string{"summaries": string(sums), "events": string(evJSON), "log": log.String()} {
			if s := f.Leaked(text); s != "" {
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
	if res, err := e2.callUngated(ctx, "o", "echo", map[string]any{"text": "again"}); err != nil || text(res) != "again" {
		t.Fatalf("second engine: %v", err)
	}
	if f.Authorizes.Load() != 1 {
		t.Errorf("%d authorizations at the server, want 1", f.Authorizes.Load())
	}
	checkNoLeak("second engine", e2, drain(events2))
}

func TestOAuthRefreshesStoredToken(t *testing.T) {
	t.Parallel()
	// The stored token has expired when the next engine starts: it is
	// refreshed, and the new one stored.
	f := oauthtest.New(t, &oauthtest.Options{TTL: 5 * time.Second})
	var log bytes.Buffer
	opts := oauthWorkspace(t, f.MCPURL, &log)
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
	refreshes := f.Refreshes.Load()
	oauthtest.WaitExpired(t, path)

	opts.Authorize = nil
	e2 := start(t, opts)
	if err := e2.Connect(ctx, "o"); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(path)
	if f.Refreshes.Load() == refreshes || bytes.Equal(before, after) || calls.Load() != 1 {
		t.Errorf("refreshes %d → %d, file changed %v, authorizations %d", refreshes, f.Refreshes.Load(), !bytes.Equal(before, after), calls.Load())
	}
	if s := f.Leaked(log.String()); s != "" {
		t.Errorf("log shows %s", s)
	}
	e2.Close()

	// The authorization server forgets every grant: the refresh fails, and
	// the server needs a new authorization instead of failing outright.
	f.ForgetGrants()
	oauthtest.WaitExpired(t, path)
	e3 := start(t, opts)
	if err := e3.Connect(ctx, "o"); err == nil || !strings.Contains(err.Error(), "authorization required") {
		t.Errorf("after a failed refresh: %v", err)
	}
	if s, _ := e3.Server("o"); s.Status != StatusNeedsAuth {
		t.Errorf("after a failed refresh: status %s", s.Status)
	}
	e3.Close()
	if l := log.String(); !strings.Contains(l, "oauth token refresh failed") || f.Leaked(l) != "" {
		t.Errorf("the log misses the failed refresh, or shows a token:\n%s", l)
	}
	opts.Authorize = headless(t, &calls)
	e4 := start(t, opts)
	if err := e4.Connect(ctx, "o"); err != nil || calls.Load() != 2 {
		t.Errorf("new authorization after a failed refresh: %v (%d authorizations)", err, calls.Load())
	}
	if s := f.Leaked(log.String()); s != "" {
		t.Errorf("log shows %s", s)
	}
}

func TestOAuthWithoutAuthorizerNeedsAuth(t *testing.T) {
	t.Parallel()
	f := oauthtest.New(t, nil)
	var log bytes.Buffer
	opts := oauthWorkspace(t, f.MCPURL, &log)
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
	if f.Authorizes.Load() != 0 {
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
	if _, err := e.callUngated(ctx, "o", "echo", map[string]any{"text": "x"}); err == nil || !strings.Contains(err.Error(), "authorization required") {
		t.Errorf("call: %v", err)
	}
	if s, _ := e.Server("o"); s.Status != StatusNeedsAuth {
		t.Errorf("after a call: %s", s.Status)
	}
}

func TestOAuthTokenNotReusedForAnotherURL(t *testing.T) {
	t.Parallel()
	f := oauthtest.New(t, nil)
	var log bytes.Buffer
	opts := oauthWorkspace(t, f.MCPURL, &log)
	var calls atomic.Int32
	opts.Authorize = headless(t, &calls)
	e := start(t, opts)
	ctx := testwait.Context(t)
	if err := e.Connect(ctx, "o"); err != nil {
		t.Fatal(err)
	}
	e.Close()

	// The same server under another URL (a query the server ignores).
	other := oauthWorkspace(t, f.MCPURL+"?v=2", &log)
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
	t.Parallel()
	f := oauthtest.New(t, nil)
	// connectTimeoutMs bounds what the gateway does, not the user, who
	// takes longer than it below, within authTimeoutMs.
	opts := workspace(t, map[string]server{
		"o": {"url": f.MCPURL, "transport": "streamable-http", "connectTimeoutMs": 1000, "auth": map[string]any{"type": "oauth", "allowInsecureLoopback": true}},
	}, map[string]any{"authTimeoutMs": 3000})
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
		case <-time.After(1500 * time.Millisecond):
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
		t.Errorf("gave up after %s, want about 3 s", d)
	}
	if s, _ := e2.Server("o"); s.Status != StatusNeedsAuth || !strings.Contains(s.LastError, "authorization failed") {
		t.Errorf("status %s, last error %q", s.Status, s.LastError)
	}
}

func TestOAuthConfiguredClientAndResourceMetadata(t *testing.T) {
	t.Parallel()
	const secret = "client_secret_0123456789"
	f := oauthtest.New(t, &oauthtest.Options{ClientID: "client-1", ClientSecret: secret, HidePRM: true})
	opts := workspace(t, map[string]server{
		"o": {"url": f.MCPURL, "transport": "streamable-http", "auth": map[string]any{
			"type": "oauth", "clientId": "client-1", "clientSecret": "${env:OAUTH_SECRET}", "issuer": f.Issuer,
			"resourceMetadataUrl": f.PRMURL, "scope": "notes:read notes:write", "allowInsecureLoopback": true}},
		"plain": {"url": f.MCPURL, "transport": "streamable-http", "auth": map[string]any{"type": "oauth", "allowInsecureLoopback": true}},
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
	t.Parallel()
	f := oauthtest.New(t, nil)
	opts := workspace(t, map[string]server{
		"o": {"url": f.MCPURL, "transport": "streamable-http", "auth": map[string]any{"type": "oauth", "allowInsecureLoopback": true}},
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
