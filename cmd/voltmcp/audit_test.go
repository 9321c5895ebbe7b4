package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/engine/audit"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// auditFixture writes a log of six records into a fresh agent dir and
// returns the dir and the log's path.
func auditFixture(t *testing.T) (agentDir, path string) {
	t.Helper()
	agentDir = t.TempDir()
	path = audit.DefaultPath(agentDir)
	tick := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	l, err := audit.Open(path, &audit.Options{Now: func() time.Time { tick = tick.Add(time.Minute); return tick }})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, r := range []audit.Record{
		{Kind: audit.KindCall, Server: "github", Tool: "create_issue", Status: "ok", Risk: "write", DurationMS: 412, Decision: &audit.Decision{Allowed: true}},
		{Kind: audit.KindCall, Server: "github", Tool: "delete_repo", Status: "denied", Risk: "destructive", Decision: &audit.Decision{Reasons: []string{"destructive tools need approval"}}},
		{Kind: audit.KindReadResource, Server: "docs", Resource: "docs://intro", Status: "ok"},
		{Kind: audit.KindPinChange, Server: "github", Tool: "create_issue", Detail: map[string]any{"severity": "escalation"}},
		{Kind: audit.KindCall, Server: "evil\x1b[31m\u202e", Tool: "x", Status: "error"},
		{Kind: audit.KindCall, Server: "github", Tool: "create_issue", Status: "ok", Risk: "write", DurationMS: 90},
	} {
		if err := l.Append(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	return agentDir, path
}

func TestAuditVerify(t *testing.T) {
	t.Parallel()
	dir, path := auditFixture(t)
	r := runCLI(t, nil, "audit", "verify", "--agent-dir", dir)
	if r.code != exitOK || !strings.Contains(r.stdout, "6 records in 1 file") || !strings.Contains(r.stdout, "chain intact") {
		t.Fatalf("verify of a clean log\n%s", r)
	}

	b, _ := os.ReadFile(path)
	if err := os.WriteFile(path, bytes.Replace(b, []byte(`"denied"`), []byte(`"ok"`), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, nil, "audit", "verify", "--file", path)
	if r.code != exitFindings || !strings.Contains(r.stdout, "chain BROKEN at "+path+":3 (seq 3)") {
		t.Fatalf("verify of an edited log: want exit 1 and the broken link\n%s", r)
	}
	r = runCLI(t, nil, "audit", "verify", "--file", path, "--json")
	var rep audit.VerifyReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != exitFindings {
		t.Fatalf("verify --json: %v\n%s", err, r)
	}
	if rep.Intact || rep.Broken == nil || rep.Broken.Line != 3 || rep.Records != 6 {
		t.Errorf("verify --json report %+v", rep)
	}
}

func TestAuditTailAndQuery(t *testing.T) {
	t.Parallel()
	dir, _ := auditFixture(t)
	r := runCLI(t, nil, "audit", "tail", "-n", "2", "--agent-dir", dir)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != exitOK || len(lines) != 2 {
		t.Fatalf("tail -n 2\n%s", r)
	}
	if want := "2026-05-01T12:06:00.000Z  call           github/create_issue           ok         risk=write  90ms"; lines[1] != want {
		t.Errorf("tail line\n got %q\nwant %q", lines[1], want)
	}
	if strings.ContainsAny(r.stdout, "\x1b\u202e") || !strings.Contains(lines[0], "evil/x") {
		t.Errorf("control characters reach the terminal: %q", lines[0])
	}

	r = runCLI(t, nil, "audit", "query", "--agent-dir", dir, "--server", "github", "--kind", "call")
	if r.code != exitOK || strings.Count(r.stdout, "\n") != 3 || !strings.Contains(r.stdout, "denied: destructive tools need approval") {
		t.Errorf("query --server github --kind call\n%s", r)
	}

	r = runCLI(t, nil, "audit", "query", "--agent-dir", dir, "--json", "--since", "2026-05-01T12:02:00Z", "--until", "2026-05-01T12:04:00Z")
	var seqs []int64
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	for dec.More() {
		var rec audit.Record
		if err := dec.Decode(&rec); err != nil {
			t.Fatalf("query --json: %v\n%s", err, r)
		}
		seqs = append(seqs, rec.Seq)
	}
	if r.code != exitOK || len(seqs) != 2 || seqs[0] != 2 || seqs[1] != 3 {
		t.Errorf("query --since --until gave seqs %v\n%s", seqs, r)
	}

	// The fixture is dated 2026-05-01; a duration counts back from now.
	r = runCLI(t, nil, "audit", "query", "--agent-dir", dir, "--since", "1h", "--status", "ok")
	want := 0
	if time.Since(time.Date(2026, 5, 1, 12, 6, 0, 0, time.UTC)) < time.Hour {
		want = -1 // the clock is near the fixture: do not judge
	}
	if r.code != exitOK || (want == 0 && r.stdout != "") {
		t.Errorf("query --since 1h\n%s", r)
	}
}

// linesWriter cancels a context once it has seen n lines.
type linesWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	n      int
	cancel context.CancelFunc
}

func (w *linesWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if bytes.Count(w.buf.Bytes(), []byte("\n")) >= w.n {
		w.cancel()
	}
	return len(p), nil
}

func TestAuditTailFollow(t *testing.T) {
	t.Parallel()
	dir, path := auditFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Patience)
	defer cancel()
	w := &linesWriter{n: 4, cancel: cancel}
	go func() {
		l, err := audit.Open(path, nil)
		if err != nil {
			t.Error(err)
			return
		}
		defer l.Close()
		for i := 0; ctx.Err() == nil && i < 100; i++ {
			_ = l.Append(context.Background(), audit.Record{Kind: audit.KindConfigChange, Server: "late"})
			time.Sleep(50 * time.Millisecond)
		}
	}()
	r := runCLICtx(t, ctx, nil, w, "audit", "tail", "-n", "1", "--follow", "--json", "--agent-dir", dir)
	if r.code != exitOK {
		t.Fatalf("tail --follow ended by an interrupt: want exit 0\n%s", r)
	}
	w.mu.Lock()
	out := w.buf.String()
	w.mu.Unlock()
	// The writer may get ahead of the first read: the newest record then
	// is a later one. What follows must come in order, without a gap.
	var seqs []int64
	dec := json.NewDecoder(strings.NewReader(out))
	for dec.More() {
		var rec audit.Record
		if err := dec.Decode(&rec); err != nil {
			t.Fatalf("tail --follow --json: %v\n%s", err, out)
		}
		seqs = append(seqs, rec.Seq)
	}
	if len(seqs) < 4 || seqs[0] < 6 || !strings.Contains(out, `"kind":"config_change"`) {
		t.Fatalf("tail --follow printed\n%s", out)
	}
	for i := 1; i < len(seqs); i++ {
		if seqs[i] != seqs[i-1]+1 {
			t.Errorf("tail --follow printed seq %d after %d", seqs[i], seqs[i-1])
		}
	}
}

func TestAuditUsageAndFailures(t *testing.T) {
	t.Parallel()
	dir, _ := auditFixture(t)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"audit"}, exitUsage, "want 'voltmcp audit verify'"},
		{[]string{"audit", "rotate"}, exitUsage, "want 'voltmcp audit verify'"},
		{[]string{"audit", "verify", "extra"}, exitUsage, "want 'voltmcp audit verify'"},
		{[]string{"audit", "verify", "--follow"}, exitUsage, "--follow belongs to 'voltmcp audit tail'"},
		{[]string{"audit", "tail", "--server", "x"}, exitUsage, "--server belongs to 'voltmcp audit query'"},
		{[]string{"audit", "tail", "-n", "-1"}, exitUsage, "-n wants"},
		{[]string{"audit", "query", "--since", "yesterday"}, exitUsage, `--since: "yesterday" is neither`},
		{[]string{"audit", "query", "--until", "-5m"}, exitUsage, "without a sign"},
		{[]string{"audit", "query", "--limit", "-2"}, exitUsage, "--limit wants"},
		{[]string{"audit", "verify", "--file", dir + "/nothing/audit.jsonl"}, exitFailure, "no audit log at"},
		{[]string{"audit", "tail", "--agent-dir", t.TempDir()}, exitFailure, "no audit log at"},
	} {
		args := append([]string{"--agent-dir", dir}, tc.args...)
		r := runCLI(t, nil, args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%q: want exit %d and %q\n%s", tc.args, tc.code, tc.want, r)
		}
	}
}

func TestParseWhen(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 10, 0, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"":                          {},
		"90s":                       now.Add(-90 * time.Second),
		"2h":                        now.Add(-2 * time.Hour),
		"7d":                        now.AddDate(0, 0, -7),
		"2026-05-01":                time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC),
		"2026-05-01T12:30":          time.Date(2026, 5, 1, 12, 30, 0, 0, time.UTC),
		"2026-05-01T12:30:00Z":      time.Date(2026, 5, 1, 12, 30, 0, 0, time.UTC),
		"2026-05-01T14:30:00+02:00": time.Date(2026, 5, 1, 12, 30, 0, 0, time.UTC),
	} {
		got, err := parseWhen(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("parseWhen(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
}
