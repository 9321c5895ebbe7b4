package main

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/internal/testwait"
)

// TestServeHTTPRefusesItself: the README's .mcp.json entry for Claude
// Code points at serve --http's own URL, with the token, and voltmcp
// reads that file as a project layer. serve listens on 127.0.0.1 while
// the entry spells localhost: serve does not take itself as one of its
// servers (no call loops back), the agent's connect and status name the
// cause and the file, and the other servers work.
func TestServeHTTPRefusesItself(t *testing.T) {
	home, project := t.TempDir(), benchProject(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	// The token serve will use, known beforehand, as a client's
	// environment holds it.
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	token := base64.RawURLEncoding.EncodeToString(raw)
	tokenFile := filepath.Join(home, ".volt", "agent", "http", "token")
	if err := os.MkdirAll(filepath.Dir(tokenFile), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	entry := map[string]any{"mcpServers": map[string]any{"voltmcp": map[string]any{"type": "http",
		"url": "http://localhost:" + strconv.Itoa(port) + "/", "headers": map[string]any{"Authorization": "Bearer ${VOLTMCP_TOKEN}"}}}}
	b, _ := json.Marshal(entry)
	mcpJSON := filepath.Join(project, ".mcp.json")
	if err := os.WriteFile(mcpJSON, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("VOLTMCP_TOKEN", token)

	url, _, stderr := startServe(t, home, project, "--http", "127.0.0.1:"+strconv.Itoa(port))
	if url == "" {
		t.Fatalf("serve did not start:\n%s", stderr)
	}
	ctx := testwait.Context(t)
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: headerTransport{"Authorization", "Bearer " + token}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	gw := func(in map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp", Arguments: in})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	// The entry carries serve's token: refused before anything is sent.
	want := "server voltmcp is this gateway itself: its Authorization header carries the token of this user's voltmcp serve --http"
	// The listing at start finds it so, once the listener is up.
	deadline := testwait.Deadline(t)
	for res := gw(map[string]any{"action": "status", "server": "voltmcp"}); !strings.Contains(resultText(res), want); res = gw(map[string]any{"action": "status", "server": "voltmcp"}) {
		if time.Now().After(deadline) {
			t.Fatalf("status after the listing at start: %s", resultText(res))
		}
		time.Sleep(50 * time.Millisecond)
	}
	res := gw(map[string]any{"action": "connect", "server": "voltmcp"})
	if !res.IsError || !strings.Contains(resultText(res), want) || !strings.Contains(resultText(res), mcpJSON) {
		t.Fatalf("connect to itself: error %t, %s", res.IsError, resultText(res))
	}
	if strings.Contains(resultText(res), token) {
		t.Fatal("the error shows the token")
	}
	res = gw(map[string]any{"action": "call", "server": "voltmcp", "tool": "mcp", "arguments": map[string]any{"action": "status"}})
	if !res.IsError || !strings.Contains(resultText(res), "is this gateway itself") {
		t.Errorf("a call through itself: error %t, %s", res.IsError, resultText(res))
	}
	res = gw(map[string]any{"action": "status", "server": "voltmcp"})
	if !strings.Contains(resultText(res), "is this gateway itself") {
		t.Errorf("status: %s", resultText(res))
	}
	callEcho(ctx, t, cs, "the others work")

	// The CLI of the same user refuses it too, and caches nothing of it;
	// the error says how to keep the client's entry and have voltmcp
	// leave it.
	env := fakeEnv(t, map[string]string{"HOME": home, "VOLTMCP_TOKEN": token})
	r := runCLI(t, env, "refresh", "voltmcp", "--home", home, "--project", project, "--approve")
	if r.code == exitOK || !strings.Contains(r.stdout+r.stderr, want) || !strings.Contains(r.stdout+r.stderr, "'voltmcp disable voltmcp'") || strings.Contains(r.stdout+r.stderr, token) {
		t.Errorf("refresh of the gateway's own entry from the CLI:\n%s", r)
	}
	if r := runCLI(t, env, "tools", "voltmcp", "--home", home, "--project", project, "--approve"); !strings.Contains(r.stderr, "never been listed") {
		t.Errorf("tools of the gateway's own entry after refresh:\n%s", r)
	}
	if r := runCLI(t, env, "disable", "voltmcp", "--home", home, "--project", project, "--approve"); r.code != exitOK {
		t.Errorf("disable voltmcp:\n%s", r)
	}
	if data, _ := os.ReadFile(mcpJSON); string(data) != string(b) {
		t.Errorf("disable changed the client's .mcp.json:\n%s", data)
	}
}

// resultText is the text of a result's content.
func resultText(res *mcp.CallToolResult) string {
	var out []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			out = append(out, tc.Text)
		}
	}
	return strings.Join(out, "\n")
}
