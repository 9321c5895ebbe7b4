//go:build linux

package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/engine/audit"
)

// setFileSizeLimit sets RLIMIT_FSIZE of process pid (prlimit(2)): a write
// that would take a file past limit bytes fails with EFBIG (Go ignores
// SIGXFSZ).
func setFileSizeLimit(t *testing.T, pid int, limit uint64) {
	t.Helper()
	lim := syscall.Rlimit{Cur: limit, Max: ^uint64(0)}
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), syscall.RLIMIT_FSIZE, uintptr(unsafe.Pointer(&lim)), 0, 0, 0); errno != 0 {
		t.Fatalf("prlimit: %v", errno)
	}
}

// TestServeAuditFailureIsLoud runs `voltmcp serve` as its own process and
// makes its audit log unwritable with a real EFBIG (RLIMIT_FSIZE at the
// log's size): status says the log fails, stderr says it once, a read
// call goes on with a note, a call of any other risk is refused; once
// the log can be written again, status is ok and `audit verify` reports
// the records lost.
func TestServeAuditFailureIsLoud(t *testing.T) {
	home, project := t.TempDir(), benchProject(t)
	logPath := audit.DefaultPath(filepath.Join(home, ".volt", "agent"))
	cmd := cliCommand("serve", "--home", home, "--project", project, "--approve")
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	cs := connectCommand(t, cmd, "2025-11-25")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	gw := func(args map[string]any) (*mcp.CallToolResult, map[string]any) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp", Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		var data map[string]any
		b, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(b, &data)
		return res, data
	}
	auditState := func() string {
		_, data := gw(map[string]any{"action": "status"})
		a, _ := data["audit"].(map[string]any)
		s, _ := a["state"].(string)
		return s
	}
	waitState := func(want string, poke func()) {
		t.Helper()
		for auditState() != want {
			if ctx.Err() != nil {
				t.Fatalf("audit state never became %q; stderr:\n%s", want, stderr.String())
			}
			poke()
			time.Sleep(20 * time.Millisecond)
		}
	}
	risk := func(tool string) string {
		_, data := gw(map[string]any{"action": "describe", "server": "up", "tool": tool})
		r, _ := data["risk"].(string)
		return r
	}
	callEcho(ctx, t, cs, "before") // lists the server
	readTool := risk("echo") == "read"
	if r := risk("slow"); r == "read" || r == "" {
		t.Fatalf("slow is rated %q", r)
	}
	if s := auditState(); s != "ok" {
		t.Fatalf("audit state at start: %q", s)
	}
	// Wait for the call's record, then cap the log at its size.
	for {
		recs, _, err := audit.Read(logPath, audit.Query{Kind: audit.KindCall})
		if err == nil && len(recs) > 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the first call's record never reached the log")
		}
		time.Sleep(10 * time.Millisecond)
	}
	fi, err := os.Stat(logPath)
	if err != nil {
		t.Fatal(err)
	}
	setFileSizeLimit(t, cmd.Process.Pid, uint64(fi.Size()))
	// The next records fail to be written; status says so. A call of a
	// risk other than read is made only once its intent is written: serve
	// keeps intents in the log's intent journal, which the file-size
	// limit does not touch, so the calls made before a write to the log
	// fails run, their intents in the journal and their outcomes lost
	// (below); none runs once the log is known to fail.
	ran := 0
	waitState("failing", func() {
		if res, _ := gw(map[string]any{"action": "call", "server": "up", "tool": "slow", "arguments": map[string]any{"ms": 1}}); !res.IsError {
			ran++
		}
	})
	// Every answer says so, whatever the action.
	if res, _ := gw(map[string]any{"action": "list_servers"}); !strings.Contains(text0(res), "audit log cannot be written") {
		t.Errorf("list_servers while the audit log fails: %q", text0(res))
	}

	res, _ := gw(map[string]any{"action": "call", "server": "up", "tool": "slow", "arguments": map[string]any{"ms": 1}})
	if !res.IsError || !strings.Contains(text0(res), "audit log cannot be written") {
		t.Errorf("a non-read call while the audit log fails: %v %q", res.IsError, text0(res))
	}
	if readTool {
		res, data := gw(map[string]any{"action": "call", "server": "up", "tool": "echo", "arguments": map[string]any{"text": "unaudited"}})
		notes, _ := json.Marshal(data["notes"])
		if res.IsError || !strings.HasPrefix(text0(res), "unaudited") || !strings.Contains(string(notes), "not audited") {
			t.Errorf("a read call while the audit log fails: %v %q, notes %s", res.IsError, text0(res), notes)
		}
	} else {
		t.Log("echo is not rated read here: the read-goes-on check is skipped")
	}
	// The failure may be found by the backlog's timer, which logs it
	// just after the log's state says so.
	for !strings.Contains(stderr.String(), "audit log cannot be written") && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	if n := strings.Count(stderr.String(), "audit log cannot be written"); n != 1 {
		t.Errorf("stderr says the log fails %d times, want once:\n%s", n, stderr.String())
	}

	// The disk has room again: the next write resumes the log.
	setFileSizeLimit(t, cmd.Process.Pid, ^uint64(0))
	waitState("ok", func() {
		gw(map[string]any{"action": "call", "server": "up", "tool": "slow", "arguments": map[string]any{"ms": 1}})
	})
	callEcho(ctx, t, cs, "after")
	if !strings.Contains(stderr.String(), "audit log written again") {
		t.Errorf("stderr does not say the log resumed:\n%s", stderr.String())
	}
	_ = cs.Close()
	waitExited(ctx, t, cmd)
	t.Logf("serve's stderr:\n%s", stderr.String())

	rep, err := audit.Verify(logPath)
	if err != nil {
		t.Fatal(err)
	}
	// Each call that ran before the failure was known has its intent,
	// kept by the journal, and no outcome: an unfinished call.
	if rep.Intact || rep.LostRecords < int64(ran) || len(rep.Lost) == 0 || rep.BrokenLinks != 0 || rep.UnfinishedCalls != ran {
		t.Fatalf("verify after lost records: intact %v, lost %d, broken %d, unfinished %d", rep.Intact, rep.LostRecords, rep.BrokenLinks, rep.UnfinishedCalls)
	}
	// Every call that ran has its record; every risky one its intent.
	intents, _, err := audit.Read(logPath, audit.Query{Kind: audit.KindCallIntent})
	if err != nil {
		t.Fatal(err)
	}
	calls, _, err := audit.Read(logPath, audit.Query{Kind: audit.KindCall})
	if err != nil {
		t.Fatal(err)
	}
	named := map[int64]bool{}
	for _, c := range calls {
		named[c.Intent] = true
	}
	for _, in := range intents {
		if !named[in.Seq] {
			t.Errorf("intent seq %d (%s.%s) has no call record", in.Seq, in.Server, in.Tool)
		}
	}
	r := runCLI(t, fakeEnv(t, nil), "audit", "verify", "--home", home)
	if r.code == 0 || !strings.Contains(r.stdout, "records LOST") {
		t.Errorf("audit verify: code %d\n%s", r.code, r.stdout)
	}
	// The next writer of the log appends the intents serve's journal
	// kept; the calls stay unfinished, and the journal is gone.
	l, err := audit.Open(logPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = l.Close()
	if after, _, err := audit.Read(logPath, audit.Query{Kind: audit.KindCallIntent}); err != nil || len(after) != len(intents)+ran {
		t.Errorf("intents once the journal is recovered: %d, want %d + %d (%v)", len(after), len(intents), ran, err)
	}
	if rep, err := audit.Verify(logPath); err != nil || rep.UnfinishedCalls != ran {
		t.Errorf("unfinished calls once the journal is recovered: %d, want %d (%v)", rep.UnfinishedCalls, ran, err)
	}
	if js, _ := filepath.Glob(logPath + ".intents/j-*"); len(js) != 0 {
		t.Errorf("journals left once recovered: %v", js)
	}
	t.Logf("%d calls ran before the failure was known", ran)
}

func text0(res *mcp.CallToolResult) string {
	if len(res.Content) == 0 {
		return ""
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}
