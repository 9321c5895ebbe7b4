package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/voltmcp/voltmcp/internal/testwait"
)

// oauthCanary is a secret a hostile authorization server puts in its
// answers: no error, status, event or log line may show it.
const oauthCanary = "issued_secret_7c1d9e0f3a5b"

// hostileAuth is an MCP server that always asks for authorization and
// an authorization server, on loopback, whose answers a test shapes.
type hostileAuth struct {
	mcpURL, asURL string
	// transport is the server's "transport"; empty: streamable-http.
	// The MCP server answers 401 to any method, so that over "sse" the
	// stream's GET starts the authorization.
	transport string
	// Counts of requests per path, at either server.
	hits map[string]*atomic.Int32
}

// hostileShape says how the servers answer; nil fields keep the
// well-behaved answer.
type hostileShape struct {
	challenge func(rs string) string             // the 401's WWW-Authenticate
	prm       func(rs, as string) map[string]any // the protected resource metadata; nil: none (404)
	asMeta    func(as string, m map[string]any)  // edits the authorization server metadata
	register  func(w http.ResponseWriter, redirect []string)
	token     func(w http.ResponseWriter)
}

var hostilePaths = []string{"/mcp", "/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-authorization-server",
	"/authorize", "/register", "/token"}

func newHostileAuth(t *testing.T, shape hostileShape) *hostileAuth {
	t.Helper()
	h := &hostileAuth{hits: map[string]*atomic.Int32{}}
	for _, p := range hostilePaths {
		h.hits[p] = new(atomic.Int32)
	}
	count := func(r *http.Request) {
		if c := h.hits[r.URL.Path]; c != nil {
			c.Add(1)
		}
	}
	as, asURL := serveLoopback(t)
	rs, rsURL := serveLoopback(t)
	h.asURL, h.mcpURL = asURL, rsURL+"/mcp"
	rs.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		count(r)
		switch r.URL.Path {
		case "/mcp":
			c := fmt.Sprintf("Bearer resource_metadata=%q", rsURL+"/.well-known/oauth-protected-resource/mcp")
			if shape.challenge != nil {
				c = shape.challenge(rsURL)
			}
			w.Header().Set("WWW-Authenticate", c)
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
		case "/.well-known/oauth-protected-resource/mcp":
			m := map[string]any{"resource": h.mcpURL, "authorization_servers": []string{asURL}}
			if shape.prm != nil {
				m = shape.prm(rsURL, asURL)
			}
			if m == nil {
				http.NotFound(w, r)
				return
			}
			writeJSON(w, http.StatusOK, m)
		default:
			http.NotFound(w, r)
		}
	})
	as.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		count(r)
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			m := map[string]any{
				"issuer": asURL, "authorization_endpoint": asURL + "/authorize", "token_endpoint": asURL + "/token",
				"registration_endpoint": asURL + "/register", "response_types_supported": []string{"code"},
				"code_challenge_methods_supported": []string{"S256"}, "token_endpoint_auth_methods_supported": []string{"none"},
			}
			if shape.asMeta != nil {
				shape.asMeta(asURL, m)
			}
			writeJSON(w, http.StatusOK, m)
		case "/register":
			var meta struct {
				RedirectURIs []string `json:"redirect_uris"`
			}
			_ = json.NewDecoder(r.Body).Decode(&meta)
			if shape.register != nil {
				shape.register(w, meta.RedirectURIs)
				return
			}
			writeJSON(w, http.StatusCreated, map[string]any{"client_id": "client-1", "redirect_uris": meta.RedirectURIs,
				"token_endpoint_auth_method": "none"})
		case "/authorize":
			back, _ := url.Parse(r.URL.Query().Get("redirect_uri"))
			v := url.Values{"code": {"code-1"}, "state": {r.URL.Query().Get("state")}}
			back.RawQuery = v.Encode()
			http.Redirect(w, r, back.String(), http.StatusFound)
		case "/token":
			if shape.token != nil {
				shape.token(w)
				return
			}
			writeJSON(w, http.StatusOK, map[string]any{"access_token": "at-1", "token_type": "Bearer", "expires_in": 3600})
		default:
			http.NotFound(w, r)
		}
	})
	as.Start()
	rs.Start()
	return h
}

// connectHostile connects server "o" of a fresh engine to h's MCP server
// with the given auth and returns the error and everything the engine
// showed (error, last error, events, log).
func connectHostile(t *testing.T, h *hostileAuth, authCfg map[string]any) (error, string) {
	t.Helper()
	return connectHostileEnv(t, h, authCfg, nil)
}

// connectHostileEnv is connectHostile with env added to the variables
// the engine looks up.
func connectHostileEnv(t *testing.T, h *hostileAuth, authCfg map[string]any, env map[string]string) (error, string) {
	t.Helper()
	var log bytes.Buffer
	tr := h.transport
	if tr == "" {
		tr = "streamable-http"
	}
	opts := workspace(t, map[string]server{
		"o": {"url": h.mcpURL, "transport": tr, "connectTimeoutMs": 10000, "auth": authCfg},
	}, nil)
	host := opts.LookupEnv
	opts.LookupEnv = func(k string) (string, bool) {
		if v, ok := env[k]; ok {
			return v, true
		}
		return host(k)
	}
	opts.Logger = slog.New(slog.NewTextHandler(&syncWriter{w: &log}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts.AgentDir = filepath.Join(opts.Home, ".volt", "agent")
	var calls atomic.Int32
	opts.Authorize = headless(t, &calls)
	e := start(t, opts)
	events, stop := e.Subscribe(256)
	defer stop()
	err := e.Connect(testwait.Context(t), "o")
	s, _ := e.Server("o")
	evs, _ := json.Marshal(drain(events))
	shown := fmt.Sprint(err) + "\n" + s.LastError + "\n" + string(evs) + "\n" + log.String()
	return err, shown
}

var loopbackOK = map[string]any{"type": "oauth", "allowInsecureLoopback": true}

// oauthTransports are the transports OAuth runs over: each rule of
// discovery is tested over both.
var oauthTransports = []string{"streamable-http", "sse"}

// TestOAuthRefusesURLsTheServerNames: a resource_metadata or
// authorization server URL that is not https (or plain http to loopback
// with allowInsecureLoopback), or names a private, link-local or metadata
// address, is refused before any request to it, and the error names the
// field.
func TestOAuthRefusesURLsTheServerNames(t *testing.T) {
	t.Parallel()
	foreign := newForeignListener(t)
	fu, _ := url.Parse(foreign.url)
	cases := []struct {
		name  string
		auth  map[string]any
		shape hostileShape
		want  string // in the error
	}{
		{"resource_metadata plain http without the setting", map[string]any{"type": "oauth"},
			hostileShape{challenge: func(string) string { return `Bearer resource_metadata="` + foreign.url + `/prm"` }},
			`resource_metadata (of WWW-Authenticate) (http://127.0.0.1:` + fu.Port() + `) is plain http`},
		{"resource_metadata to a private address", loopbackOK,
			hostileShape{challenge: func(string) string { return `Bearer resource_metadata="http://10.0.0.7/prm"` }},
			`resource_metadata (of WWW-Authenticate) (http://10.0.0.7:80) is not https`},
		{"resource_metadata to the metadata service", loopbackOK,
			hostileShape{challenge: func(string) string {
				return `Bearer resource_metadata="https://169.254.169.254/latest/meta-data?x=` + oauthCanary + `"`
			}},
			`(https://169.254.169.254:443) is a link-local address`},
		{"resource_metadata to a mapped metadata address", loopbackOK,
			hostileShape{challenge: func(string) string { return `Bearer resource_metadata="https://[::ffff:a9fe:a9fe]/m"` }},
			`is a link-local address`},
		{"resource_metadata with a user", loopbackOK,
			hostileShape{challenge: func(string) string { return `Bearer resource_metadata="https://` + oauthCanary + `@example.com/m"` }},
			`holds a user name or password`},
		{"malformed challenge", loopbackOK,
			hostileShape{challenge: func(string) string { return `Bearer realm="a" ` + oauthCanary }},
			`the WWW-Authenticate header of its answer is malformed`},
		{"authorization server plain http elsewhere", loopbackOK,
			hostileShape{prm: func(rs, as string) map[string]any {
				return map[string]any{"resource": rs + "/mcp", "authorization_servers": []string{"http://192.168.1.20:8080"}}
			}},
			`authorization_servers[0] (http://192.168.1.20:8080) is not https`},
		{"authorization server on a private address", loopbackOK,
			hostileShape{prm: func(rs, as string) map[string]any {
				return map[string]any{"resource": rs + "/mcp", "authorization_servers": []string{"https://[fd00::1]/"}}
			}},
			`authorization_servers[0] (https://[fd00::1]:443) is a private address`},
		{"discovery over plain http on the server's own loopback origin without the setting", map[string]any{"type": "oauth"},
			hostileShape{challenge: func(string) string { return `Bearer error="invalid_token"` }},
			`is plain http`},
		{"token endpoint on a private address", loopbackOK,
			hostileShape{asMeta: func(as string, m map[string]any) { m["token_endpoint"] = "https://172.16.5.5/token" }},
			`token_endpoint (https://172.16.5.5:443) is a private address`},
		{"revocation endpoint plain http", loopbackOK,
			hostileShape{asMeta: func(as string, m map[string]any) { m["revocation_endpoint"] = "http://example.com/revoke" }},
			`revocation_endpoint (http://example.com:80) is not https`},
		{"device endpoint on carrier-grade NAT", loopbackOK,
			hostileShape{asMeta: func(as string, m map[string]any) {
				m["device_authorization_endpoint"] = "https://100.64.1.1/device"
			}},
			`device_authorization_endpoint (https://100.64.1.1:443) is a carrier-grade NAT address`},
		{"authorization endpoint with a javascript scheme", loopbackOK,
			hostileShape{asMeta: func(as string, m map[string]any) { m["authorization_endpoint"] = "javascript:alert(1)" }},
			`authorization_endpoint is not an https URL`},
	}
	for _, tc := range cases {
		for _, tr := range oauthTransports {
			t.Run(tc.name+"/"+tr, func(t *testing.T) {
				h := newHostileAuth(t, tc.shape)
				h.transport = tr
				err, shown := connectHostile(t, h, tc.auth)
				if err == nil {
					t.Fatal("connected")
				}
				if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "server o: oauth: ") {
					t.Errorf("error does not name the refusal %q:\n%v", tc.want, err)
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
	if n := foreign.requests.Load(); n != 0 {
		t.Errorf("the foreign listener got %d requests", n)
	}
}

// TestOAuthRequiresS256: an authorization server that does not list S256
// is refused before registration or authorization.
func TestOAuthRequiresS256(t *testing.T) {
	t.Parallel()
	for name, methods := range map[string]any{"plain only": []string{"plain"}, "missing": nil, "not a list": "S256", "sse": []string{"plain"}} {
		t.Run(name, func(t *testing.T) {
			h := newHostileAuth(t, hostileShape{asMeta: func(as string, m map[string]any) {
				if methods == nil {
					delete(m, "code_challenge_methods_supported")
				} else {
					m["code_challenge_methods_supported"] = methods
				}
			}})
			if name == "sse" {
				h.transport = "sse"
			}
			err, _ := connectHostile(t, h, loopbackOK)
			if err == nil || !strings.Contains(err.Error(), "code_challenge_methods_supported") {
				t.Fatalf("err = %v", err)
			}
			if n := h.hits["/authorize"].Load() + h.hits["/register"].Load(); n != 0 {
				t.Errorf("%d requests reached registration or authorization", n)
			}
		})
	}
}

// TestOAuthRegistrationAnswersAreChecked: a registration answer without
// our redirect URI, with an unbounded client_id or client_secret, or one
// that is malformed or an error, is refused by field and limit, and no
// error quotes it (the answers hold the canary).
func TestOAuthRegistrationAnswersAreChecked(t *testing.T) {
	t.Parallel()
	raw := func(status int, body string) func(http.ResponseWriter, []string) {
		return func(w http.ResponseWriter, _ []string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			io.WriteString(w, body)
		}
	}
	answer := func(edit func(m map[string]any, redirect []string)) func(http.ResponseWriter, []string) {
		return func(w http.ResponseWriter, redirect []string) {
			m := map[string]any{"client_id": "client-1", "client_secret": oauthCanary, "redirect_uris": redirect}
			edit(m, redirect)
			writeJSON(w, http.StatusCreated, m)
		}
	}
	cases := map[string]struct {
		register func(http.ResponseWriter, []string)
		want     string
	}{
		"another redirect": {answer(func(m map[string]any, _ []string) { m["redirect_uris"] = []string{"https://evil.example/cb"} }),
			"redirect_uris does not hold the redirect URI"},
		"no redirect": {answer(func(m map[string]any, _ []string) { delete(m, "redirect_uris") }),
			"redirect_uris does not hold the redirect URI"},
		"long client_id": {answer(func(m map[string]any, _ []string) { m["client_id"] = strings.Repeat("x", 600) }),
			"client_id is over 512 bytes"},
		"client_id with a control": {answer(func(m map[string]any, _ []string) { m["client_id"] = "a\x1b[31mb" }),
			"client_id holds a byte outside printable ASCII"},
		"long client_secret": {answer(func(m map[string]any, _ []string) { m["client_secret"] = oauthCanary + strings.Repeat("s", 600) }),
			"client_secret is over 512 bytes"},
		"client_secret with a newline": {answer(func(m map[string]any, _ []string) { m["client_secret"] = oauthCanary + "\n" }),
			"client_secret holds a byte outside printable ASCII"},
		"no client_id": {answer(func(m map[string]any, _ []string) { delete(m, "client_id") }),
			"client_id is missing"},
		"malformed": {raw(http.StatusCreated, `{"client_id": "c", "client_secret": "`+oauthCanary+`", "redirect_uris": 7}`),
			"is not a registration"},
		"not json": {raw(http.StatusCreated, `client_secret=`+oauthCanary),
			"is not a registration"},
		"an error answer": {raw(http.StatusBadRequest, `{"error":"invalid_client_metadata","error_description":"`+oauthCanary+`"}`),
			`answered 400 (error "invalid_client_metadata")`},
		"a 500": {raw(http.StatusInternalServerError, `<html>`+oauthCanary+`</html>`),
			"answered 500"},
	}
	cases["another redirect over sse"] = cases["another redirect"]
	cases["long client_secret over sse"] = cases["long client_secret"]
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := newHostileAuth(t, hostileShape{register: tc.register})
			if strings.HasSuffix(name, " over sse") {
				h.transport = "sse"
			}
			err, shown := connectHostile(t, h, loopbackOK)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if strings.Contains(shown, oauthCanary) {
				t.Errorf("the canary shows:\n%s", shown)
			}
			if n := h.hits["/authorize"].Load(); n != 0 {
				t.Errorf("the authorization endpoint was visited %d times", n)
			}
		})
	}
}

// TestOAuthTokenErrorsAreNotQuoted: the token endpoint's error answer
// shows as its error code only.
func TestOAuthTokenErrorsAreNotQuoted(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		token func(http.ResponseWriter)
		want  string
	}{
		"described": {func(w http.ResponseWriter) {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid_grant", "error_description": oauthCanary,
				"error_uri": "https://x.example/" + oauthCanary})
		}, `"invalid_grant"`},
		"html": {func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusBadGateway)
			io.WriteString(w, "<p>"+oauthCanary+"</p>")
		}, "502"},
		"an error with a 200": {func(w http.ResponseWriter) {
			writeJSON(w, http.StatusOK, map[string]any{"error": "x\"" + oauthCanary, "error_description": oauthCanary})
		}, "invalid_response"},
		"form": {func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/x-www-form-urlencoded")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, "error=access_denied&error_description="+oauthCanary)
		}, `"access_denied"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := newHostileAuth(t, hostileShape{token: tc.token})
			err, shown := connectHostile(t, h, loopbackOK)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if h.hits["/token"].Load() == 0 {
				t.Fatal("the token endpoint was not reached")
			}
			if strings.Contains(shown, oauthCanary) {
				t.Errorf("the canary shows:\n%s", shown)
			}
		})
	}
}
