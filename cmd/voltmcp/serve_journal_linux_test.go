package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/engine/audit"
)

// TestServeKilledMidCall kills serve with SIGKILL while a call of unknown
// risk runs: its intent, kept in the audit log's intent journal before
// the call was sent, outlives serve. `voltmcp audit verify` reports the
// call as unfinished at once, and after the next writer opens the log
// the intent is in the log itself.
func TestServeKilledMidCall(t *testing.T) {
	home, project := t.TempDir(), benchProject(t)
	logPath := audit.DefaultPath(filepath.Join(home, ".volt", "agent"))
	cmd := cliCommand("serve", "--home", home, "--project", project, "--approve")
	cs := connectCommand(t, cmd, "2025-11-25")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	callEcho(ctx, t, cs, "before") // starts the server
	// Its record reaches the log within the backlog's 10 ms; a kill
	// before then would leave its call unfinished too.
	for {
		if recs, _, err := audit.Read(logPath, audit.Query{Kind: audit.KindCall}); err == nil && len(recs) == 1 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the first call's record never reached the log")
		}
		time.Sleep(10 * time.Millisecond)
	}
	go func() {
		_, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp", Arguments: map[string]any{
			"action": "call", "server": "up", "tool": "slow", "arguments": map[string]any{"ms": 60000}}})
	}()
	// The intent is in the journal before the call is sent; wait for it.
	pending := func() bool {
		names, _ := filepath.Glob(logPath + ".intents/j-*")
		for _, name := range names {
			b, _ := os.ReadFile(name)
			for off := 0; off+1024 <= len(b); off += 1024 {
				if b[off] == 'I' && bytes.Contains(b[off:off+1024], []byte(`"tool":"slow"`)) {
					return true
				}
			}
		}
		return false
	}
	for !pending() {
		if ctx.Err() != nil {
			t.Fatal("the call's intent never reached the journal")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cs.Close()

	r := runCLI(t, fakeEnv(t, nil), "audit", "verify", "--json", "--home", home)
	var rep audit.VerifyReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("audit verify --json: %v\n%s%s", err, r.stdout, r.stderr)
	}
	if r.code == 0 || rep.UnfinishedCalls != 1 || rep.BrokenLinks != 0 {
		t.Errorf("audit verify after serve was killed mid-call: code %d, %d unfinished, %d broken links", r.code, rep.UnfinishedCalls, rep.BrokenLinks)
	}
	l, err := audit.Open(logPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = l.Close()
	intents, _, err := audit.Read(logPath, audit.Query{Kind: audit.KindCallIntent, Tool: "slow"})
	if err != nil || len(intents) != 1 {
		t.Fatalf("the slow call's intent in the log: %+v %v", intents, err)
	}
	if rep, err := audit.Verify(logPath); err != nil || rep.UnfinishedCalls != 1 {
		t.Errorf("verify once the journal is recovered: %d unfinished (%v)", rep.UnfinishedCalls, err)
	}
}
