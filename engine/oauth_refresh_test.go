package engine

import (
	"bytes"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/internal/oauthtest"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// TestOAuthRefreshSharedAcrossGateways runs two gateways on one agent dir
// against an authorization server that rotates refresh tokens and revokes
// the whole grant when a used one comes back. Both start from the stored
// token after it has expired, so both find it due at once: the
// refreshes are serialized by the token file's lock, each gateway uses
// the token the other stored, and the grant survives.
func TestOAuthRefreshSharedAcrossGateways(t *testing.T) {
	t.Parallel()
	f := oauthtest.New(t, &oauthtest.Options{TTL: 5 * time.Second})
	var log bytes.Buffer
	opts := oauthWorkspace(t, f.MCPURL, &log)
	var calls atomic.Int32
	opts.Authorize = headless(t, &calls)
	ctx := testwait.Context(t)
	e := start(t, opts)
	if err := e.Connect(ctx, "o"); err != nil {
		t.Fatal(err)
	}
	e.Close()
	oauthtest.WaitExpired(t, filepath.Join(opts.AgentDir, "mcp", "auth", "o.json"))

	opts.Authorize = nil // a gateway that loses the grant cannot get another
	gateways := []*Engine{start(t, opts), start(t, opts)}
	var wg sync.WaitGroup
	errs := make([]error, len(gateways))
	for i, g := range gateways {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				if _, err := g.callUngated(ctx, "o", "echo", map[string]any{"text": "hi"}); err != nil {
					errs[i] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("gateway %d: %v", i, err)
		}
	}
	if n := f.Reuses.Load(); n != 0 {
		t.Errorf("the authorization server saw a refresh token twice %d times and revoked the grant", n)
	}
	if f.Refreshes.Load() == 0 || calls.Load() != 1 {
		t.Errorf("refreshes %d, authorizations %d", f.Refreshes.Load(), calls.Load())
	}
	if s := f.Leaked(log.String()); s != "" {
		t.Errorf("log shows %s", s)
	}
}

// TestOAuthShortLivedTokenRefreshedOnce makes 50 concurrent calls through
// one gateway to a server whose tokens live 30 s, half the refresh
// margin: the token the authorization gave serves them all, or one
// refresh does, rather than a refresh per call, one at a time; the log
// says the server's tokens are short-lived.
func TestOAuthShortLivedTokenRefreshedOnce(t *testing.T) {
	t.Parallel()
	f := oauthtest.New(t, &oauthtest.Options{TTL: 30 * time.Second})
	var log bytes.Buffer
	opts := oauthWorkspace(t, f.MCPURL, &log)
	var authorizations atomic.Int32
	opts.Authorize = headless(t, &authorizations)
	ctx := testwait.Context(t)
	e := start(t, opts)
	if err := e.Connect(ctx, "o"); err != nil {
		t.Fatal(err)
	}
	before := f.Refreshes.Load()
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for range 50 {
		wg.Go(func() {
			if _, err := e.callUngated(ctx, "o", "echo", map[string]any{"text": "hi"}); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// None, or one if the calls outlasted half the token's life, which a
	// loaded machine may make them do; never one per call.
	if n := f.Refreshes.Load() - before; n > 1 || authorizations.Load() != 1 {
		t.Fatalf("%d refreshes and %d authorizations for 50 calls; want at most one refresh", n, authorizations.Load())
	}
	if f.Reuses.Load() != 0 {
		t.Fatalf("a refresh token was presented twice")
	}
	if s := f.Leaked(log.String()); s != "" {
		t.Fatalf("log shows %s", s)
	}
	if !strings.Contains(log.String(), "short-lived tokens") {
		t.Fatalf("the log does not say the tokens are short-lived:\n%s", log.String())
	}
}
