package engine

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/internal/oauthtest"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// TestOAuthRulesHoldForRefreshAndLogout: the rules of discovery hold for
// the requests after it too. A token obtained from a plain http loopback
// authorization server under allowInsecureLoopback is not refreshed, nor
// revoked at logout, once the setting is gone: the refresh and the
// revocation are refused before a request is sent, and the refusal names
// the field, in the log for the refresh (the server then needs an
// authorization) and in the logout's result (which removes the tokens all
// the same).
func TestOAuthRulesHoldForRefreshAndLogout(t *testing.T) {
	t.Parallel()
	for _, tr := range oauthTransports {
		t.Run(tr, func(t *testing.T) {
			// Tokens that live 5 s: the stored one has expired, so is
			// due, when the next engine uses it.
			o := oauthtest.New(t, &oauthtest.Options{TTL: 5 * time.Second, SSE: tr == "sse"})
			cfg := func(auth map[string]any) Options {
				return workspace(t, map[string]server{"o": {"url": o.MCPURL, "transport": tr, "connectTimeoutMs": 10000, "auth": auth}}, nil)
			}
			opts := cfg(loopbackOK)
			agent := filepath.Join(opts.Home, ".volt", "agent")
			opts.AgentDir = agent
			var calls atomic.Int32
			opts.Authorize = headless(t, &calls)
			ctx := testwait.Context(t)
			e := start(t, opts)
			if err := e.Connect(ctx, "o"); err != nil {
				t.Fatal(err)
			}
			e.Close()
			refreshes := o.Refreshes.Load()
			oauthtest.WaitExpired(t, filepath.Join(agent, "mcp", "auth", "o.json"))

			strict := cfg(map[string]any{"type": "oauth"})
			strict.AgentDir = agent
			var log bytes.Buffer
			strict.Logger = slog.New(slog.NewTextHandler(&syncWriter{w: &log}, nil))
			e2 := start(t, strict)
			// The refused refresh leaves no token: the server needs an
			// authorization, and the log says why.
			_, err := e2.callUngated(ctx, "o", "echo", map[string]any{"text": "x"})
			if err == nil || !strings.Contains(err.Error(), "authorization required for server o") {
				t.Errorf("call without the setting: %v", err)
			}
			if !strings.Contains(log.String(), "oauth token refresh failed") || !strings.Contains(log.String(), "is plain http") {
				t.Errorf("the log does not name the refused refresh:\n%s", log.String())
			}
			if n := o.Refreshes.Load() - refreshes; n != 0 {
				t.Errorf("%d refreshes reached the plain http token endpoint without the setting", n)
			}
			res, err := e2.Logout(ctx, "o")
			if err != nil || !res.Removed || res.Revoked || !strings.Contains(res.RevokeError, "issuer (http://127.0.0.1:") ||
				!strings.Contains(res.RevokeError, "is plain http") {
				t.Errorf("logout without the setting: %+v, %v", res, err)
			}
			if n := o.Revocations.Load(); n != 0 {
				t.Errorf("%d revocations reached the plain http authorization server without the setting", n)
			}
			if info, _ := e2.AuthStatus("o"); info.State != AuthNeedsAuth {
				t.Errorf("after logout: %s", info.State)
			}
			if calls.Load() != 1 {
				t.Errorf("%d authorizations, want 1", calls.Load())
			}
		})
	}
}

// TestOAuthSSEEndpointOfAnotherOriginGetsNoToken: an SSE server behind
// OAuth whose endpoint event names another origin gets its POSTs
// refused before they are sent, so the token it authorized stays on its
// origin, as a configured header does.
func TestOAuthSSEEndpointOfAnotherOriginGetsNoToken(t *testing.T) {
	t.Parallel()
	o := oauthtest.New(t, nil)
	foreign := newForeignListener(t)
	sse, sseURL := serveLoopback(t)
	prm := sseURL + "/.well-known/oauth-protected-resource/sse"
	var posts atomic.Int32
	sse.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/.well-known/oauth-protected-resource/sse":
			writeJSON(w, http.StatusOK, map[string]any{"resource": sseURL + "/sse", "authorization_servers": []string{o.Issuer}})
		case !o.Valid(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")):
			w.Header().Set("WWW-Authenticate", fmt.Sprintf("Bearer resource_metadata=%q", prm))
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
		case r.Method != http.MethodGet:
			posts.Add(1)
			w.WriteHeader(http.StatusAccepted)
		default:
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "event: endpoint\ndata: %s\n\n", foreign.url+"/messages?sessionid=1")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}
	})
	sse.Start()
	opts := workspace(t, map[string]server{"o": {"url": sseURL + "/sse", "transport": "sse", "connectTimeoutMs": 10000,
		"auth": loopbackOK}}, nil)
	opts.AgentDir = filepath.Join(opts.Home, ".volt", "agent")
	var calls atomic.Int32
	opts.Authorize = headless(t, &calls)
	e := start(t, opts)
	err := e.Connect(testwait.Context(t), "o")
	if err == nil || !strings.Contains(err.Error(), "server o: refused") || !strings.Contains(err.Error(), "another origin") {
		t.Errorf("connect: %v", err)
	}
	if calls.Load() != 1 || o.Exchanges.Load() != 1 {
		t.Errorf("%d authorizations, %d code exchanges; want the stream's GET authorized once", calls.Load(), o.Exchanges.Load())
	}
	if n := foreign.requests.Load(); n != 0 {
		t.Errorf("the foreign listener got %d requests", n)
	}
	if err != nil && o.Leaked(err.Error()) != "" {
		t.Errorf("the error shows a token: %v", err)
	}
	if posts.Load() != 0 {
		t.Errorf("the SSE server got %d POSTs", posts.Load())
	}
}
