package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/engine/audit"
	"github.com/voltmcp/voltmcp/engine/internal/auditq"
	"github.com/voltmcp/voltmcp/policies"
)

// TestAuditRedactMemo checks that the memo in front of the audit log's
// redactor (auditq.RedactMemo) gives what the redactors of the default
// redact policy give, and starts over for a new redactor: a string it
// remembered as clean under one is still redacted by another that knows
// it as a secret. The memo's own test (auditq.TestRedactMemo) checks
// what it keeps and its bounds.
func TestAuditRedactMemo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pol, err := policies.Load(ctx, &policies.Options{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	const envSecret = "s3cr3t-env-value"
	plain, err := pol.Redactor(ctx, policies.RedactInput{})
	if err != nil {
		t.Fatal(err)
	}
	withEnv, err := pol.Redactor(ctx, policies.RedactInput{EnvNames: []string{"API_TOKEN"},
		LookupEnv: func(string) (string, bool) { return envSecret, true }})
	if err != nil {
		t.Fatal(err)
	}
	ghp := "ghp_" + strings.Repeat("a", 36)
	if plain.Redact("token "+ghp) == "token "+ghp || withEnv.Redact(envSecret) == envSecret {
		t.Fatal("the redactors redact nothing: the test proves nothing")
	}
	inputs := []string{"", "call", "serve", "github", "create_issue", "string(12)", "tool allowed by default",
		"token " + ghp, "Authorization: Bearer abcdefghijklmnop", "https://user:pass@example.com/x",
		"password=hunter22", envSecret, "the value " + envSecret + " leaked", strings.Repeat("x", 257),
		strings.Repeat("y", 257) + " " + ghp}

	m := &auditq.RedactMemo{}
	for _, red := range []*policies.Redactor{plain, withEnv, plain} {
		for range 3 { // the first round fills the memo, the others read it
			for _, s := range inputs {
				if got, want := m.Redact(red, s), red.Redact(s); got != want {
					t.Errorf("memo gave %q for %q, the redactor %q", got, s, want)
				}
			}
		}
	}
	// The env secret was remembered as clean under plain; withEnv must
	// still redact it.
	m = &auditq.RedactMemo{}
	if got := m.Redact(plain, envSecret); got != envSecret {
		t.Fatalf("plain redacted %q to %q", envSecret, got)
	}
	if got := m.Redact(withEnv, envSecret); got != policies.Replacement {
		t.Errorf("after a new redactor, %q became %q", envSecret, got)
	}
}

// BenchmarkAuditAppend measures the audit log's work for one proxied
// tool call: appending the record gwCall makes (its Detail keyed, as
// for every call of a tool), redacted by the default redact policy
// through the engine's memo, as record sets it up.
func BenchmarkAuditAppend(b *testing.B) {
	ctx := context.Background()
	pol, err := policies.Load(ctx, &policies.Options{Timeout: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	red, err := pol.Redactor(ctx, policies.RedactInput{EnvNames: []string{"GITHUB_TOKEN"},
		LookupEnv: func(string) (string, bool) { return "ghp_" + strings.Repeat("x", 36), true }})
	if err != nil {
		b.Fatal(err)
	}
	memo := &auditq.RedactMemo{}
	l, err := audit.Open(filepath.Join(b.TempDir(), "audit.jsonl"), &audit.Options{
		Redact: func(s string) string { return memo.Redact(red, s) }})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	in := ToolInput{
		Server: cue.Server{ID: "github", Transport: "stdio", Command: "npx",
			Args: []string{"-y", "@modelcontextprotocol/server-github"}, ExcludeTools: []string{"delete_*"}},
		Tool: Tool{Name: "create_issue", Hash: strings.Repeat("0f", 32),
			Annotations: json.RawMessage(`{"title":"Create issue","readOnlyHint":false,"destructiveHint":false,"openWorldHint":true}`)},
		Risk: RiskWrite, RiskReason: "name starts with create_", Pin: PinState{State: "pinned"}, Surface: cue.SurfaceServe,
	}
	d := ToolDecision{Exposed: true, Allowed: true, Reasons: []string{"tool allowed by default"}}
	args := json.RawMessage(`{"owner":"voltmcp","repo":"voltmcp","title":"Crash on start","body":"It crashes.","labels":["bug"]}`)
	// The records are made before the clock runs: the call path makes
	// them, the audit queue appends them. Each has its own result hash,
	// like the calls it stands for.
	recs := make([]audit.Record, 1024)
	for i := range recs {
		r := callRecord(in, d, args, "1.1")
		finishRecord(&r, "ok", time.Now(), fmt.Sprintf("result %d", i), "", false)
		r.Time = time.Now()
		r.Workspace, r.Session, r.Surface = "/home/user/src/project", "c0ffee0123456789", string(cue.SurfaceServe)
		recs[i] = r
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := l.Append(ctx, recs[i%len(recs)]); err != nil {
			b.Fatal(err)
		}
	}
}
