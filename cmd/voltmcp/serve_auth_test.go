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

// serveAgent starts `voltmcp serve` over stdio on home as its own
// process, connected to a go-sdk client that behaves as a, on protocol
// 2025-11-25, and returns the session and serve's stderr. The session
// closes when the test ends.
func serveAgent(t *testing.T, home string, a *agentClient) (*mcp.ClientSession, *syncBuffer) {
	t.Helper()
	cmd := cliCommand("serve", "--home", home, "--project", t.TempDir(), "--approve")
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
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
	client := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1.0.0"}, opts)
	cs, err := client.Connect(testwait.Context(t), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, stderr
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
// then succeeds, the client gets notifications/elicitation/complete,
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
	done := make(chan mcpAnswer, 1)
	go func() {
		res, err := cs.CallTool(testwait.Context(t), &mcp.CallToolParams{Name: "mcp", Arguments: map[string]any{
			"action": "call", "server": "o", "tool": "echo", "arguments": map[string]any{"text": "hello"}}})
		if err != nil || len(res.Content) == 0 {
			t.Errorf("call: %v %+v", err, res)
			done <- mcpAnswer{isError: true}
			return
		}
		done <- mcpAnswer{text: res.Content[0].(*mcp.TextContent).Text, isError: res.IsError}
	}()
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
	close(release)
	r := <-done
	texts = append(texts, r.text)
	if r.isError || !strings.Contains(r.text, "hello") {
		t.Fatalf("the original call after the login: %+v\nstderr:\n%s", r, stderr)
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
// that cancels, likewise; a client without URL mode (form only, or no
// elicitation at all) is offered nothing, and a call, a describe of the
// never-listed server and a connect each answer with `voltmcp auth o`;
// an authorization endpoint that is not https (nor loopback) is never
// offered, and the answer names it.
func TestServeLoginDeclinedOrNotOffered(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		a       *agentClient
		opts    *oauthtest.Options
		answers []string // what every answer and lastError holds
	}{
		{name: "declined", a: &agentClient{urlMode: true}, answers: []string{"the login was declined in the client", "log in with `voltmcp auth o`"}},
		{name: "cancelled", a: &agentClient{urlMode: true}, answers: []string{"the login was cancelled in the client", "log in with `voltmcp auth o`"}},
		{name: "form only", a: &agentClient{}, answers: []string{"authorization required for server o: log in with `voltmcp auth o`", "does not support URL-mode elicitation"}},
		{name: "no elicitation", a: &agentClient{}, answers: []string{"authorization required for server o: log in with `voltmcp auth o`", "does not support URL-mode elicitation"}},
		{name: "not https", a: &agentClient{urlMode: true}, opts: &oauthtest.Options{AuthorizationEndpoint: "http://auth.example.com/authorize"},
			answers: []string{"authorization_endpoint"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := oauthtest.New(t, tc.opts)
			home, _ := oauthServers(t, nil, map[string]*oauthtest.Server{"o": o}, nil)
			var mu sync.Mutex
			var offers []*mcp.ElicitParams
			action := map[string]string{"declined": "decline", "cancelled": "cancel"}[tc.name]
			if tc.name != "no elicitation" {
				tc.a.elicit = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					mu.Lock()
					offers = append(offers, req.Params)
					mu.Unlock()
					if action == "" {
						return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
					}
					return &mcp.ElicitResult{Action: action}, nil
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
			if action == "" {
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
			if want := map[bool]int{true: 1, false: 0}[action != ""]; n != want {
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
