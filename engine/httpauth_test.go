package engine

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/internal/testwait"
)

// testToken is the bearer token of the tests' HTTP handlers.
const testToken = "dGVzdC10b2tlbi1vZi10aGUtaHR0cC1oYW5kbGVyLTAxMjM0NQ"

// bearerClient is an HTTP client that sends token as a bearer credential.
func bearerClient(token string) *http.Client {
	return &http.Client{Transport: bearerTransport{token: token}}
}

type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestHTTPHandlerServesOnlyTheTokenHolder sends requests to the gateway's
// HTTP handler on a real loopback listener: only those with the bearer
// token, a loopback Host and no foreign Origin get through.
func TestHTTPHandlerServesOnlyTheTokenHolder(t *testing.T) {
	t.Parallel()
	e := start(t, workspace(t, map[string]server{"s": stdio("behave", nil)}, nil))
	hs := httptest.NewServer(e.HTTPHandler(testToken))
	defer hs.Close()
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	post := func(t *testing.T, edit func(*http.Request)) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, hs.URL, strings.NewReader(initialize))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		edit(req)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
			// End the session, as a client does.
			del, _ := http.NewRequest(http.MethodDelete, hs.URL, nil)
			del.Header.Set("Mcp-Session-Id", id)
			del.Header.Set("Authorization", "Bearer "+testToken)
			if dr, err := http.DefaultClient.Do(del); err == nil {
				dr.Body.Close()
			}
		}
		return resp, string(body)
	}
	wrong := "Bearer " + strings.ToUpper(testToken[:1]) + testToken[1:]
	for _, c := range []struct {
		name string
		edit func(*http.Request)
		want int
	}{
		{"no credential", func(*http.Request) {}, http.StatusUnauthorized},
		{"wrong token", func(r *http.Request) { r.Header.Set("Authorization", wrong) }, http.StatusUnauthorized},
		{"token prefix", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+testToken[:20]) }, http.StatusUnauthorized},
		{"token as basic", func(r *http.Request) { r.Header.Set("Authorization", "Basic "+testToken) }, http.StatusUnauthorized},
		{"token in the query", func(r *http.Request) { r.URL.RawQuery = "access_token=" + testToken }, http.StatusUnauthorized},
		{"two credentials", func(r *http.Request) {
			r.Header.Add("Authorization", "Bearer "+testToken)
			r.Header.Add("Authorization", wrong)
		}, http.StatusUnauthorized},
		{"foreign Host", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+testToken); r.Host = "evil.example:80" }, http.StatusForbidden},
		{"rebinding Host and Origin", func(r *http.Request) {
			r.Header.Set("Authorization", "Bearer "+testToken)
			r.Host = "evil.example:" + hs.Listener.Addr().String()[strings.LastIndex(hs.Listener.Addr().String(), ":")+1:]
			r.Header.Set("Origin", "http://"+r.Host)
		}, http.StatusForbidden},
		{"foreign Origin", func(r *http.Request) {
			r.Header.Set("Authorization", "Bearer "+testToken)
			r.Header.Set("Origin", "https://evil.example")
		}, http.StatusForbidden},
		{"loopback Origin on another port", func(r *http.Request) {
			r.Header.Set("Authorization", "Bearer "+testToken)
			r.Header.Set("Origin", "http://127.0.0.1:1")
			r.Header.Set("Sec-Fetch-Site", "cross-site")
		}, http.StatusForbidden},
		{"the token", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+testToken) }, http.StatusOK},
		{"the token, scheme in lower case", func(r *http.Request) { r.Header.Set("Authorization", "bearer "+testToken) }, http.StatusOK},
		{"the token, same-origin browser", func(r *http.Request) {
			r.Header.Set("Authorization", "Bearer "+testToken)
			r.Header.Set("Origin", hs.URL)
			r.Header.Set("Sec-Fetch-Site", "same-origin")
		}, http.StatusOK},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, body := post(t, c.edit)
			if resp.StatusCode != c.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.want, body)
			}
			if c.want == http.StatusUnauthorized && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("WWW-Authenticate = %q", resp.Header.Get("WWW-Authenticate"))
			}
			if c.want != http.StatusOK && strings.Contains(body, testToken[:20]) {
				t.Errorf("the refusal quotes the token: %s", body)
			}
		})
	}

	// An empty token refuses everyone, even a request with an empty
	// bearer credential.
	empty := httptest.NewServer(e.HTTPHandler(""))
	defer empty.Close()
	req, _ := http.NewRequest(http.MethodPost, empty.URL, strings.NewReader(initialize))
	req.Header.Set("Authorization", "Bearer ")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("empty token: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	// The SDK's client with the token holds a session and calls a tool.
	ctx := testwait.Context(t)
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	if cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL}, nil); err == nil {
		cs.Close()
		t.Error("a client without the token connected")
	}
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: bearerClient(testToken)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp", Arguments: map[string]any{"action": "call", "server": "s", "tool": "echo", "arguments": map[string]any{"text": "owner"}}})
	if err != nil || res.IsError || text(res) != "owner" {
		t.Fatalf("call with the token: %v %v", res, err)
	}
}
