package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/internal/mcptest"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// TestServeAppliesConfigEdits runs `voltmcp serve` over stdio as its own
// process, then, while it serves, `voltmcp add` writes a server into the
// user file, which did not exist when serve started: the agent's
// list_servers sees the server and a call reaches it, with no restart.
// An edit of that file that does not validate is then not applied: the
// server stays, and serve's stderr names the file, line and field; no
// plugin faulted on the way.
func TestServeAppliesConfigEdits(t *testing.T) {
	home, project := t.TempDir(), benchProject(t)
	ctx, cancel := context.WithDeadline(context.Background(), testwait.Deadline(t))
	defer cancel()
	cmd := cliCommand("serve", "--home", home, "--project", project, "--approve")
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	cs := connectCommand(t, cmd, "2025-11-25")
	gateway := func(args map[string]any) (string, bool) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp", Arguments: args})
		if err != nil || len(res.Content) == 0 {
			t.Fatalf("%v: %v %+v", args, err, res)
		}
		return res.Content[0].(*mcp.TextContent).Text, res.IsError
	}
	type line struct {
		Server      string `json:"server"`
		ConfigError string `json:"configError"`
	}
	entry := func(id string) *line {
		text, isErr := gateway(map[string]any{"action": "list_servers"})
		if isErr {
			t.Fatalf("list_servers: %s", text)
		}
		var l struct {
			Servers []line `json:"servers"`
		}
		if err := json.Unmarshal([]byte(text), &l); err != nil {
			t.Fatalf("list_servers: %v: %s", err, text)
		}
		for _, s := range l.Servers {
			if s.Server == id {
				return &s
			}
		}
		return nil
	}
	listed := func(id string) bool { return entry(id) != nil }
	if !listed("up") {
		t.Fatal("list_servers has no up")
	}

	bin, args, env := mcptest.Command(mcptest.ModeBehave)
	add := []string{"add", "--home", home, "--project", project, "hot"}
	for k, v := range env {
		add = append(add, "--env", k+"="+v)
	}
	add = append(append(add, "--", bin), args...)
	if r := runCLI(t, fakeEnv(t, map[string]string{"HOME": home}), add...); r.code != 0 {
		t.Fatalf("voltmcp add: %s", r)
	}
	testwait.For(t, "list_servers to show the added server", func() bool { return listed("hot") })
	if text, isErr := gateway(map[string]any{"action": "call", "server": "hot", "tool": "echo", "arguments": map[string]any{"text": "hi"}}); isErr {
		t.Fatalf("call of the added server: %s", text)
	}

	user := filepath.Join(home, ".volt", "agent", "mcp.json")
	data, err := os.ReadFile(user)
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(data), `"command":`, `"command": 5, "x":`, 1)
	if err := os.WriteFile(user+".tmp", []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(user+".tmp", user); err != nil {
		t.Fatal(err)
	}
	named := regexp.MustCompile(regexp.QuoteMeta(user) + `:\d+:\d+: error\[[^\]]+\]: servers\.hot\.`)
	testwait.For(t, "serve's stderr to name the invalid edit", func() bool {
		return strings.Contains(stderr.String(), "config change not applied") && named.MatchString(stderr.String())
	})
	if l := entry("hot"); l == nil || !named.MatchString(l.ConfigError) {
		t.Fatalf("after an invalid edit, list_servers has %+v; stderr:\n%s", l, stderr)
	}
	// A reload releases the old plugin host only once the classifier
	// runs in flight under it (a listing's ratings) are done.
	if strings.Contains(stderr.String(), "plugin fault") {
		t.Fatalf("a reload faulted a plugin; stderr:\n%s", stderr)
	}
}
