package main

import (
	"context"
	"github.com/voltmcp/voltmcp/internal/testwait"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// offHome returns a home whose user file says settings.enabled: false,
// and that file.
func offHome(t *testing.T) (home, file string) {
	t.Helper()
	home = t.TempDir()
	file = filepath.Join(home, ".volt", "agent", "mcp.json")
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("{\n  \"version\": 1,\n  \"settings\": {\"enabled\": false}\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return home, file
}

// TestEnabledFalseServeStdio runs `voltmcp serve` as its own process
// under settings.enabled: false: a go-sdk client lists no tool, the
// initialize result's instructions say why and name the file, and serve
// says so once on stderr.
func TestEnabledFalseServeStdio(t *testing.T) {
	home, file := offHome(t)
	project := benchProject(t)
	ctx, cancel := context.WithDeadline(context.Background(), testwait.Deadline(t))
	defer cancel()
	serve := cliCommand("serve", "--home", home, "--project", project, "--approve")
	var stderr strings.Builder
	serve.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: serve}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkOffSession(ctx, t, cs, file)
	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	waitExited(ctx, t, serve)
	if n := strings.Count(stderr.String(), "settings.enabled: false in "+file); n != 1 {
		t.Errorf("serve's stderr says it %d times, want once:\n%s", n, stderr.String())
	}
}

// TestEnabledFalseServeHTTP is TestEnabledFalseServeStdio over
// `voltmcp serve --http`.
func TestEnabledFalseServeHTTP(t *testing.T) {
	home, file := offHome(t)
	url, tokenFile, stderr := startServeHTTP(t, home, benchProject(t))
	if url == "" {
		t.Fatalf("serve --http did not start:\n%s", stderr)
	}
	if !strings.Contains(stderr, "voltmcp serve: voltmcp is turned off by settings.enabled: false in "+file) {
		t.Errorf("serve's stderr does not say it is off:\n%s", stderr)
	}
	b, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithDeadline(context.Background(), testwait.Deadline(t))
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: headerTransport{"Authorization", "Bearer " + strings.TrimSpace(string(b))}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	checkOffSession(ctx, t, cs, file)
}

// checkOffSession checks what a client of a serve that is turned off by
// file sees: instructions that say why, no tools, and a call of the mcp
// tool refused.
func checkOffSession(ctx context.Context, t *testing.T, cs *mcp.ClientSession, file string) {
	t.Helper()
	ins := cs.InitializeResult().Instructions
	if !strings.Contains(ins, "settings.enabled: false in "+file) || !strings.Contains(ins, "set it to true") {
		t.Errorf("instructions = %q", ins)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) != 0 {
		t.Errorf("tools = %v, want none", tools.Tools)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp", Arguments: map[string]any{"action": "search", "query": "echo"}})
	if err == nil && !res.IsError {
		t.Errorf("a call of the mcp tool was answered: %+v", res)
	}
}

// TestEnabledFalseCLI checks the CLI under settings.enabled: false: the
// gateway commands refuse with the reason and a failure's exit code;
// status and servers say the gateway is off.
func TestEnabledFalseCLI(t *testing.T) {
	t.Parallel()
	home, file := offHome(t)
	project := benchProject(t)
	for _, args := range [][]string{
		{"call", "up", "echo", "--args", `{"text":"x"}`},
		{"search", "echo"},
		{"describe", "up", "echo"},
		{"connect", "up"},
	} {
		r := runCLI(t, nil, append(args, "--home", home, "--project", project, "--approve")...)
		if r.code != exitFailure || !strings.Contains(r.stderr, "voltmcp "+args[0]+": voltmcp is turned off by settings.enabled: false in "+file) || r.stdout != "" {
			t.Errorf("%s: want exit %d naming the setting\n%s", args[0], exitFailure, r)
		}
	}
	r := runCLI(t, nil, "status", "--json", "--home", home, "--project", project, "--approve")
	if r.code != exitOK || !strings.Contains(r.stdout, `"enabled": false`) || !strings.Contains(r.stdout, "turned off by settings.enabled: false") {
		t.Errorf("status does not say the gateway is off\n%s", r)
	}
	r = runCLI(t, nil, "servers", "--home", home, "--project", project, "--approve")
	if r.code != exitOK || !strings.HasPrefix(r.stdout, "voltmcp is turned off by settings.enabled: false in "+file) || !strings.Contains(r.stdout, "up") {
		t.Errorf("servers does not say the gateway is off\n%s", r)
	}
}
