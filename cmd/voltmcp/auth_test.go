package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/internal/oauthtest"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// oauthServers writes a user config under a new home whose servers are
// the given OAuth test servers, each with allowInsecureLoopback and the
// extra auth fields, and returns the home and the environment.
func oauthServers(t *testing.T, vars map[string]string, servers map[string]*oauthtest.Server, extra map[string]map[string]any) (string, func(string) string) {
	t.Helper()
	home := t.TempDir()
	doc := map[string]any{"version": 1, "servers": map[string]any{}}
	for id, s := range servers {
		a := map[string]any{"type": "oauth", "allowInsecureLoopback": true}
		for k, v := range extra[id] {
			a[k] = v
		}
		doc["servers"].(map[string]any)[id] = map[string]any{"url": s.MCPURL, "transport": "streamable-http", "auth": a}
	}
	data, _ := json.Marshal(doc)
	dir := filepath.Join(home, ".volt", "agent")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "mcp.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": home, "PATH": os.Getenv("PATH")}
	for k, v := range vars {
		env[k] = v
	}
	return home, fakeEnv(t, env)
}

// urlWatcher is the stdout of a running voltmcp auth: it hands over the
// authorization URL once printed.
type urlWatcher struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	sent bool
	url  chan string
}

func (w *urlWatcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.sent {
		for _, line := range strings.Split(w.buf.String(), "\n") {
			if strings.HasPrefix(line, "  http") {
				w.sent = true
				w.url <- strings.TrimSpace(line)
				break
			}
		}
	}
	return len(p), nil
}

func (w *urlWatcher) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// startAuth runs voltmcp auth with args in the background and returns
// the authorization URL it printed and a function that waits for its
// end.
func startAuth(t *testing.T, env func(string) string, args ...string) (string, func() cliResult) {
	t.Helper()
	w := &urlWatcher{url: make(chan string, 1)}
	done := make(chan cliResult, 1)
	go func() {
		r := runCLICtx(t, testwait.Context(t), env, w, append([]string{"auth"}, args...)...)
		r.stdout = w.String()
		done <- r
	}()
	wait := func() cliResult {
		select {
		case r := <-done:
			return r
		case <-time.After(time.Until(testwait.Deadline(t))):
			t.Fatalf("voltmcp auth did not end; stdout so far:\n%s", w.String())
			return cliResult{}
		}
	}
	select {
	case u := <-w.url:
		return u, wait
	case r := <-done:
		done <- r
		return "", wait
	case <-time.After(time.Until(testwait.Deadline(t))):
		t.Fatalf("voltmcp auth printed no URL:\n%s", w.String())
		return "", nil
	}
}

// approve visits the authorization URL as a browser would, and returns
// where the authorization server redirects to.
func approve(t *testing.T, authURL string) string {
	t.Helper()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("authorize answered %s", resp.Status)
	}
	return resp.Header.Get("Location")
}

// visit GETs u (with Host host when not ""), returning the status and
// the body, or status 0 when nothing answered.
func visit(t *testing.T, u, host string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// agentFiles returns the text of every file under the agent dir but the
// token files: the config, the caches, the audit log.
func agentFiles(t *testing.T, home string) string {
	var b strings.Builder
	root := filepath.Join(home, ".volt", "agent")
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(p, filepath.Join(root, "mcp", "auth")+string(filepath.Separator)) {
			return nil
		}
		data, _ := os.ReadFile(p)
		b.Write(data)
		return nil
	})
	return b.String()
}

func TestAuthBrowserFlowEndToEnd(t *testing.T) {
	t.Parallel()
	o := oauthtest.New(t, nil)
	p := oauthtest.New(t, nil)
	home, env := oauthServers(t, nil, map[string]*oauthtest.Server{"o": o, "p": p},
		map[string]map[string]any{"o": {"scope": "notes:read notes:write"}})
	var outputs []string
	cli := func(args ...string) cliResult {
		r := runCLI(t, env, args...)
		outputs = append(outputs, r.stdout, r.stderr)
		return r
	}
	login := func(id string, s *oauthtest.Server) {
		authURL, wait := startAuth(t, env, id, "--no-browser")
		if code, body := visit(t, approve(t, authURL), ""); code != http.StatusOK || !strings.Contains(body, "authorization received") {
			t.Errorf("callback answered %d %q", code, body)
		}
		r := wait()
		outputs = append(outputs, r.stdout, r.stderr)
		if r.code != exitOK || !strings.Contains(r.stdout, "Server "+id+" is authenticated: ") || !strings.Contains(r.stdout, "status ready") {
			t.Fatalf("auth %s:\n%s", id, r)
		}
	}
	// Before: both need an authorization, and connect says so.
	if r := cli("auth", "--status"); r.code != exitOK || strings.Count(r.stdout, "needs_auth") != 2 {
		t.Fatalf("status before:\n%s", r)
	}
	login("o", o)
	login("p", p)

	// What was asked for: PKCE S256, the resource, the configured scopes.
	req := o.Requests()[0]
	if req.ChallengeMethod != "S256" || req.Resource != o.MCPURL || req.Scope != "notes:read notes:write" && req.Scope != "notes:write notes:read" {
		t.Errorf("authorization request %+v", req)
	}
	if !strings.HasPrefix(req.ClientID, "dcr-") {
		t.Errorf("client %q, want a dynamically registered one", req.ClientID)
	}

	// Used without another login; auth again says it is authenticated already.
	if r := cli("call", "o", "echo", "--args", `{"text": "hello"}`); r.code != exitOK || !strings.Contains(r.stdout, "hello") {
		t.Fatalf("call after auth:\n%s", r)
	}
	if r := cli("auth", "o", "--no-browser"); r.code != exitOK || !strings.Contains(r.stdout, "authenticated already") {
		t.Fatalf("auth when authenticated:\n%s", r)
	}
	if o.Authorizes.Load() != 1 {
		t.Errorf("%d authorizations, want 1", o.Authorizes.Load())
	}
	r := cli("auth", "--status")
	if r.code != exitOK || strings.Count(r.stdout, "authenticated") != 2 || !strings.Contains(r.stdout, "notes:read") {
		t.Fatalf("status after:\n%s", r)
	}
	r = cli("auth", "--status", "o", "--json")
	var infos []struct {
		Server, State string
		Expiry        *time.Time
		Refreshable   bool
	}
	if err := json.Unmarshal([]byte(r.stdout), &infos); err != nil || len(infos) != 1 || infos[0].State != "authenticated" ||
		infos[0].Expiry == nil || !infos[0].Refreshable {
		t.Fatalf("status --json (%v):\n%s", err, r)
	}

	// Logout revokes and removes o's tokens, and leaves p's.
	tokens := o.Issued()
	r = cli("logout", "o")
	if r.code != exitOK || !strings.Contains(r.stdout, "revoked") || r.stderr != "" {
		t.Fatalf("logout:\n%s", r)
	}
	if o.Revocations.Load() == 0 {
		t.Error("the authorization server saw no revocation")
	}
	for _, tok := range tokens {
		if strings.HasPrefix(tok, "at_") && o.Valid(tok) {
			t.Error("an access token is still valid after logout")
		}
	}
	if _, err := os.Stat(filepath.Join(home, ".volt", "agent", "mcp", "auth", "o.json")); !os.IsNotExist(err) {
		t.Errorf("o's token file after logout: %v", err)
	}
	if r := cli("auth", "--status", "o"); !strings.Contains(r.stdout, "needs_auth") {
		t.Errorf("o's status after logout:\n%s", r)
	}
	if r := cli("auth", "--status", "p"); !strings.Contains(r.stdout, "authenticated") {
		t.Errorf("p's status after o's logout:\n%s", r)
	}
	if r := cli("call", "p", "echo", "--args", `{"text": "still"}`); r.code != exitOK || !strings.Contains(r.stdout, "still") {
		t.Errorf("p after o's logout:\n%s", r)
	}
	if r := cli("call", "o", "echo", "--args", `{"text": "x"}`); r.code == exitOK || !strings.Contains(r.stdout+r.stderr, "authorization required for server o: log in with `voltmcp auth o`") {
		t.Errorf("o after its logout:\n%s", r)
	}
	if r := cli("logout", "o"); r.code != exitOK || !strings.Contains(r.stdout, "no stored tokens") {
		t.Errorf("second logout:\n%s", r)
	}

	// No token or code anywhere but in the token files.
	outputs = append(outputs, agentFiles(t, home))
	for _, text := range outputs {
		for _, s := range []*oauthtest.Server{o, p} {
			if leak := s.Leaked(text); leak != "" {
				t.Errorf("an output shows %s:\n%s", leak, text)
			}
		}
	}
}

func TestAuthConfiguredClients(t *testing.T) {
	t.Parallel()
	const secret = "client_secret_canary_0123456789"
	pre := oauthtest.New(t, &oauthtest.Options{ClientID: "voltmcp-test", ClientSecret: secret, NoRegistration: true})
	cimd := oauthtest.New(t, &oauthtest.Options{ClientMetadataDocuments: true})
	home, env := oauthServers(t, map[string]string{"CLIENT_SECRET": secret}, map[string]*oauthtest.Server{"pre": pre, "cimd": cimd},
		map[string]map[string]any{
			"pre":  {"clientId": "voltmcp-test", "clientSecret": "${env:CLIENT_SECRET}", "issuer": pre.Issuer},
			"cimd": {"clientMetadataUrl": "https://client.example/voltmcp.json"},
		})
	for id, want := range map[string]struct {
		s      *oauthtest.Server
		client string
	}{"pre": {pre, "voltmcp-test"}, "cimd": {cimd, "https://client.example/voltmcp.json"}} {
		authURL, wait := startAuth(t, env, id, "--no-browser")
		visit(t, approve(t, authURL), "")
		r := wait()
		if r.code != exitOK {
			t.Fatalf("auth %s:\n%s", id, r)
		}
		if got := want.s.Requests()[0].ClientID; got != want.client {
			t.Errorf("%s: client %q, want %q", id, got, want.client)
		}
		if r := runCLI(t, env, "call", id, "echo", "--args", `{"text": "ok"}`); r.code != exitOK || !strings.Contains(r.stdout, "ok") {
			t.Errorf("call %s:\n%s", id, r)
		}
		r2 := runCLI(t, env, "logout", id)
		if r2.code != exitOK || !strings.Contains(r2.stdout, "revoked") {
			t.Errorf("logout %s:\n%s", id, r2)
		}
		for _, text := range []string{r.stdout, r.stderr, r2.stdout, r2.stderr, agentFiles(t, home)} {
			if strings.Contains(text, secret) || want.s.Leaked(text) != "" {
				t.Errorf("%s: an output shows a secret:\n%s", id, text)
			}
		}
	}
}

func TestAuthCallbackRefusesWhatIsNotTheAnswer(t *testing.T) {
	t.Parallel()
	o := oauthtest.New(t, nil)
	_, env := oauthServers(t, nil, map[string]*oauthtest.Server{"o": o}, nil)
	authURL, wait := startAuth(t, env, "o", "--no-browser")
	good := approve(t, authURL)
	cb, _ := url.Parse(good)

	wrong := *cb
	q := wrong.Query()
	q.Set("state", "not-the-state")
	wrong.RawQuery = q.Encode()
	if code, body := visit(t, wrong.String(), ""); code != http.StatusBadRequest || !strings.Contains(body, "state mismatch") {
		t.Errorf("wrong state: %d %q", code, body)
	}
	other := *cb
	other.Path = "/callback/x"
	if code, _ := visit(t, other.String(), ""); code != http.StatusNotFound {
		t.Errorf("another path: %d", code)
	}
	other.Path = "/"
	if code, _ := visit(t, other.String(), ""); code != http.StatusNotFound {
		t.Errorf("the root: %d", code)
	}
	if code, _ := visit(t, good, "localhost:"+cb.Port()); code != http.StatusMisdirectedRequest {
		t.Errorf("another Host: %d", code)
	}
	noCode := *cb
	noCode.RawQuery = url.Values{"state": {cb.Query().Get("state")}}.Encode()
	if code, _ := visit(t, noCode.String(), ""); code != http.StatusBadRequest {
		t.Errorf("no code: %d", code)
	}
	// None of those ended the wait: the real answer still works, once.
	if code, body := visit(t, good, ""); code != http.StatusOK {
		t.Fatalf("the answer: %d %q", code, body)
	}
	r := wait()
	if r.code != exitOK || !strings.Contains(r.stdout, "is authenticated") {
		t.Fatalf("auth:\n%s", r)
	}
	if code, _ := visit(t, good, ""); code == http.StatusOK {
		t.Error("a second (replayed) callback was accepted")
	}
	if o.Exchanges.Load() != 1 {
		t.Errorf("%d code exchanges, want 1", o.Exchanges.Load())
	}
	if s := o.Leaked(r.stdout + r.stderr); s != "" {
		t.Errorf("output shows %s", s)
	}
}

func TestAuthSecondCallbackWhileAnswered(t *testing.T) {
	t.Parallel()
	cb := &callback{host: "127.0.0.1:1", state: "s", server: "o", done: make(chan string, 1)}
	for i, want := range []int{http.StatusOK, http.StatusConflict} {
		req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:1/callback?state=s&code=c", nil)
		w := &recorder{header: http.Header{}}
		cb.ServeHTTP(w, req)
		if w.status != want {
			t.Errorf("callback %d: %d, want %d", i+1, w.status, want)
		}
	}
	if got := <-cb.done; got != "http://127.0.0.1:1/callback?state=s&code=c" {
		t.Errorf("answer %q", got)
	}
}

type recorder struct {
	header http.Header
	status int
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(p []byte) (int, error) { return len(p), nil }
func (r *recorder) WriteHeader(s int)           { r.status = s }

func TestAuthFailuresAreNamed(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		opts  *oauthtest.Options
		args  []string
		setup func(*oauthtest.Server)
		// act is what the browser does with the authorization URL; nil:
		// the command must end before printing one.
		act  func(t *testing.T, s *oauthtest.Server, authURL string)
		want string
	}{
		"access denied": {setup: func(s *oauthtest.Server) { s.Deny(true) },
			act:  func(t *testing.T, s *oauthtest.Server, u string) { visit(t, approve(t, u), "") },
			want: "the authorization was refused: access_denied"},
		"timeout": {args: []string{"--timeout", "1s"}, // testwait: the timeout under test
			act: func(*testing.T, *oauthtest.Server, string) {}, want: "timed out waiting for the authorization: no redirect to http://127.0.0.1:"},
		"authorization server gone": {act: func(t *testing.T, s *oauthtest.Server, u string) {
			back := approve(t, u)
			s.StopAuthServer()
			visit(t, back, "")
		}, want: "token exchange failed"},
		"token endpoint garbage": {setup: func(s *oauthtest.Server) { s.Garbage(true) },
			act:  func(t *testing.T, s *oauthtest.Server, u string) { visit(t, approve(t, u), "") },
			want: "token exchange failed"},
		"no S256":   {opts: &oauthtest.Options{ChallengeMethods: []string{"plain"}}, want: "S256"},
		"not https": {opts: &oauthtest.Options{AuthorizationEndpoint: "http://auth.example/authorize"}, want: "authorization_endpoint (http://auth.example:80) is not https"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := oauthtest.New(t, tc.opts)
			if tc.setup != nil {
				tc.setup(s)
			}
			home, env := oauthServers(t, nil, map[string]*oauthtest.Server{"o": s}, nil)
			authURL, wait := startAuth(t, env, append([]string{"o", "--no-browser"}, tc.args...)...)
			if tc.act == nil && authURL != "" {
				t.Errorf("printed an authorization URL: %s", authURL)
			}
			if tc.act != nil {
				if authURL == "" {
					t.Fatal("printed no authorization URL")
				}
				tc.act(t, s, authURL)
			}
			r := wait()
			t.Logf("%s", r.stderr)
			if r.code != exitFailure || !strings.Contains(r.stderr, tc.want) || !strings.Contains(r.stderr, "server o") {
				t.Errorf("want exit 3 and %q\n%s", tc.want, r)
			}
			if _, err := os.Stat(filepath.Join(home, ".volt", "agent", "mcp", "auth", "o.json")); !os.IsNotExist(err) {
				t.Errorf("a token file after a failure: %v", err)
			}
			if st := runCLI(t, env, "auth", "--status", "o"); !strings.Contains(st.stdout, "needs_auth") {
				t.Errorf("status:\n%s", st)
			}
			if leak := s.Leaked(r.stdout + r.stderr + agentFiles(t, home)); leak != "" {
				t.Errorf("output shows %s", leak)
			}
		})
	}
}

func TestLogoutWhenTheAuthorizationServerIsGone(t *testing.T) {
	t.Parallel()
	o := oauthtest.New(t, nil)
	home, env := oauthServers(t, nil, map[string]*oauthtest.Server{"o": o}, nil)
	authURL, wait := startAuth(t, env, "o", "--no-browser")
	visit(t, approve(t, authURL), "")
	if r := wait(); r.code != exitOK {
		t.Fatalf("auth:\n%s", r)
	}
	o.StopAuthServer()
	r := runCLI(t, env, "logout", "o")
	if r.code != exitOK || !strings.Contains(r.stderr, "warning: the tokens of server o were removed but not revoked") {
		t.Fatalf("logout:\n%s", r)
	}
	if _, err := os.Stat(filepath.Join(home, ".volt", "agent", "mcp", "auth", "o.json")); !os.IsNotExist(err) {
		t.Errorf("token file after logout: %v", err)
	}
	if leak := o.Leaked(r.stdout + r.stderr); leak != "" {
		t.Errorf("output shows %s", leak)
	}
}

func TestAuthOpensTheBrowserByArgv(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("xdg-open is the opener on linux")
	}
	// A fake xdg-open on PATH records its arguments, one a line.
	bin := t.TempDir()
	record := filepath.Join(bin, "argv")
	script := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > " + record + ".tmp && mv " + record + ".tmp " + record + "\n"
	if err := os.WriteFile(filepath.Join(bin, "xdg-open"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	o := oauthtest.New(t, nil)
	_, env := oauthServers(t, nil, map[string]*oauthtest.Server{"o": o}, nil)
	authURL, wait := startAuth(t, env, "o")
	var argv []byte
	for deadline := testwait.Deadline(t); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if data, err := os.ReadFile(record); err == nil {
			argv = data
			break
		}
	}
	if string(argv) != authURL+"\n" {
		t.Errorf("xdg-open got %q, want the URL as its one argument", argv)
	}
	visit(t, approve(t, authURL), "")
	if r := wait(); r.code != exitOK || strings.Contains(r.stdout, "warning") {
		t.Fatalf("auth:\n%s", r)
	}
}

func TestAuthDoesNotOpenWhatIsNotHTTPS(t *testing.T) {
	t.Parallel()
	for raw, loopback := range map[string]bool{
		"http://auth.example/authorize":    true,
		"http://127.0.0.1:9/authorize":     false,
		"http://10.0.0.1/authorize":        true,
		"javascript:alert(1)":              true,
		"file:///etc/passwd":               true,
		"https:///authorize":               true,
		"https://user:pw@auth.example/":    true,
		"/authorize":                       true,
		"ftp://auth.example/":              true,
		"https://auth.example:notaport/x":  true,
		"HTTPS//auth.example/no-colon":     true,
		"https://auth.example/authorize\n": true,
	} {
		if err := checkOpenable(raw, loopback); err == nil {
			t.Errorf("%q (allowInsecureLoopback %v) would be opened", raw, loopback)
		}
	}
	for raw, loopback := range map[string]bool{"https://auth.example/authorize?x=1": false, "http://127.0.0.1:9/authorize": true, "http://[::1]:9/a": true, "http://localhost:9/a": true} {
		if err := checkOpenable(raw, loopback); err != nil {
			t.Errorf("%q: %v", raw, err)
		}
	}

	// Through Authorize: printed with a warning, never opened.
	var out bytes.Buffer
	opened := 0
	b := &browserAuth{out: &out, timeout: time.Second, open: func(string) error { opened++; return nil }}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the wait ends at once: only what comes before it is under test
	_, err := b.authorize(ctx, "o", "http://auth.example/authorize?state=s&redirect_uri="+url.QueryEscape("http://127.0.0.1:0/callback"))
	if err == nil || opened != 0 || !strings.Contains(out.String(), "warning: not opening it in a browser") || !strings.Contains(out.String(), "http://auth.example/authorize") {
		t.Errorf("err %v, opened %d, output:\n%s", err, opened, out.String())
	}
}
