package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"github.com/voltmcp/voltmcp/internal/testwait"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestServeEndsWhileAClassifierHangs configures, as the user's classifier,
// a module that recurses two calls per level forty levels deep with no
// loop (wasm/testdata/recurse.wasm), makes serve classify the upstream's
// tools, and sends SIGTERM while the classifier runs. serve must exit: a
// plugin call ends at its deadline whatever the guest's code, and the
// process stays responsive meanwhile. The minute's bound only keeps a
// broken build from hanging the test run.
func TestServeEndsWhileAClassifierHangs(t *testing.T) {
	t.Parallel()
	bin, err := os.ReadFile(filepath.Join("..", "..", "wasm", "testdata", "recurse.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(bin)
	plug, err := filepath.Abs(filepath.Join("..", "..", "wasm", "testdata", "recurse.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	home := vetHome(t, `{"plugins": {"classifiers": [{"path": "`+plug+`", "sha256": "`+hex.EncodeToString(sum[:])+`"}]}}`)
	project := benchProject(t)
	cmd := cliCommand("serve", "--home", home, "--project", project, "--approve")
	cs := connectCommand(t, cmd, "2025-11-25")
	t.Cleanup(func() { _ = cmd.Process.Kill() }) // an error once it has exited
	// A call connects the upstream and lists its tools, and each is
	// classified.
	go func() {
		_, _ = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "mcp", Arguments: map[string]any{
			"action": "call", "server": "up", "tool": "echo", "arguments": map[string]any{"text": "hi"}}})
	}()
	time.Sleep(500 * time.Millisecond) // let the classifier start; not a bound
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithDeadline(context.Background(), testwait.Deadline(t))
	defer cancel()
	go func() { _ = cs.Wait() }()
	waitExited(ctx, t, cmd)
}
