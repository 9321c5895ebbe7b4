package engine

import (
	"encoding/json"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/internal/oauthtest"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// TestOAuthCanarySweep runs every OAuth flow (authorization, a refresh of
// an expired token, a refresh by another gateway, a refresh that fails, a 401 on
// a live legacy SSE session, logout with and without a revocation) and
// checks that no token, code or client secret appears in anything the
// engine produces or writes but the token files: results, errors,
// statuses, summaries, auth states, logout results, events, log lines,
// and every other file under the agent directory (audit log, caches).
func TestOAuthCanarySweep(t *testing.T) {
	t.Parallel()
	const secret = "canaryCLIENTSECRET5e2b7c9d41"
	// pre's tokens live 5 s: a use after one has expired refreshes it
	// (due, whatever the refresh margin).
	pre := oauthtest.New(t, &oauthtest.Options{TTL: 5 * time.Second, ClientID: "voltmcp-test", ClientSecret: secret, NoRegistration: true})
	sse := oauthtest.New(t, &oauthtest.Options{SSE: true})
	auth := func(extra map[string]any) map[string]any {
		a := map[string]any{"type": "oauth", "allowInsecureLoopback": true}
		for k, v := range extra {
			a[k] = v
		}
		return a
	}
	opts := workspace(t, map[string]server{
		"pre": {"url": pre.MCPURL, "transport": "streamable-http", "connectTimeoutMs": 10000,
			"auth": auth(map[string]any{"clientId": "voltmcp-test", "clientSecret": "${env:CANARY_CLIENT_SECRET}", "issuer": pre.Issuer})},
		"sse": {"url": sse.MCPURL, "transport": "sse", "connectTimeoutMs": 10000, "auth": auth(nil)},
	}, nil)
	opts.AgentDir = filepath.Join(opts.Home, ".volt", "agent")
	lookup := opts.LookupEnv
	opts.LookupEnv = func(k string) (string, bool) {
		if k == "CANARY_CLIENT_SECRET" {
			return secret, true
		}
		return lookup(k)
	}
	var logs lockedBuffer
	opts.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var authorizations atomic.Int32
	headlessAuth := headless(t, &authorizations)

	var seen []string // what the engine said
	say := func(what string, v any) {
		t.Helper()
		switch x := v.(type) {
		case string:
			seen = append(seen, what+": "+x)
		case error:
			if x != nil {
				seen = append(seen, what+": "+x.Error())
			}
		default:
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			seen = append(seen, what+": "+string(b))
		}
	}
	ctx := testwait.Context(t)
	call := func(e *Engine, what, id string) {
		t.Helper()
		r := gw(t, e, GatewayInput{Action: "call", Server: id, Tool: "echo", Arguments: map[string]any{"text": "plain words"}})
		say(what+" result", r.Text)
		say(what+" data", r.Data)
		if r.IsError {
			t.Errorf("%s: %s", what, r.Text)
		}
	}
	var engines []*Engine
	engine := func(authorize bool) *Engine {
		o := opts
		if authorize {
			o.Authorize = headlessAuth
		}
		e := start(t, o)
		events, stop := e.Subscribe(1024)
		t.Cleanup(stop)
		go func() {
			for ev := range events {
				b, _ := json.Marshal(ev)
				logs.Write(append([]byte("event "), b...))
			}
		}()
		engines = append(engines, e)
		return e
	}
	summaries := func(e *Engine, what string) {
		for _, id := range []string{"pre", "sse"} {
			sum, err := e.Server(id)
			say(what+" summary "+id, sum)
			say(what+" summary error "+id, err)
			info, err := e.AuthStatus(id)
			say(what+" auth status "+id, info)
			say(what+" auth status error "+id, err)
		}
		say(what+" auth servers", e.AuthServers())
		say(what+" status", gw(t, e, GatewayInput{Action: "status"}).Text)
		say(what+" diagnostics", e.Diagnostics())
	}

	// Authorize both, and use them: pre refreshes each token that has
	// expired.
	preToken := filepath.Join(opts.AgentDir, "mcp", "auth", "pre.json")
	e1 := engine(true)
	for _, id := range []string{"pre", "sse"} {
		if err := e1.Connect(ctx, id); err != nil {
			t.Fatalf("connect %s: %v", id, err)
		}
		if id == "pre" {
			oauthtest.WaitExpired(t, preToken)
		}
		call(e1, "first call "+id, id)
	}
	oauthtest.WaitExpired(t, preToken)
	call(e1, "second call pre", "pre")
	// The SSE server forgets its grants while the session is live: the
	// POST of the next call is answered 401, and the handler authorizes
	// again before it is sent once more.
	sse.ForgetGrants()
	call(e1, "call after the grant was lost", "sse")
	if n := sse.Authorizes.Load(); n != 2 {
		t.Errorf("sse: %d authorizations, want 2 (a 401 on a POST must start one)", n)
	}
	summaries(e1, "first engine")
	e1.Close()

	// Another gateway refreshes the stored token.
	e2 := engine(false)
	oauthtest.WaitExpired(t, preToken)
	call(e2, "call by another gateway", "pre")
	// The authorization server forgets its grants: the refresh fails, and
	// the server needs an authorization.
	pre.ForgetGrants()
	oauthtest.WaitExpired(t, preToken)
	r := gw(t, e2, GatewayInput{Action: "call", Server: "pre", Tool: "echo", Arguments: map[string]any{"text": "x"}})
	say("call after a failed refresh", r.Text)
	if !r.IsError || !strings.Contains(r.Text, "voltmcp auth pre") {
		t.Errorf("call after a failed refresh: %s", r.Text)
	}
	summaries(e2, "second engine")
	e2.Close()
	if pre.Refreshes.Load() < 3 || pre.Reuses.Load() != 0 {
		t.Errorf("pre: %d refreshes, %d reuses", pre.Refreshes.Load(), pre.Reuses.Load())
	}

	// Log in again, then log out of both: pre's tokens are revoked; sse's
	// authorization server is gone, so its revocation fails.
	e3 := engine(true)
	if err := e3.Connect(ctx, "pre"); err != nil {
		t.Fatalf("connect pre again: %v", err)
	}
	res, err := e3.Logout(ctx, "pre")
	say("logout pre", res)
	say("logout pre error", err)
	if err != nil || !res.Revoked {
		t.Errorf("logout pre: %+v, %v", res, err)
	}
	sse.StopAuthServer()
	res, err = e3.Logout(ctx, "sse")
	say("logout sse", res)
	say("logout sse error", err)
	if err != nil || !res.Removed || res.RevokeError == "" {
		t.Errorf("logout sse with its authorization server gone: %+v, %v", res, err)
	}
	summaries(e3, "after logout")
	for _, e := range engines {
		e.Close()
	}
	say("log", logs.String())

	agent := opts.AgentDir
	err = filepath.WalkDir(agent, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(agent, path)
		if filepath.Dir(rel) == filepath.Join("mcp", "auth") && strings.HasSuffix(rel, ".json") {
			return nil // the token files hold the tokens by design
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		say("file "+rel, string(data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range seen {
		if leak := pre.Leaked(text); leak != "" {
			t.Errorf("%s shows from pre", leak)
		}
		if leak := sse.Leaked(text); leak != "" {
			t.Errorf("%s shows from sse", leak)
		}
		if strings.Contains(text, secret) {
			t.Errorf("the client secret shows: %.300s", text)
		}
		if t.Failed() {
			t.Logf("in: %.600s", text)
			break
		}
	}
	if !strings.Contains(logs.String(), "oauth token refresh failed") || !strings.Contains(logs.String(), "mcp_auth_update") {
		t.Errorf("the log misses the refresh failure or the auth events:\n%.2000s", logs.String())
	}
	t.Logf("%d items checked", len(seen))
}
