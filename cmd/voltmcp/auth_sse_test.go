package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voltmcp/voltmcp/internal/oauthtest"
)

// setTransport sets the transport of server id in the user config that
// oauthServers wrote under home.
func setTransport(t *testing.T, home, id, transport string) {
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
	srv := doc["servers"].(map[string]any)[id].(map[string]any)
	if transport == "" {
		delete(srv, "transport")
	} else {
		srv["transport"] = transport
	}
	data, _ = json.Marshal(doc)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestAuthOverSSE logs in to an MCP server that speaks only the legacy
// SSE transport, then calls it, with "transport": "sse" and with no
// transport (Streamable HTTP falling back to SSE): the stream's GET and
// the POSTs to its endpoint carry the token, a 401 on the GET starts the
// same authorization as over Streamable HTTP, and no token shows.
func TestAuthOverSSE(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"sse", ""} {
		name := transport
		if name == "" {
			name = "auto"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			o := oauthtest.New(t, &oauthtest.Options{SSE: true})
			home, env := oauthServers(t, nil, map[string]*oauthtest.Server{"o": o}, nil)
			setTransport(t, home, "o", transport)
			var outputs []string
			authURL, wait := startAuth(t, env, "o", "--no-browser")
			if authURL == "" {
				r := wait()
				t.Fatalf("auth printed no URL:\n%s", r)
			}
			if code, _ := visit(t, approve(t, authURL), ""); code != http.StatusOK {
				t.Errorf("callback answered %d", code)
			}
			r := wait()
			outputs = append(outputs, r.stdout, r.stderr)
			if r.code != exitOK || !strings.Contains(r.stdout, "Server o is authenticated: ") || !strings.Contains(r.stdout, "status ready") {
				t.Fatalf("auth:\n%s", r)
			}
			if req := o.Requests()[0]; req.Resource != o.MCPURL || req.ChallengeMethod != "S256" {
				t.Errorf("authorization request %+v, want the SSE URL as the resource", req)
			}
			r = runCLI(t, env, "call", "o", "echo", "--args", `{"text": "over sse"}`)
			outputs = append(outputs, r.stdout, r.stderr)
			if r.code != exitOK || !strings.Contains(r.stdout, "over sse") {
				t.Fatalf("call:\n%s", r)
			}
			if o.Authorizes.Load() != 1 || o.Exchanges.Load() != 1 {
				t.Errorf("%d authorizations, %d exchanges; want 1 each", o.Authorizes.Load(), o.Exchanges.Load())
			}
			r = runCLI(t, env, "logout", "o")
			outputs = append(outputs, r.stdout, r.stderr)
			if r.code != exitOK || !strings.Contains(r.stdout, "revoked") {
				t.Fatalf("logout:\n%s", r)
			}
			r = runCLI(t, env, "call", "o", "echo", "--args", `{"text": "x"}`)
			outputs = append(outputs, r.stdout, r.stderr)
			if r.code == exitOK || !strings.Contains(r.stdout+r.stderr, "voltmcp auth o") {
				t.Errorf("call after logout:\n%s", r)
			}
			outputs = append(outputs, agentFiles(t, home))
			for _, text := range outputs {
				if leak := o.Leaked(text); leak != "" {
					t.Errorf("an output shows %s:\n%s", leak, text)
				}
			}
		})
	}
}
