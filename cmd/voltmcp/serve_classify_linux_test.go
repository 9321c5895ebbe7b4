//go:build linux

package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/internal/mcptest"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// TestServeEndsWhileAClassifierRatesManyTools is
// TestServeEndsWhileAClassifierHangs with an upstream that lists 80
// tools, each of which the hanging classifier holds for its whole
// deadline (1 s). SIGTERM comes once the first tool's rating has faulted,
// that is while the discovery rates the tools in turn: the rating ends
// with the process, the tools not yet rated are unknown, and serve exits.
// Rating all 80 would take longer than the minute the test waits, so a
// serve that finishes the ratings first fails.
func TestServeEndsWhileAClassifierRatesManyTools(t *testing.T) {
	t.Parallel()
	const tools = 80
	plug, err := filepath.Abs(filepath.Join("..", "..", "wasm", "testdata", "recurse.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(plug)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(bin)
	home := vetHome(t, `{"plugins": {"builtin": false, "classifiers": [{"path": "`+plug+`", "sha256": "`+hex.EncodeToString(sum[:])+`"}]}}`)
	project := t.TempDir()
	command, args, env := mcptest.Command(mcptest.ModeBehave, mcptest.EnvExtraTools+"="+strconv.Itoa(tools-6))
	doc := map[string]any{"version": 1, "servers": map[string]any{"up": map[string]any{"command": command, "args": args, "env": env}}}
	data, _ := json.Marshal(doc)
	if err := os.MkdirAll(filepath.Join(project, ".volt"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, ".volt", "mcp.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := cliCommand("serve", "--home", home, "--project", project, "--approve")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	cs := connectCommand(t, cmd, "2025-11-25")
	t.Cleanup(func() { _ = cmd.Process.Kill() }) // an error once it has exited
	go func() {
		_, _ = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "mcp", Arguments: map[string]any{
			"action": "call", "server": "up", "tool": "echo", "arguments": map[string]any{"text": "hi"}}})
	}()
	ctx, cancel := context.WithDeadline(context.Background(), testwait.Deadline(t))
	defer cancel()
	for !strings.Contains(stderr.String(), "plugin fault") {
		if ctx.Err() != nil {
			t.Fatalf("the classifier never faulted; stderr:\n%s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cs.Wait() }()
	waitExited(ctx, t, cmd)
	if n := strings.Count(stderr.String(), "plugin fault"); n >= tools {
		t.Errorf("%d plugin faults: every tool was rated before serve exited", n)
	}
}
