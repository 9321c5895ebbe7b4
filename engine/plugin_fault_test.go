package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/wasm"
)

// TestClassifierFaultIsNotKept rates a tool with a classifier that runs
// past its deadline (wasm/testdata/recurse.wasm), then, with the classifier
// healthy again and the retry time passed, rates it again: the second
// rating must be the classifier's, not the fault's unknown kept for the
// life of the process.
func TestClassifierFaultIsNotKept(t *testing.T) {
	t.Parallel()
	path, err := filepath.Abs(filepath.Join("..", "wasm", "testdata", "recurse.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(bin)
	settings := map[string]any{"plugins": map[string]any{"builtin": false, "classifiers": []any{map[string]any{"path": path, "sha256": hex.EncodeToString(sum[:])}}}}
	opts := workspace(t, map[string]server{"tools": stdio("behave", nil)}, nil)
	user := filepath.Join(opts.Home, ".volt", "agent", "mcp.json")
	data, _ := json.Marshal(map[string]any{"version": 1, "settings": settings})
	if err := os.MkdirAll(filepath.Dir(user), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(user, data, 0o644); err != nil {
		t.Fatal(err)
	}
	e := start(t, opts)
	g := e.guard.Load()
	tool := Tool{Name: "delete_all_records", Hash: "h1"}
	if risk, why := g.risk(context.Background(), "tools", tool); risk != RiskUnknown || !strings.Contains(why, "deadline") {
		t.Fatalf("with a classifier past its deadline: %s (%s); want unknown for the fault", risk, why)
	}
	// The classifier is healthy again (the built-in one stands in), and
	// the fault's rating has had its time.
	builtin, err := g.host.Builtin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	g.chain = &wasm.Chain{Classifiers: []*wasm.Module{builtin}}
	g.riskMu.Lock()
	for k := range g.riskRetry {
		g.riskRetry[k] = time.Now().Add(-time.Second)
	}
	g.riskMu.Unlock()
	if risk, why := g.risk(context.Background(), "tools", tool); risk != RiskDestructive {
		t.Fatalf("classified again: %s (%s); want the classifier's destructive", risk, why)
	}
	// A classification its caller gave up on is unknown, and not kept:
	// the next caller is rated.
	other := Tool{Name: "read_records", Hash: "h2"}
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	if risk, why := g.risk(gone, "tools", other); risk != RiskUnknown || !strings.Contains(why, "cancelled") {
		t.Fatalf("with a cancelled context: %s (%s); want unknown, cancelled", risk, why)
	}
	if risk, why := g.risk(context.Background(), "tools", other); risk != RiskRead {
		t.Fatalf("after a cancelled classification: %s (%s); want the classifier's read", risk, why)
	}
}
