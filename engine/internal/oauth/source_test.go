package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/voltmcp/voltmcp/engine/internal/oauthguard"
	"github.com/voltmcp/voltmcp/engine/internal/transport"
)

// rotatingAS is a token endpoint that rotates refresh tokens and, like
// an authorization server that detects a replay, revokes the whole grant
// when a used refresh token comes back.
type rotatingAS struct {
	url       string
	ttl       int // expires_in of the tokens it issues
	mu        sync.Mutex
	current   string // the refresh token that works
	n         int
	revoked   bool
	refreshes atomic.Int32
	revokes   atomic.Int32
}

func newRotatingAS(t *testing.T, ttl int) *rotatingAS {
	as := &rotatingAS{ttl: ttl, current: "refresh-token-1"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil || r.Form.Get("grant_type") != "refresh_token" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		as.mu.Lock()
		defer as.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if as.revoked || r.Form.Get("refresh_token") != as.current {
			if !as.revoked {
				as.revokes.Add(1)
			}
			as.revoked = true
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_grant", "error_description": "replayed " + r.Form.Get("refresh_token")})
			return
		}
		as.refreshes.Add(1)
		as.n++
		as.current = fmt.Sprintf("refresh-token-r%d", as.n)
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": fmt.Sprintf("access-token-r%d", as.n), "token_type": "Bearer",
			"refresh_token": as.current, "expires_in": as.ttl})
	}))
	t.Cleanup(srv.Close)
	as.url = srv.URL
	return as
}

// expiredFile is a stored token that must be refreshed at as.
func expiredFile(as *rotatingAS) *File {
	f := validFile()
	f.TokenURL, f.AuthStyle = as.url+"/token", int(oauth2.AuthStyleInParams)
	f.Token.Expiry = time.Now().Add(-time.Hour)
	return f
}

func TestTokenSourceStoresAFreshToken(t *testing.T) {
	s, _, _ := newTestStore(t)
	tok := &oauth2.Token{AccessToken: "access-token-1", RefreshToken: "refresh-token-1", Expiry: time.Now().Add(time.Hour)}
	file := File{Format: Format, Server: "srv", URLHash: URLHash(testURL), ClientID: "client-1", TokenURL: "https://as.example.com/token"}
	ts := s.NewTokenSource(context.Background(), &oauth2.Config{ClientID: "client-1"}, tok, file)
	got, err := ts.Token()
	if err != nil || got.AccessToken != tok.AccessToken {
		t.Fatalf("Token = %v, %v", got, err)
	}
	f := s.Read()
	if f == nil || f.Token.AccessToken != tok.AccessToken || f.ClientID != "client-1" || f.SavedAt.IsZero() {
		t.Fatalf("stored %+v", f)
	}
	// Stored once: a token in use is not written again.
	if err := os.Remove(s.Path()); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Token(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the token was stored again: %v", err)
	}
}

func TestTokenSourceRefreshes(t *testing.T) {
	as := newRotatingAS(t, 3600)
	s, _, scrub := newTestStore(t)
	if err := s.Save(expiredFile(as)); err != nil {
		t.Fatal(err)
	}
	ts := s.Load(testURL, http.DefaultClient, "client-1", "", &oauthguard.Policy{})
	if ts == nil {
		t.Fatal("no token source")
	}
	tok, err := ts.Token()
	if err != nil || tok.AccessToken != "access-token-r1" {
		t.Fatalf("Token = %v, %v", tok, err)
	}
	if f := s.Read(); f == nil || f.Token.AccessToken != "access-token-r1" || f.Token.RefreshToken != "refresh-token-r1" {
		t.Errorf("stored %+v", f)
	}
	if got := scrub.Text("access-token-r1 refresh-token-r1"); strings.Contains(got, "-r1") {
		t.Errorf("the refreshed tokens are not scrubbed: %q", got)
	}
	if _, err := ts.Token(); err != nil || as.refreshes.Load() != 1 {
		t.Errorf("a valid token was refreshed again: %v, %d refreshes", err, as.refreshes.Load())
	}
}

func TestTokenSourceDeadAfterAFailedRefresh(t *testing.T) {
	as := newRotatingAS(t, 3600)
	as.mu.Lock()
	as.current = "another-refresh-token"
	as.mu.Unlock()
	s, log, _ := newTestStore(t)
	if err := s.Save(expiredFile(as)); err != nil {
		t.Fatal(err)
	}
	ts := s.Load(testURL, http.DefaultClient, "client-1", "", &oauthguard.Policy{})
	for range 2 {
		if tok, err := ts.Token(); tok != nil || err != ErrNeedsGrant {
			t.Fatalf("Token = %v, %v; want %v", tok, err, ErrNeedsGrant)
		}
	}
	if !ts.Dead() {
		t.Error("the source is not dead")
	}
	if n := as.revokes.Load() + as.refreshes.Load(); n != 1 {
		t.Errorf("%d token requests, want 1", n)
	}
	if !strings.Contains(log.String(), "oauth token refresh failed") || strings.Contains(log.String(), "refresh-token-1") {
		t.Errorf("log %q", log.String())
	}
}

// TestTokenSourceTakesAnotherProcessToken: a source whose token expired
// takes the token another process (another store of the same file)
// refreshed and stored meanwhile, rather than presenting the refresh
// token that process already used.
func TestTokenSourceTakesAnotherProcessToken(t *testing.T) {
	as := newRotatingAS(t, 3600)
	a, _, _ := newTestStore(t)
	b := NewStore(a.Path(), "srv", nil)
	if err := a.Save(expiredFile(as)); err != nil {
		t.Fatal(err)
	}
	policy := &oauthguard.Policy{}
	tsA := a.Load(testURL, http.DefaultClient, "client-1", "", policy)
	tsB := b.Load(testURL, http.DefaultClient, "client-1", "", policy)
	tokA, err := tsA.Token()
	if err != nil {
		t.Fatal(err)
	}
	tokB, err := tsB.Token()
	if err != nil || tokB.AccessToken != tokA.AccessToken {
		t.Fatalf("Token = %v, %v; want %s", tokB, err, tokA.AccessToken)
	}
	if as.refreshes.Load() != 1 || as.revokes.Load() != 0 {
		t.Errorf("%d refreshes, %d revokes; want 1, 0", as.refreshes.Load(), as.revokes.Load())
	}
}

// TestTokenSourceRefreshesSerialized runs sources of two stores of one
// file (two gateways on one agent dir) that refresh at once, again and
// again (the tokens are too short-lived to be used without a refresh):
// the lock serializes the refreshes and the grant survives.
func TestTokenSourceRefreshesSerialized(t *testing.T) {
	as := newRotatingAS(t, 1)
	first, _, _ := newTestStore(t)
	if err := first.Save(expiredFile(as)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		log := new(syncBuffer)
		s := NewStore(first.Path(), "srv", &StoreOptions{Log: slog.New(slog.NewTextHandler(log, nil)), Scrub: new(transport.Scrubber)})
		ts := s.Load(testURL, http.DefaultClient, "client-1", "", &oauthguard.Policy{})
		if ts == nil {
			t.Fatal("no token source")
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				if _, err := ts.Token(); err != nil {
					errs[i] = fmt.Errorf("%w (log: %s)", err, log.String())
					return
				}
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("source %d: %v", i, err)
		}
	}
	if as.revokes.Load() != 0 || as.refreshes.Load() == 0 {
		t.Errorf("%d refreshes, %d revokes", as.refreshes.Load(), as.revokes.Load())
	}
}

func TestTokenSourceRefreshesWithinTheMargin(t *testing.T) {
	for name, tc := range map[string]struct {
		left    time.Duration // until the stored token expires
		refresh bool
	}{
		"inside the margin":  {RefreshMargin / 2, true},
		"outside the margin": {2 * RefreshMargin, false},
	} {
		t.Run(name, func(t *testing.T) {
			as := newRotatingAS(t, 3600)
			s, _, _ := newTestStore(t)
			f := expiredFile(as)
			f.Token.Expiry = time.Now().Add(tc.left)
			if err := s.Save(f); err != nil {
				t.Fatal(err)
			}
			tok, err := s.Load(testURL, http.DefaultClient, "client-1", "", &oauthguard.Policy{}).Token()
			if err != nil {
				t.Fatal(err)
			}
			if refreshed := tok.AccessToken == "access-token-r1"; refreshed != tc.refresh || as.refreshes.Load() != map[bool]int32{true: 1}[tc.refresh] {
				t.Errorf("token %s, %d refreshes; want a refresh: %v", tok.AccessToken, as.refreshes.Load(), tc.refresh)
			}
			if got := s.Read(); tc.refresh && (got == nil || got.Token.RefreshToken != "refresh-token-r1") {
				t.Errorf("the rotated refresh token is not stored: %+v", got)
			}
		})
	}
}

func TestTokenSourceWithoutRefreshTokenServesUntilExpiry(t *testing.T) {
	s, _, _ := newTestStore(t)
	f := validFile()
	f.Token.RefreshToken = ""
	f.Token.Expiry = time.Now().Add(RefreshMargin / 2)
	if err := s.Save(f); err != nil {
		t.Fatal(err)
	}
	ts := s.Load(testURL, http.DefaultClient, "client-1", "", &oauthguard.Policy{})
	for range 2 {
		if tok, err := ts.Token(); err != nil || tok.AccessToken != "access-token-1" {
			t.Fatalf("Token = %v, %v", tok, err)
		}
	}
}

// TestTokenSourceShortLivedTokensRefreshOnce has many callers ask at
// once for the token of a server that issues tokens living less than
// RefreshMargin (30 s, 20 s and 10 s): one refresh serves them all, and
// the callers after it take the fresh token rather than refreshing it
// again; the log says the server's tokens are short-lived, once.
func TestTokenSourceShortLivedTokensRefreshOnce(t *testing.T) {
	for _, ttl := range []int{30, 20, 10} {
		t.Run(fmt.Sprint(ttl, "s"), func(t *testing.T) {
			as := newRotatingAS(t, ttl)
			s, log, _ := newTestStore(t)
			if err := s.Save(expiredFile(as)); err != nil {
				t.Fatal(err)
			}
			ts := s.Load(testURL, http.DefaultClient, "client-1", "", &oauthguard.Policy{})
			var wg sync.WaitGroup
			errs := make(chan error, 50)
			for range 50 {
				wg.Go(func() {
					if tok, err := ts.Token(); err != nil || tok.AccessToken == "" {
						errs <- fmt.Errorf("Token = %v, %v", tok, err)
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			// One refresh; a second only if the callers outlasted half the
			// token's life, which a loaded machine may make them do.
			if n := as.refreshes.Load(); n < 1 || n > 2 || as.revokes.Load() != 0 {
				t.Fatalf("%d refreshes, %d revokes for 50 callers; want one refresh shared", n, as.revokes.Load())
			}
			if n := strings.Count(log.String(), "short-lived tokens"); n != 1 {
				t.Fatalf("the log says %d times that the tokens are short-lived; want once:\n%s", n, log.String())
			}
		})
	}
}
