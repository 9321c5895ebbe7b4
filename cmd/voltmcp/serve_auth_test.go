package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/internal/oauthtest"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// agentClient is what a test's agent does with elicitations: it
// declares URL mode when urlMode, and answers each with elicit (nil:
// no elicitation capability at all).
type agentClient struct {
	urlMode  bool
	elicit   func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)
	complete chan string // the elicitationIds of notifications/elicitation/complete
}

// options are the go-sdk client's options that make it behave as a.
func (a *agentClient) options() *mcp.ClientOptions {
	opts := &mcp.ClientOptions{}
	if a.elicit != nil {
		opts.ElicitationHandler = a.elicit
		if a.urlMode {
			opts.Capabilities = &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}}
		}
	}
	if a.complete != nil {
		opts.ElicitationCompleteHandler = func(_ context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
			a.complete <- req.Params.ElicitationID
		}
	}
	return opts
}

// serveAgent starts `voltmcp serve` over stdio on home as its own
// process, connected to a go-sdk client that behaves as a, on protocol
// 2025-11-25, and returns the session and serve's stderr. The session
// closes when the test ends.
func serveAgent(t *testing.T, home string, a *agentClient) (*mcp.ClientSession, *syncBuffer) {
	t.Helper()
	cmd := cliCommand("serve", "--home", home, "--project", t.TempDir(), "--approve")
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1.0.0"}, a.options())
	cs, err := client.Connect(testwait.Context(t), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, stderr
}

// withSettings adds settings to the user config oauthServers wrote.
func withSettings(t *testing.T, home string, settings map[string]any) {
	t.Helper()
	path := filepath.Join(home, ".volt", "agent", "mcp.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	doc["settings"] = settings
	data, _ = json.Marshal(doc)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// mcpAnswer is one answer of the mcp tool: its text, whether it is an
// error, and its structured content.
type mcpAnswer struct {
	text    string
	isError bool
	data    map[string]any
}

func callMCP(t *testing.T, cs *mcp.ClientSession, args map[string]any) mcpAnswer {
	t.Helper()
	res, err := cs.CallTool(testwait.Context(t), &mcp.CallToolParams{Name: "mcp", Arguments: args})
	if err != nil || len(res.Content) == 0 {
		t.Fatalf("%v: %v %+v", args, err, res)
	}
	a := mcpAnswer{text: res.Content[0].(*mcp.TextContent).Text, isError: res.IsError}
	if raw, err := json.Marshal(res.StructuredContent); err == nil {
		_ = json.Unmarshal(raw, &a.data)
	}
	return a
}

// serverState returns the status and lastError of server id through the
// mcp tool's status action.
func serverState(t *testing.T, cs *mcp.ClientSession, id string) (status, lastError string) {
	t.Helper()
	a := callMCP(t, cs, map[string]any{"action": "status", "server": id})
	status, _ = a.data["status"].(string)
	lastError, _ = a.data["lastError"].(string)
	return status, lastError
}

// openInBrowser visits u as a browser would, following the authorization
// server's redirect to serve's callback listener, and returns the
// callback's page.
func openInBrowser(u string) (int, string, error) {
	resp, err := http.Get(u)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), nil
}

func tokenFileOf(home, id string) string {
	return filepath.Join(home, ".volt", "agent", "mcp", "auth", id+".json")
}

// TestServeOffersLoginByURLElicitation drives `voltmcp serve` over stdio
// with a go-sdk client that declares URL-mode elicitation: a call to an
// OAuth server that needs a login offers the authorization URL to the
// client (mode "url", a message naming the server and the authorization
// server's page), while the server is authenticating; the client
// "opens" it (an http.Client follows the authorization server's
// redirect to serve's callback listener) and accepts, the original call
// then succeeds, and so does a call made meanwhile, which waits for the
// login in progress; the client gets notifications/elicitation/complete,
// the server is ready, and the next call is not asked again. No token
// or code reaches the elicitation, an answer, stderr or the agent dir's
// files (the audit log among them).
func TestServeOffersLoginByURLElicitation(t *testing.T) {
	t.Parallel()
	o := oauthtest.New(t, nil)
	home, _ := oauthServers(t, nil, map[string]*oauthtest.Server{"o": o}, nil)
	offered := make(chan *mcp.ElicitParams, 4)
	release := make(chan struct{})
	var mu sync.Mutex
	var pages []string
	a := &agentClient{urlMode: true, complete: make(chan string, 4), elicit: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		offered <- req.Params
		<-release
		code, body, err := openInBrowser(req.Params.URL)
		mu.Lock()
		pages = append(pages, body)
		mu.Unlock()
		if err != nil || code != http.StatusOK || !strings.Contains(body, "authorization received for server o") {
			t.Errorf("the callback answered %d %q (%v)", code, body, err)
		}
		return &mcp.ElicitResult{Action: "accept"}, nil
	}}
	cs, stderr := serveAgent(t, home, a)
	var texts []string
	call := func(text string) chan mcpAnswer {
		done := make(chan mcpAnswer, 1)
		go func() {
			res, err := cs.CallTool(testwait.Context(t), &mcp.CallToolParams{Name: "mcp", Arguments: map[string]any{
				"action": "call", "server": "o", "tool": "echo", "arguments": map[string]any{"text": text}}})
			if err != nil || len(res.Content) == 0 {
				t.Errorf("call: %v %+v", err, res)
				done <- mcpAnswer{isError: true}
				return
			}
			done <- mcpAnswer{text: res.Content[0].(*mcp.TextContent).Text, isError: res.IsError}
		}()
		return done
	}
	done := call("hello")
	var p *mcp.ElicitParams
	select {
	case p = <-offered:
	case r := <-done:
		t.Fatalf("the call ended without an elicitation: %+v\nstderr:\n%s", r, stderr)
	case <-testwait.Context(t).Done():
		t.Fatal("no elicitation")
	}
	if p.Mode != "url" || !strings.HasPrefix(p.URL, o.Issuer+"/") || p.ElicitationID == "" ||
		!strings.Contains(p.Message, "server o needs you to log in") || !strings.Contains(p.Message, "authorization server") {
		t.Errorf("elicitation: %+v", p)
	}
	// While the user is asked, the server is authenticating.
	if st, _ := serverState(t, cs, "o"); st != "authenticating" {
		t.Errorf("status while asked: %s", st)
	}
	// Another call meanwhile waits for the login in progress, and is
	// not offered a second one.
	other := call("meanwhile")
	close(release)
	r := <-done
	texts = append(texts, r.text)
	if r.isError || !strings.Contains(r.text, "hello") {
		t.Fatalf("the original call after the login: %+v\nstderr:\n%s", r, stderr)
	}
	if r := <-other; r.isError || !strings.Contains(r.text, "meanwhile") {
		t.Errorf("the call made during the login: %+v", r)
	}
	select {
	case id := <-a.complete:
		if id != p.ElicitationID {
			t.Errorf("elicitation/complete for %q, want %q", id, p.ElicitationID)
		}
	case <-testwait.Context(t).Done():
		t.Error("no notifications/elicitation/complete")
	}
	if st, lastErr := serverState(t, cs, "o"); st != "ready" {
		t.Errorf("status after the login: %s (%s)", st, lastErr)
	}
	if _, err := os.Stat(tokenFileOf(home, "o")); err != nil {
		t.Errorf("no token stored: %v", err)
	}
	// The next call uses the token: nothing is offered again.
	again := callMCP(t, cs, map[string]any{"action": "call", "server": "o", "tool": "echo", "arguments": map[string]any{"text": "again"}})
	texts = append(texts, again.text)
	if again.isError || !strings.Contains(again.text, "again") || len(offered) != 0 || o.Authorizes.Load() != 1 {
		t.Errorf("second call: %+v, %d more offers, %d authorizations", again, len(offered), o.Authorizes.Load())
	}
	cs.Close()
	mu.Lock()
	defer mu.Unlock()
	all := strings.Join(append(append(texts, pages...), p.Message, p.URL, stderr.String(), agentFiles(t, home)), "\n")
	if leak := o.Leaked(all); leak != "" {
		t.Errorf("a token or code leaked: %q", leak)
	}
}

// TestServeLoginDeclinedOrNotOffered: a client that declines the URL
// elicitation leaves the server needs_auth, the answer and lastError
// naming the decline and voltmcp auth o, and no token stored; a client
// that cancels, likewise; one that accepts and never comes back runs
// into authTimeoutMs, named; a client without URL mode (form only, or
// no elicitation at all) is offered nothing, and a call, a describe of
// the never-listed server and a connect each answer with `voltmcp auth
// o`; an authorization endpoint that is not https (nor loopback) is
// never offered, and the answer names it.
func TestServeLoginDeclinedOrNotOffered(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		a        *agentClient
		action   string // the client's answer to an elicitation
		offered  bool   // whether it is asked
		opts     *oauthtest.Options
		settings map[string]any
		answers  []string // what every answer and lastError holds
	}{
		{name: "declined", a: &agentClient{urlMode: true}, action: "decline", offered: true,
			answers: []string{"the login was declined in the client", "log in with `voltmcp auth o`"}},
		{name: "cancelled", a: &agentClient{urlMode: true}, action: "cancel", offered: true,
			answers: []string{"the login was cancelled in the client", "log in with `voltmcp auth o`"}},
		{name: "timeout", a: &agentClient{urlMode: true}, action: "accept", offered: true, settings: map[string]any{"authTimeoutMs": 1000},
			answers: []string{"no authorization after 1s (authTimeoutMs)", "the browser never returned"}},
		{name: "form only", a: &agentClient{}, action: "accept",
			answers: []string{"authorization required for server o: log in with `voltmcp auth o`", "does not support URL-mode elicitation"}},
		{name: "no elicitation", a: &agentClient{},
			answers: []string{"authorization required for server o: log in with `voltmcp auth o`", "does not support URL-mode elicitation"}},
		{name: "not https", a: &agentClient{urlMode: true}, action: "accept", opts: &oauthtest.Options{AuthorizationEndpoint: "http://auth.example.com/authorize"},
			answers: []string{"authorization_endpoint (http://auth.example.com:80) is not https"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := oauthtest.New(t, tc.opts)
			home, _ := oauthServers(t, nil, map[string]*oauthtest.Server{"o": o}, nil)
			if tc.settings != nil {
				withSettings(t, home, tc.settings)
			}
			var mu sync.Mutex
			var offers []*mcp.ElicitParams
			if tc.action != "" {
				tc.a.elicit = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					mu.Lock()
					offers = append(offers, req.Params)
					mu.Unlock()
					return &mcp.ElicitResult{Action: tc.action}, nil
				}
			}
			cs, stderr := serveAgent(t, home, tc.a)
			var texts []string
			check := func(what, text string) {
				t.Helper()
				texts = append(texts, text)
				for _, want := range tc.answers {
					if !strings.Contains(text, want) {
						t.Errorf("%s: want %q in:\n%s", what, want, text)
					}
				}
			}
			r := callMCP(t, cs, map[string]any{"action": "call", "server": "o", "tool": "echo", "arguments": map[string]any{"text": "x"}})
			if !r.isError {
				t.Fatalf("call answered %+v", r)
			}
			check("call", r.text)
			st, lastErr := serverState(t, cs, "o")
			if st != "needs_auth" {
				t.Errorf("status %s, want needs_auth (%s)", st, lastErr)
			}
			check("lastError", lastErr)
			if !tc.offered {
				// Every way in says so: describe of the never-listed
				// server, and connect.
				d := callMCP(t, cs, map[string]any{"action": "describe", "server": "o", "tool": "echo"})
				check("describe", d.text)
				c := callMCP(t, cs, map[string]any{"action": "connect", "server": "o"})
				check("connect", c.text)
				if !d.isError || !c.isError {
					t.Errorf("describe %+v, connect %+v", d, c)
				}
			}
			mu.Lock()
			n := len(offers)
			mu.Unlock()
			if want := map[bool]int{true: 1, false: 0}[tc.offered]; n != want {
				t.Errorf("%d elicitations, want %d", n, want)
			}
			if _, err := os.Stat(tokenFileOf(home, "o")); !os.IsNotExist(err) || o.Exchanges.Load() != 0 {
				t.Errorf("a token was stored or exchanged: %v, %d exchanges", err, o.Exchanges.Load())
			}
			cs.Close()
			if leak := o.Leaked(strings.Join(append(texts, stderr.String(), agentFiles(t, home)), "\n")); leak != "" {
				t.Errorf("a token or code leaked: %q", leak)
			}
		})
	}
}

// TestServeHTTPOffersLogin runs `voltmcp serve --http` with a go-sdk
// client that declares URL-mode elicitation and opens what it is
// offered: a call with _meta (which the SDK's handler answers) and one
// without (the lean path) each get their server's login offered, on the
// client's own session, and succeed.
func TestServeHTTPOffersLogin(t *testing.T) {
	t.Parallel()
	o, p := oauthtest.New(t, nil), oauthtest.New(t, nil)
	home, _ := oauthServers(t, nil, map[string]*oauthtest.Server{"o": o, "p": p}, nil)
	url, tokenFile, stderr := startServeHTTP(t, home, t.TempDir())
	if url == "" {
		t.Fatalf("serve did not start:\n%s", stderr)
	}
	token, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var offered []string
	a := &agentClient{urlMode: true, elicit: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		mu.Lock()
		offered = append(offered, req.Params.URL)
		mu.Unlock()
		if code, body, err := openInBrowser(req.Params.URL); err != nil || code != http.StatusOK {
			t.Errorf("the callback answered %d %q (%v)", code, body, err)
		}
		return &mcp.ElicitResult{Action: "accept"}, nil
	}}
	client := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1.0.0"}, a.options())
	cs, err := client.Connect(testwait.Context(t), &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: headerTransport{"Authorization", "Bearer " + strings.TrimSpace(string(token))}}},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for _, c := range []struct {
		server string
		meta   mcp.Meta
	}{{"o", mcp.Meta{"progressToken": "sdk-path"}}, {"p", nil}} {
		res, err := cs.CallTool(testwait.Context(t), &mcp.CallToolParams{Meta: c.meta, Name: "mcp", Arguments: map[string]any{
			"action": "call", "server": c.server, "tool": "echo", "arguments": map[string]any{"text": "hi " + c.server}}})
		if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "hi "+c.server) {
			t.Fatalf("call %s: %v %+v", c.server, err, res)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(offered) != 2 || !strings.HasPrefix(offered[0], o.Issuer+"/") || !strings.HasPrefix(offered[1], p.Issuer+"/") {
		t.Errorf("offered %q", offered)
	}
}
