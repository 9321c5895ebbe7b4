package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/engine/audit"
	"github.com/voltmcp/voltmcp/policies"
)

// TestRedactMemo checks that the memo in front of the audit log's
// redactor gives what the redactor gives, keeps no string the redactor
// changed, starts over for a new redactor, and stays bounded.
func TestRedactMemo(t *testing.T) {
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
		"password=hunter22", envSecret, "the value " + envSecret + " leaked", strings.Repeat("x", redactMemoMaxLen+1),
		strings.Repeat("y", redactMemoMaxLen+1) + " " + ghp}

	m := &redactMemo{}
	for _, red := range []*policies.Redactor{plain, withEnv, plain} {
		for range 3 { // the first round fills the memo, the others read it
			for _, s := range inputs {
				if got, want := m.redact(red, s), red.Redact(s); got != want {
					t.Errorf("memo gave %q for %q, the redactor %q", got, s, want)
				}
			}
		}
		for s := range m.clean {
			if red.Redact(s) != s {
				t.Errorf("the memo keeps %q, which the redactor changes", s)
			}
			if len(s) > redactMemoMaxLen {
				t.Errorf("the memo keeps a string of %d bytes", len(s))
			}
		}
	}
	// The env secret was remembered as clean under plain; withEnv must
	// still redact it.
	m = &redactMemo{}
	if got := m.redact(plain, envSecret); got != envSecret {
		t.Fatalf("plain redacted %q to %q", envSecret, got)
	}
	if got := m.redact(withEnv, envSecret); got != policies.Replacement {
		t.Errorf("after a new redactor, %q became %q", envSecret, got)
	}

	// Bounded, and safe for concurrent use.
	m = &redactMemo{}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 2 * redactMemoStrings {
				s := fmt.Sprintf("value-%d-%d", g, i)
				if got := m.redact(plain, s); got != s {
					t.Errorf("%q became %q", s, got)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := len(m.clean); n == 0 || n > redactMemoStrings {
		t.Errorf("the memo holds %d strings, want 1..%d", n, redactMemoStrings)
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
	memo := &redactMemo{}
	l, err := audit.Open(filepath.Join(b.TempDir(), "audit.jsonl"), &audit.Options{
		Redact: func(s string) string { return memo.redact(red, s) }})
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

// TestAuditBacklog checks when the backlog of lean calls' records is
// written: by its timer soon after the first call, by the call that
// finds it full (which calls wait only when the timer is writing), and
// by close, after which every call writes its own.
func TestAuditBacklog(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var written []int
	// Each call's release builds one record, its Seq the call's number.
	release := func(n int) func() []audit.Record {
		return func() []audit.Record { return []audit.Record{{Seq: int64(n)}} }
	}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(written)
	}
	noWait := func() { t.Error("a write that waits for nothing called wait") }

	var writes int
	b := auditBacklog{sink: func(recs []audit.Record, _ func()) {
		mu.Lock()
		defer mu.Unlock()
		writes++
		for _, r := range recs {
			written = append(written, int(r.Seq))
		}
	}}
	b.add(release(0), noWait)
	b.add(release(1), noWait)
	if n := count(); n != 0 {
		t.Fatalf("%d records written at once, want them kept", n)
	}
	deadline := time.Now().Add(10 * time.Second)
	for count() != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the timer wrote %d of 2 calls' records", count())
		}
		time.Sleep(time.Millisecond)
	}
	writesNow := func() int {
		mu.Lock()
		defer mu.Unlock()
		return writes
	}
	if n := writesNow(); n != 1 {
		t.Fatalf("the timer wrote two calls' records with %d writes, want one", n)
	}

	// Full: the call that would exceed the bound writes them all, its
	// own last.
	b.writing.Lock() // as the timer holds it while writing
	for i := range auditBacklogCalls {
		b.add(release(2+i), noWait)
	}
	if n := count(); n != 2 {
		t.Fatalf("%d records written, want the backlog kept", n)
	}
	waited := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.add(release(2+auditBacklogCalls), func() { close(waited) })
	}()
	<-waited // called before it waits for the timer's write
	b.writing.Unlock()
	<-done
	if n := count(); n != 3+auditBacklogCalls {
		t.Fatalf("%d records written, want %d", n, 3+auditBacklogCalls)
	}
	if n := writesNow(); n != 2 {
		t.Fatalf("a full backlog was written with %d writes, want one", n-1)
	}
	for i, n := range written {
		if n != i {
			t.Fatalf("records written in the order %v", written)
		}
	}

	// close writes what waits; a call after it writes its own.
	b.add(release(100), noWait)
	b.close()
	if n := count(); n != 4+auditBacklogCalls {
		t.Fatalf("close left %d records unwritten", 4+auditBacklogCalls-n)
	}
	b.add(release(101), noWait)
	if n := count(); n != 5+auditBacklogCalls {
		t.Fatal("a call after close kept its records")
	}
}

// TestAuditBacklogSurvivesAPanic checks that a release that panics while
// the timer writes the backlog loses only its own records: the process
// goes on, the other calls' records are written, and the log names the
// panic without its value.
func TestAuditBacklogSurvivesAPanic(t *testing.T) {
	t.Parallel()
	const canary = "canary-4f1e-secret"
	var logged strings.Builder
	var logMu sync.Mutex
	b := auditBacklog{log: slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		logMu.Lock()
		defer logMu.Unlock()
		return logged.Write(p)
	}), nil))}
	done := make(chan []audit.Record, 1)
	b.sink = func(recs []audit.Record, _ func()) { done <- recs }
	b.add(func() []audit.Record { return []audit.Record{{Seq: 1}} }, func() {})
	b.add(func() []audit.Record { panic(canary) }, func() {})
	b.add(func() []audit.Record { return []audit.Record{{Seq: 3}} }, func() {})
	select {
	case recs := <-done:
		if len(recs) != 2 || recs[0].Seq != 1 || recs[1].Seq != 3 {
			t.Fatalf("the backlog wrote %+v, want the records of calls 1 and 3", recs)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the backlog was never written")
	}
	b.close()
	logMu.Lock()
	defer logMu.Unlock()
	if !strings.Contains(logged.String(), "panicked") {
		t.Errorf("the panic was not logged: %q", logged.String())
	}
	if strings.Contains(logged.String(), canary) {
		t.Error("the panic's value reached the log")
	}
}

// writerFunc is an io.Writer made of a function.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
