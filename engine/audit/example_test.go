package audit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/voltmcp/voltmcp/engine/audit"
)

// Record a tool call: arguments as a summary, the secret in an error text
// redacted before it reaches the file.
func ExampleOpen() {
	agentDir, _ := os.MkdirTemp("", "voltmcp-audit")
	defer os.RemoveAll(agentDir)

	log, err := audit.Open(audit.DefaultPath(agentDir), &audit.Options{
		Redact: func(s string) string { return strings.ReplaceAll(s, "ghp_s3cret", "<redacted>") },
		Now:    func() time.Time { return time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC) },
	})
	if err != nil {
		panic(err)
	}
	defer log.Close()
	err = log.Append(context.Background(), audit.Record{
		Kind: audit.KindCall, Surface: "serve", Server: "github", Tool: "create_issue",
		Risk: "write", Status: "error", DurationMS: 412,
		Args:     audit.SummarizeArgs(json.RawMessage(`{"repo":"voltmcp/voltmcp","title":"Crash on start"}`)),
		Decision: &audit.Decision{Allowed: true},
		Detail:   map[string]any{"error": "401 for token ghp_s3cret"},
	})
	if err != nil {
		panic(err)
	}
	b, _ := os.ReadFile(audit.DefaultPath(agentDir))
	fmt.Print(string(b))
	// Output:
	// {"seq":1,"prev":"","time":"2026-05-01T12:00:00Z","kind":"call","surface":"serve","server":"github","tool":"create_issue","risk":"write","status":"error","duration_ms":412,"args":{"repo":"string(15)","title":"string(14)"},"decision":{"allowed":true},"detail":{"error":"401 for token <redacted>"}}
}

// Check the chain after someone edited a line.
func ExampleVerify() {
	agentDir, _ := os.MkdirTemp("", "voltmcp-audit")
	defer os.RemoveAll(agentDir)
	path := audit.DefaultPath(agentDir)

	log, _ := audit.Open(path, nil)
	for _, status := range []string{"ok", "denied", "ok"} {
		_ = log.Append(context.Background(), audit.Record{Kind: audit.KindCall, Server: "fs", Tool: "delete", Status: status})
	}
	log.Close()

	rep, _ := audit.Verify(path)
	fmt.Println("intact:", rep.Intact, "records:", rep.Records)

	b, _ := os.ReadFile(path)
	os.WriteFile(path, []byte(strings.Replace(string(b), `"denied"`, `"ok"`, 1)), 0o600)
	rep, _ = audit.Verify(path)
	fmt.Printf("intact: %v, first broken link: %s line %d (seq %d)\n",
		rep.Intact, filepath.Base(rep.Broken.File), rep.Broken.Line, rep.Broken.Seq)
	// Output:
	// intact: true records: 3
	// intact: false, first broken link: audit.jsonl line 3 (seq 3)
}

// Describe arguments without their values.
func ExampleSummarizeArgs() {
	args := audit.SummarizeArgs(json.RawMessage(`{"path":"/etc/passwd","recursive":true,"globs":["*.go","*.md"]}`))
	out, _ := json.Marshal(args)
	fmt.Println(string(out))
	// Output:
	// {"globs":"array(2)","path":"string(11)","recursive":"bool"}
}
