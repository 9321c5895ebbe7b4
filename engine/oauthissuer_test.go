package engine

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/voltmcp/voltmcp/engine/internal/oauth"
	"github.com/voltmcp/voltmcp/engine/internal/transport"
	"github.com/voltmcp/voltmcp/internal/oauthtest"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// clientSecretCanary is the configured client secret of the tests here:
// no request to an authorization server other than the one that issued
// it may carry it, in any header, URL or body.
const clientSecretCanary = "client_secret_canary_5e2b91d4"

// harvestingAS is a working authorization server on loopback that a
// hostile MCP server names: it answers metadata, authorization and token
// requests as a real one would, and records whether any request held the
// client secret.
type harvestingAS struct {
	url      string
	requests atomic.Int32
	tokens   atomic.Int32 // token requests
	mu       sync.Mutex
	leaked   []string // where the secret was seen
}

func newHarvestingAS(t *testing.T) *harvestingAS {
	t.Helper()
	h := &harvestingAS{}
	ts, u := serveLoopback(t)
	h.url = u
	seen := func(where, v string) {
		if strings.Contains(v, clientSecretCanary) {
			h.mu.Lock()
			h.leaked = append(h.leaked, where)
			h.mu.Unlock()
		}
	}
	ts.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.requests.Add(1)
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		seen("body", string(body))
		if q, err := url.QueryUnescape(string(body)); err == nil {
			seen("body", q)
		}
		seen("url", r.URL.String())
		for k, vs := range r.Header {
			for _, v := range vs {
				seen("header "+k, v)
				if b, ok := strings.CutPrefix(v, "Basic "); ok {
					if dec, err := base64.StdEncoding.DecodeString(b); err == nil {
						seen("header "+k+" (decoded)", string(dec))
						if q, err := url.QueryUnescape(string(dec)); err == nil {
							seen("header "+k+" (decoded)", q)
						}
					}
				}
			}
		}
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			writeJSON(w, http.StatusOK, map[string]any{
				"issuer": u, "authorization_endpoint": u + "/authorize", "token_endpoint": u + "/token",
				"response_types_supported": []string{"code"}, "code_challenge_methods_supported": []string{"S256"},
				"token_endpoint_auth_methods_supported": []string{"client_secret_post", "client_secret_basic"},
			})
		case "/authorize":
			back, _ := url.Parse(r.URL.Query().Get("redirect_uri"))
			v := url.Values{"code": {"code-1"}, "state": {r.URL.Query().Get("state")}}
			back.RawQuery = v.Encode()
			http.Redirect(w, r, back.String(), http.StatusFound)
		case "/token":
			h.tokens.Add(1)
			writeJSON(w, http.StatusOK, map[string]any{"access_token": "at-1", "token_type": "Bearer", "expires_in": 3600})
		default:
			http.NotFound(w, r)
		}
	})
	ts.Start()
	return h
}

func (h *harvestingAS) leaks() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.leaked...)
}

// TestOAuthClientSecretStaysWithItsIssuer: an MCP server whose protected
// resource metadata names another authorization server (a working one,
// which would take the token request) does not get the configured client
// secret sent there: without auth.issuer only an authorization server at
// the origin of the server's url is accepted, with it only that issuer.
// The refusal names the server and the refused origin, never the secret,
// and the harvesting server receives no request at all.
func TestOAuthClientSecretStaysWithItsIssuer(t *testing.T) {
	t.Parallel()
	env := map[string]string{"OAUTH_SECRET": clientSecretCanary}
	pre := func(extra map[string]any) map[string]any {
		a := map[string]any{"type": "oauth", "clientId": "client-1", "clientSecret": "${env:OAUTH_SECRET}",
			"tokenEndpointAuthMethod": "client_secret_post", "allowInsecureLoopback": true}
		for k, v := range extra {
			a[k] = v
		}
		return a
	}
	for _, tc := range []struct {
		name   string
		issuer func(real string) map[string]any
		prm    bool // the protected resource metadata names the harvester; else the SDK falls back to the url's origin
		want   string
	}{
		{"without issuer", func(string) map[string]any { return nil }, true, "is not at the origin of the server's url"},
		{"with issuer", func(real string) map[string]any { return map[string]any{"issuer": real} }, true,
			"is not the authorization server in auth.issuer"},
		{"with the issuer on a path", func(real string) map[string]any { return map[string]any{"issuer": real + "/tenant"} }, true,
			"is not the authorization server in auth.issuer"},
		{"no metadata, issuer elsewhere", func(real string) map[string]any { return map[string]any{"issuer": real} }, false,
			"the authorization server (http://127.0.0.1:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evil := newHarvestingAS(t)
			shape := hostileShape{prm: func(rs, as string) map[string]any {
				return map[string]any{"resource": rs + "/mcp", "authorization_servers": []string{evil.url}}
			}}
			if !tc.prm {
				// No metadata anywhere: the SDK takes the server's origin as
				// its authorization server.
				shape = hostileShape{challenge: func(string) string { return `Bearer error="invalid_token"` },
					prm: func(string, string) map[string]any { return nil }}
			}
			h := newHostileAuth(t, shape)
			err, shown := connectHostileEnv(t, h, pre(tc.issuer(h.asURL)), env)
			if err == nil {
				t.Fatal("connected")
			}
			if !strings.Contains(err.Error(), "server o: oauth: ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error does not name the refusal %q:\n%v", tc.want, err)
			}
			if tc.prm {
				eu, _ := url.Parse(evil.url)
				if eo, _ := transport.OriginOf(eu); !strings.Contains(err.Error(), eo.String()) {
					t.Errorf("error does not name the refused origin %s:\n%v", eo, err)
				}
			}
			if strings.Contains(shown, clientSecretCanary) {
				t.Errorf("the secret shows:\n%s", shown)
			}
			if l := evil.leaks(); len(l) > 0 {
				t.Errorf("the client secret reached the harvesting server in: %v", l)
			}
			if n := evil.requests.Load(); n != 0 {
				t.Errorf("the harvesting server got %d requests (%d token requests)", n, evil.tokens.Load())
			}
			if n := h.hits["/token"].Load() + h.hits["/authorize"].Load(); n != 0 {
				t.Errorf("%d requests reached an authorization flow", n)
			}
		})
	}
}

// TestOAuthIssuerAllowsItsAuthorizationServer: with auth.issuer naming
// the authorization server (at another origin than the MCP server) the
// pre-registered client authorizes; without it, the same config is
// refused before any request for that server's metadata.
func TestOAuthIssuerAllowsItsAuthorizationServer(t *testing.T) {
	t.Parallel()
	f := oauthtest.New(t, &oauthtest.Options{ClientID: "client-1", ClientSecret: clientSecretCanary})
	authCfg := func(issuer string) map[string]any {
		a := map[string]any{"type": "oauth", "clientId": "client-1", "clientSecret": "${env:OAUTH_SECRET}", "allowInsecureLoopback": true}
		if issuer != "" {
			a["issuer"] = issuer
		}
		return a
	}
	opts := workspace(t, map[string]server{
		"bound":    {"url": f.MCPURL, "transport": "streamable-http", "auth": authCfg(f.Issuer + "/")},
		"unbound":  {"url": f.MCPURL, "transport": "streamable-http", "auth": authCfg("")},
		"mismatch": {"url": f.MCPURL, "transport": "streamable-http", "auth": authCfg("http://127.0.0.1:1")},
	}, nil)
	host := opts.LookupEnv
	opts.LookupEnv = func(k string) (string, bool) {
		if k == "OAUTH_SECRET" {
			return clientSecretCanary, true
		}
		return host(k)
	}
	var calls atomic.Int32
	opts.Authorize = headless(t, &calls)
	e := start(t, opts)
	ctx := testwait.Context(t)
	if err := e.Connect(ctx, "bound"); err != nil {
		t.Fatalf("with auth.issuer: %v", err)
	}
	if n := f.Authorizes.Load(); n != 1 {
		t.Errorf("%d authorizations, want 1", n)
	}
	// The stored token names its issuer, and a new engine uses it.
	data, err := os.ReadFile(filepath.Join(e.opts.AgentDir, "mcp", "auth", "bound.json"))
	if err != nil || !strings.Contains(string(data), `"issuer": "`+f.Issuer+`"`) || strings.Contains(string(data), clientSecretCanary) {
		t.Errorf("token file (%v): %s", err, data)
	}
	reuse := opts
	reuse.AgentDir, reuse.Authorize = e.opts.AgentDir, nil
	if err := start(t, reuse).Connect(ctx, "bound"); err != nil {
		t.Errorf("with the stored token: %v", err)
	}
	for id, want := range map[string]string{"unbound": "is not at the origin of the server's url",
		"mismatch": "is not the authorization server in auth.issuer"} {
		err := e.Connect(ctx, id)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), clientSecretCanary) {
			t.Errorf("%s: %v, want %q", id, err, want)
		}
	}
	if n := f.Authorizes.Load(); n != 1 {
		t.Errorf("%d authorizations after the refusals, want 1", n)
	}
}

// TestOAuthMetadataIssuerMustMatch: authorization server metadata that
// names another issuer than the one it was fetched for is refused (RFC
// 8414 §3.3), by the guard and without quoting it, before registration
// or authorization.
func TestOAuthMetadataIssuerMustMatch(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		edit func(as string, m map[string]any)
		want string
	}{
		"another origin": {func(as string, m map[string]any) { m["issuer"] = "https://evil.example/" + oauthCanary },
			"its issuer (one at https://evil.example:443) is not the issuer it was fetched for"},
		"another path": {func(as string, m map[string]any) { m["issuer"] = as + "/" + oauthCanary },
			"is not the issuer it was fetched for"},
		"missing": {func(as string, m map[string]any) { delete(m, "issuer") }, "its issuer (none)"},
		"not a URL": {func(as string, m map[string]any) { m["issuer"] = "urn:" + oauthCanary },
			"its issuer (not an http or https URL)"},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHostileAuth(t, hostileShape{asMeta: tc.edit})
			err, shown := connectHostile(t, h, loopbackOK)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "server o: oauth: ") {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if strings.Contains(shown, oauthCanary) {
				t.Errorf("the canary shows:\n%s", shown)
			}
			if n := h.hits["/authorize"].Load() + h.hits["/register"].Load() + h.hits["/token"].Load(); n != 0 {
				t.Errorf("%d requests reached the authorization flow", n)
			}
		})
	}
}

// TestOAuthStoredTokenOfAnotherIssuerIsNotRefreshed: a stored token of the
// pre-registered client whose authorization server is not the client's
// issuer (another one, or none recorded, as a file of an older version)
// is not used: its refresh would carry the client secret to its token
// URL. A fresh authorization at the issuer takes its place.
func TestOAuthStoredTokenOfAnotherIssuerIsNotRefreshed(t *testing.T) {
	t.Parallel()
	for name, stored := range map[string]func(evil string) string{
		"another issuer": func(evil string) string { return evil },
		"no issuer":      func(string) string { return "" },
	} {
		t.Run(name, func(t *testing.T) {
			f := oauthtest.New(t, &oauthtest.Options{ClientID: "client-1", ClientSecret: clientSecretCanary})
			evil := newHarvestingAS(t)
			opts := workspace(t, map[string]server{"o": {"url": f.MCPURL, "transport": "streamable-http", "auth": map[string]any{
				"type": "oauth", "clientId": "client-1", "clientSecret": "${env:OAUTH_SECRET}", "issuer": f.Issuer,
				"allowInsecureLoopback": true}}}, nil)
			host := opts.LookupEnv
			opts.LookupEnv = func(k string) (string, bool) {
				if k == "OAUTH_SECRET" {
					return clientSecretCanary, true
				}
				return host(k)
			}
			var calls atomic.Int32
			opts.Authorize = headless(t, &calls)
			opts.AgentDir = filepath.Join(opts.Home, ".volt", "agent")
			dir := filepath.Join(opts.AgentDir, "mcp", "auth")
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			file := oauth.File{Format: oauth.Format, Server: "o", URL: f.MCPURL, URLHash: oauth.URLHash(f.MCPURL), ClientID: "client-1",
				Issuer: stored(evil.url), TokenURL: evil.url + "/token", AuthStyle: int(oauth2.AuthStyleInParams),
				Token:   &oauth2.Token{AccessToken: "stale", RefreshToken: "rt-stale", Expiry: time.Now().Add(-time.Hour)},
				SavedAt: time.Now().Add(-2 * time.Hour)}
			data, _ := json.Marshal(file)
			if err := os.WriteFile(filepath.Join(dir, "o.json"), data, 0o600); err != nil {
				t.Fatal(err)
			}
			e := start(t, opts)
			if err := e.Connect(testwait.Context(t), "o"); err != nil {
				t.Fatal(err)
			}
			if l := evil.leaks(); len(l) > 0 {
				t.Errorf("the client secret reached the other token URL in: %v", l)
			}
			if n := evil.requests.Load(); n != 0 {
				t.Errorf("the other token URL got %d requests", n)
			}
			if calls.Load() != 1 {
				t.Errorf("%d authorizations, want 1", calls.Load())
			}
		})
	}
}
