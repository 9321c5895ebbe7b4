package oauth

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

const testEndpoint = "https://mcp.example.com/mcp"

// recorder records the hooks a handler calls, in order.
type recorder struct {
	mu         sync.Mutex
	connecting bool
	calls      []string
	errs       []error
}

func (r *recorder) add(call string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, call)
	if err != nil {
		r.errs = append(r.errs, err)
	}
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

func (r *recorder) hooks() Hooks {
	return Hooks{
		Connecting:     func() bool { return r.connecting },
		Request:        func() { r.add("request", nil) },
		Authenticating: func() { r.add("authenticating", nil) },
		Update:         func(status string, err error) { r.add("update "+status, err) },
		Authorized:     func() { r.add("authorized", nil) },
		NeedsAuth:      func(err error) { r.add("needs_auth", err) },
	}
}

func newTestHandler(t *testing.T, state *State, opts *Options) *Handler {
	t.Helper()
	s, _, _ := newTestStore(t)
	h, err := NewHandler(testEndpoint, state, s, opts)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// unauthorized is a 401 answer with the given challenges.
func unauthorized(challenges ...string) (*http.Request, *http.Response) {
	req, _ := http.NewRequest(http.MethodPost, testEndpoint, nil)
	resp := &http.Response{StatusCode: http.StatusUnauthorized, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("no")), Request: req}
	for _, c := range challenges {
		resp.Header.Add("WWW-Authenticate", c)
	}
	return req, resp
}

func TestBearerParam(t *testing.T) {
	cs, err := oauthex.ParseWWWAuthenticate([]string{`Basic realm="x", Bearer error="insufficient_scope", scope="a b"`, `Bearer error="other"`})
	if err != nil {
		t.Fatal(err)
	}
	if got := bearerParam(cs, "error"); got != "insufficient_scope" {
		t.Errorf("error = %q", got)
	}
	if got := bearerParam(cs, "realm"); got != "" {
		t.Errorf("realm of a Basic challenge = %q, want none", got)
	}
}

func TestLoopbackRedirect(t *testing.T) {
	r, err := loopbackRedirect()
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(r)
	if err != nil || u.Scheme != "http" || u.Hostname() != "127.0.0.1" || u.Path != "/callback" || u.Port() == "" {
		t.Fatalf("redirect %q", r)
	}
	// The port was free: a surface can listen on it.
	l, err := net.Listen("tcp", u.Host)
	if err != nil {
		t.Fatalf("listen on the redirect's port: %v", err)
	}
	l.Close()
}

func TestFilterScopes(t *testing.T) {
	h := newTestHandler(t, new(State), &Options{Scopes: []string{"read"}})
	if got := h.filterScopes([]string{"read", "write"}); !slices.Equal(got, []string{"read"}) {
		t.Errorf("scopes %v, want the configured ones", got)
	}
	h.stepUp = true
	if got := h.filterScopes([]string{"admin", "read"}); !slices.Equal(got, []string{"read", "admin"}) {
		t.Errorf("step-up scopes %v", got)
	}
}

func TestAuthorizeWithoutAuthorizer(t *testing.T) {
	for _, connecting := range []bool{true, false} {
		rec := &recorder{connecting: connecting}
		state := new(State)
		h := newTestHandler(t, state, &Options{Hooks: rec.hooks()})
		req, resp := unauthorized(`Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource"`)
		err := h.Authorize(context.Background(), req, resp)
		if err == nil || !strings.Contains(err.Error(), "authorization required") || !strings.Contains(err.Error(), "server srv") {
			t.Fatalf("Authorize = %v", err)
		}
		want := []string{"request", "update " + Required}
		if connecting {
			want = append(want, "needs_auth")
		}
		if got := rec.got(); !slices.Equal(got, want) {
			t.Errorf("connecting %v: hooks %v, want %v", connecting, got, want)
		}
		failure := state.TakeFailure()
		if connecting != (failure != nil) {
			t.Errorf("connecting %v: failure %v", connecting, failure)
		}
		if connecting && (!strings.HasPrefix(failure.Error(), "server srv: authorization required") || !errors.Is(failure, err)) {
			t.Errorf("failure %v", failure)
		}
		if again := state.TakeFailure(); again != nil {
			t.Errorf("the failure was not forgotten: %v", again)
		}
	}
}

// TestAuthorizeWhenNoUserCanBeAsked: with an Authorize whose
// CanAuthorize says no user can be asked for the request's context, the
// authorization ends Required with that reason, before any discovery and
// without asking.
func TestAuthorizeWhenNoUserCanBeAsked(t *testing.T) {
	type key struct{}
	rec := &recorder{connecting: true}
	state := new(State)
	asked := false
	var seen any
	h := newTestHandler(t, state, &Options{Hooks: rec.hooks(),
		Authorize: func(context.Context, string, string) (string, error) {
			asked = true
			return "", errors.New("not reached")
		},
		CanAuthorize: func(ctx context.Context) error {
			seen = ctx.Value(key{})
			return errors.New("the client cannot be offered the login")
		},
	})
	req, resp := unauthorized(`Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource"`)
	err := h.Authorize(context.WithValue(context.Background(), key{}, "the call's"), req, resp)
	want := "authorization required for server srv: log in with `voltmcp auth srv`, then call again (the client cannot be offered the login)"
	if err == nil || err.Error() != want {
		t.Fatalf("Authorize = %v\nwant %s", err, want)
	}
	if asked || seen != "the call's" {
		t.Errorf("asked %v; CanAuthorize saw %v", asked, seen)
	}
	if got, want := rec.got(), []string{"request", "update " + Required, "needs_auth"}; !slices.Equal(got, want) {
		t.Errorf("hooks %v, want %v", got, want)
	}
	if f := state.TakeFailure(); f == nil || !errors.Is(f, err) {
		t.Errorf("failure %v", f)
	}
}

func TestAuthorizeRefusesAChallenge(t *testing.T) {
	for name, tc := range map[string]struct{ challenge, want string }{
		"private resource_metadata": {`Bearer resource_metadata="https://169.254.169.254/latest/meta-data"`, "is a link-local address"},
		"malformed header":          {`Bearer resource_metadata="unterminated`, "malformed"},
	} {
		t.Run(name, func(t *testing.T) {
			rec := &recorder{connecting: true}
			asked := false
			h := newTestHandler(t, new(State), &Options{Hooks: rec.hooks(), Authorize: func(context.Context, string, string) (string, error) {
				asked = true
				return "", errors.New("not reached")
			}})
			req, resp := unauthorized(tc.challenge)
			err := h.Authorize(context.Background(), req, resp)
			// The error names the field and at most an origin.
			if err == nil || !strings.HasPrefix(err.Error(), "authorization failed: ") || !strings.Contains(err.Error(), tc.want) ||
				strings.Contains(err.Error(), "meta-data") || strings.Contains(err.Error(), "unterminated") {
				t.Fatalf("Authorize = %v", err)
			}
			if asked {
				t.Error("the user was asked")
			}
			want := []string{"request", "authenticating", "update " + Failed, "needs_auth"}
			if got := rec.got(); !slices.Equal(got, want) {
				t.Errorf("hooks %v, want %v", got, want)
			}
		})
	}
}

// TestAuthorizeOneAtATime: a request answered 401 while another
// authorization runs waits for it, and retries with its token rather
// than asking the user again.
func TestAuthorizeOneAtATime(t *testing.T) {
	rec := &recorder{connecting: true}
	state := new(State)
	h := newTestHandler(t, state, &Options{Hooks: rec.hooks()})
	release, err := state.acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		req, resp := unauthorized(`Bearer`)
		done <- h.Authorize(context.Background(), req, resp)
	}()
	select {
	case err := <-done:
		t.Fatalf("Authorize did not wait: %v", err)
		// testwait: a negative wait, Authorize must still be waiting
	case <-time.After(50 * time.Millisecond):
	}
	state.authorized()
	release()
	if err := <-done; err != nil {
		t.Errorf("Authorize after another's authorization = %v, want nil (retry)", err)
	}
	if got := rec.got(); len(got) != 0 {
		t.Errorf("hooks %v, want none", got)
	}

	ctx, cancel := context.WithCancel(context.Background())
	release, _ = state.acquire(context.Background())
	defer release()
	cancel()
	req, resp := unauthorized(`Bearer`)
	if err := h.Authorize(ctx, req, resp); !errors.Is(err, context.Canceled) {
		t.Errorf("Authorize with a cancelled context = %v", err)
	}
}

func TestFetchCode(t *testing.T) {
	for name, tc := range map[string]struct {
		authURL, callback string
		want              string // in the error; empty: a code
	}{
		"code":        {callback: "http://127.0.0.1:1/callback?code=the-code-123&state=st&iss=https%3A%2F%2Fas.example.com"},
		"refused":     {callback: "http://127.0.0.1:1/callback?error=access_denied&error_description=" + strings.Repeat("x", 300), want: "the authorization was refused: access_denied " + strings.Repeat("x", 200)},
		"invalid utf": {callback: "http://127.0.0.1:1/callback?error=e&error_description=%ff", want: "refused: e ?"},
		"no code":     {callback: "http://127.0.0.1:1/callback?state=st", want: "returned no code"},
		"unreadable":  {callback: "http://[::1", want: "unreadable redirect"},
		"plain http":  {authURL: "http://as.example.com/authorize?client_id=c", want: "authorization_endpoint (http://as.example.com:80) is not https"},
	} {
		t.Run(name, func(t *testing.T) {
			authURL := tc.authURL
			if authURL == "" {
				authURL = "https://as.example.com/authorize?client_id=c"
			}
			var gotServer, gotURL string
			h := newTestHandler(t, new(State), &Options{Authorize: func(_ context.Context, server, u string) (string, error) {
				gotServer, gotURL = server, u
				return tc.callback, nil
			}})
			res, err := h.fetchCode(context.Background(), &auth.AuthorizationArgs{URL: authURL})
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("fetchCode = %v, %v; want an error with %q", res, err, tc.want)
				}
				if strings.Contains(err.Error(), strings.Repeat("x", 201)) {
					t.Errorf("error_description is not bounded: %v", err)
				}
				return
			}
			if err != nil || res.Code != "the-code-123" || res.State != "st" || res.Iss != "https://as.example.com" {
				t.Fatalf("fetchCode = %+v, %v", res, err)
			}
			if gotServer != "srv" || gotURL != authURL {
				t.Errorf("Authorize got %q, %q", gotServer, gotURL)
			}
			if strings.Contains(h.scrub.Text("the-code-123"), "the-code") {
				t.Error("the code is not scrubbed")
			}
		})
	}
}

func TestNewHandlerInitialTokenSource(t *testing.T) {
	s, _, _ := newTestStore(t)
	stored := validFile()
	stored.URLHash = URLHash(testEndpoint)
	if err := s.Save(stored); err != nil {
		t.Fatal(err)
	}
	state := new(State)
	state.setFailure(errors.New("an old failure"))
	h, err := NewHandler(testEndpoint, state, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if state.TakeFailure() != nil {
		t.Error("a new connection attempt kept the last failure")
	}
	first, _ := h.TokenSource(context.Background())
	if ts, ok := first.(*TokenSource); !ok || ts.tok.AccessToken != stored.Token.AccessToken {
		t.Fatalf("initial token source %v, want the stored token", first)
	}
	// The next attempt reuses the source in use, without reading the store.
	h2, err := NewHandler(testEndpoint, state, NewStore(s.Path()+".absent", "srv", nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := h2.TokenSource(context.Background()); again != first {
		t.Errorf("the second attempt got %v, want the source in use", again)
	}
	// Not for another endpoint, and not once dead.
	h3, _ := NewHandler(testEndpoint+"/other", state, NewStore(s.Path()+".absent", "srv", nil), nil)
	if other, _ := h3.TokenSource(context.Background()); other != nil {
		t.Errorf("another endpoint got %v", other)
	}
	first.(*TokenSource).dead = true
	h4, _ := NewHandler(testEndpoint, state, NewStore(s.Path()+".absent", "srv", nil), nil)
	if dead, _ := h4.TokenSource(context.Background()); dead != nil {
		t.Errorf("a dead source was reused: %v", dead)
	}
}

func TestNewTokenSourceKeepsTheConfiguredSecretOut(t *testing.T) {
	for _, tc := range []struct{ configured, issued, stored string }{
		{"configured-secret-1", "configured-secret-1", ""},
		{"", "registered-secret-1", "registered-secret-1"},
		{"configured-secret-1", "registered-secret-1", "registered-secret-1"},
	} {
		h := newTestHandler(t, new(State), &Options{ClientSecret: tc.configured})
		cfg := &oauth2.Config{ClientID: "c", ClientSecret: tc.issued, Endpoint: oauth2.Endpoint{TokenURL: "https://as.example.com/token"}}
		ts, err := h.newTokenSource(context.Background(), cfg, &oauth2.Token{AccessToken: "access-token-1", Expiry: time.Now().Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ts.Token(); err != nil {
			t.Fatal(err)
		}
		f := h.store.Read()
		if f == nil || f.ClientSecret != tc.stored || f.URLHash != URLHash(testEndpoint) || f.URL != testEndpoint || f.Server != "srv" {
			t.Errorf("%+v: stored %+v", tc, f)
		}
		if strings.Contains(h.scrub.Text(tc.issued), "secret") {
			t.Errorf("%+v: the client secret is not scrubbed", tc)
		}
	}
}

func TestConnectTimer(t *testing.T) {
	if tm, d := connectTimerFrom(context.Background()); tm != nil || d != 0 {
		t.Errorf("a context without a timer gave %v, %v", tm, d)
	}
	tm := time.NewTimer(time.Hour)
	defer tm.Stop()
	got, d := connectTimerFrom(WithConnectTimer(context.Background(), tm, time.Minute))
	if got != tm || d != time.Minute {
		t.Errorf("got %v, %v", got, d)
	}
}
