package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voltmcp/voltmcp/internal/npmpeers"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// TestInspectorCLI drives `voltmcp serve` with the official MCP Inspector
// CLI (an independent MCP client) against a real upstream server, the
// MCP example server "everything": it lists the gateway's one tool, then
// calls through it the upstream's echo tool, then searches for it.
func TestInspectorCLI(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds voltmcp and runs Node programs")
	}
	node := npmpeers.Node(t)
	inspector := npmpeers.Path(t, npmpeers.InspectorEntry)
	everything := npmpeers.Path(t, npmpeers.EverythingEntry)

	bin := filepath.Join(t.TempDir(), "voltmcp")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	// A user-layer config (no trust needed) in an empty home; the
	// Inspector keeps its own state in <home>/.mcp-inspector.
	home := t.TempDir()
	doc := map[string]any{"version": 1, "servers": map[string]any{
		"everything": map[string]any{"command": node, "args": []string{everything, "stdio"}},
	}}
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, ".volt", "agent"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".volt", "agent", "mcp.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()

	run := func(t *testing.T, args ...string) map[string]any {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), testwait.Patience)
		defer cancel()
		full := append([]string{inspector, "--cli", bin, "serve"}, args...)
		full = append(full, "--format", "json")
		cmd := exec.CommandContext(ctx, node, full...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "HOME="+home, "VOLTMCP_HOME="+home)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("inspector %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, stderr.String())
		}
		var res struct {
			Result map[string]any `json:"result"`
		}
		if err := json.Unmarshal(out, &res); err != nil || res.Result == nil {
			t.Fatalf("inspector %s: output is not a JSON result (%v):\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, stderr.String())
		}
		return res.Result
	}

	t.Run("tools/list", func(t *testing.T) {
		res := run(t, "--method", "tools/list")
		tools, _ := res["tools"].([]any)
		if len(tools) != 1 {
			t.Fatalf("got %d tools, want 1: %v", len(tools), res)
		}
		if tool, _ := tools[0].(map[string]any); tool["name"] != "mcp" {
			t.Fatalf("tool name = %v, want mcp", tool["name"])
		}
	})

	callMCP := func(t *testing.T, args map[string]any) string {
		t.Helper()
		data, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		res := run(t, "--method", "tools/call", "--tool-name", "mcp", "--tool-args-json", string(data))
		if res["isError"] == true {
			t.Fatalf("tool error: %v", res)
		}
		all, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		return string(all)
	}

	t.Run("call", func(t *testing.T) {
		out := callMCP(t, map[string]any{
			"action": "call", "server": "everything", "tool": "echo",
			"arguments": map[string]any{"message": "hi from inspector"},
		})
		if !strings.Contains(out, "hi from inspector") {
			t.Fatalf("echo result lacks the message: %s", out)
		}
	})
	// An image the server sends reaches the Inspector as image content
	// (settings.media), the bytes server-everything sent.
	t.Run("image", func(t *testing.T) {
		out := callMCP(t, map[string]any{"action": "call", "server": "everything", "tool": "get-tiny-image"})
		var res struct {
			Content []struct {
				Type     string `json:"type"`
				MIMEType string `json:"mimeType"`
				Data     []byte `json:"data"`
			} `json:"content"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatal(err)
		}
		var images int
		for _, c := range res.Content {
			if c.Type != "image" {
				continue
			}
			images++
			if c.MIMEType != "image/png" || !bytes.HasPrefix(c.Data, []byte("\x89PNG\r\n\x1a\n")) {
				t.Errorf("image %s, %d bytes: not the server's PNG", c.MIMEType, len(c.Data))
			}
		}
		if images != 1 {
			t.Fatalf("%d image blocks, want 1: %s", images, out)
		}
	})
	// Each Inspector run starts its own voltmcp serve: the search finds
	// the echo tool through the metadata that the call above cached.
	t.Run("search", func(t *testing.T) {
		out := callMCP(t, map[string]any{"action": "search", "query": "echo"})
		var res struct {
			StructuredContent struct {
				Matches []struct {
					Server string `json:"server"`
					Tool   string `json:"tool"`
				} `json:"matches"`
			} `json:"structuredContent"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, m := range res.StructuredContent.Matches {
			found = found || (m.Server == "everything" && m.Tool == "echo")
		}
		if !found {
			t.Fatalf("search for echo did not find everything/echo: %s", out)
		}
	})

}
