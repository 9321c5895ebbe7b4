package engine

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/engine/audit"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// TestAuditFailureUnderAllow replaces the audit file with a directory
// while the engine runs: the status action says the log fails, and under
// settings.audit.onFailure "allow" (set in a user layer) a call that is
// not a read still runs, with a note. Removing the directory lets the
// next write through, led by an audit_gap record; a project layer cannot
// set "allow".
func TestAuditFailureUnderAllow(t *testing.T) {
	t.Parallel()
	for _, layer := range []string{"user", "project"} {
		t.Run(layer, func(t *testing.T) {
			settings := map[string]any{"audit": map[string]any{"onFailure": "allow"}}
			var projectSettings map[string]any
			if layer == "project" {
				projectSettings = settings
			}
			opts := workspace(t, map[string]server{"s": stdio("behave", nil)}, projectSettings)
			if layer == "user" {
				data, _ := json.Marshal(map[string]any{"version": 1, "settings": settings})
				dir := filepath.Join(opts.Home, ".volt", "agent")
				if err := os.MkdirAll(dir, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "mcp.json"), data, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			e := start(t, opts)
			if got := e.Config().Settings.Audit.OnFailure; (layer == "user") != (got == "allow") {
				t.Fatalf("onFailure from the %s layer = %q", layer, got)
			}
			logPath := audit.DefaultPath(filepath.Join(opts.Home, ".volt", "agent"))
			call := func() GatewayResult {
				return gw(t, e, GatewayInput{Action: "call", Server: "s", Tool: "slow", ArgumentsJSON: `{"ms": 1}`})
			}
			if r := call(); r.IsError {
				t.Fatalf("call: %s", r.Text)
			}
			// The call's records join the backlog once it is answered, and
			// reach the log a moment later.
			for wait := testwait.Deadline(t); ; time.Sleep(5 * time.Millisecond) {
				if _, err := os.Stat(logPath); err == nil || time.Now().After(wait) {
					break
				}
			}
			if err := os.Remove(logPath); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(logPath, 0o700); err != nil {
				t.Fatal(err)
			}
			state := func() AuditState {
				return gw(t, e, GatewayInput{Action: "status"}).Data.(map[string]any)["audit"].(AuditState)
			}
			deadline := testwait.Deadline(t)
			// The log may be marked failing (a reopen that failed) a moment
			// before the records it lost are counted: wait for both.
			for st := state(); st.State != "failing" || st.Lost < 1; st = state() {
				if time.Now().After(deadline) {
					t.Fatal("the status never said the audit log fails")
				}
				call()
				time.Sleep(10 * time.Millisecond)
			}
			if st := state(); st.Lost < 1 || !strings.Contains(st.Error, "directory") {
				t.Errorf("status while failing: %+v", st)
			}
			r := call()
			if layer == "user" {
				if r.IsError || !strings.Contains(strings.Join(r.Data.(CallResult).Notes, "\n"), "not audited") {
					t.Errorf("an unknown-risk call under allow: %s %+v", r.Text, r.Data)
				}
			} else if !r.IsError || !strings.Contains(r.Text, "audit log cannot be written") {
				t.Errorf("an unknown-risk call under refuse-risky: %s", r.Text)
			}
			if err := os.Remove(logPath); err != nil {
				t.Fatal(err)
			}
			for state().State != "ok" {
				if time.Now().After(deadline) {
					t.Fatal("the audit log never resumed")
				}
				call()
				time.Sleep(10 * time.Millisecond)
			}
			e.Close()
			// Records lost at once may be named by more than one
			// audit_gap record (a write that failed while another
			// resumed the log), but each by one, and none is left in
			// the note of lost records.
			gaps, _, err := audit.Read(logPath, audit.Query{Kind: audit.KindAuditGap})
			if err != nil || len(gaps) < 1 {
				t.Fatalf("audit_gap records: %d %v", len(gaps), err)
			}
			if n, _ := gaps[0].Detail["lost"].(float64); n < 1 {
				t.Errorf("audit_gap: %+v", gaps[0])
			}
			if note, err := audit.PendingLost(logPath); err != nil || note.Records != 0 {
				t.Errorf("the note of lost records after the log resumed: %+v %v", note, err)
			}
		})
	}
}

// TestAuditLogThatDoesNotOpen starts an engine whose audit directory is
// a file: the log does not open, status says it fails and risky calls
// are refused; once the file is gone, a later record opens the log and
// it resumes, with an audit_gap record first.
func TestAuditLogThatDoesNotOpen(t *testing.T) {
	t.Parallel()
	opts := workspace(t, map[string]server{"s": stdio("behave", nil)}, nil)
	agent := filepath.Join(opts.Home, ".volt", "agent")
	if err := os.MkdirAll(agent, 0o700); err != nil {
		t.Fatal(err)
	}
	blocker := filepath.Dir(audit.DefaultPath(agent))
	if err := os.WriteFile(blocker, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	e := start(t, opts)
	state := func() AuditState {
		return gw(t, e, GatewayInput{Action: "status"}).Data.(map[string]any)["audit"].(AuditState)
	}
	if st := state(); st.State != "failing" || st.Error == "" {
		t.Fatalf("status with an audit log that cannot open: %+v", st)
	}
	call := func() GatewayResult {
		return gw(t, e, GatewayInput{Action: "call", Server: "s", Tool: "slow", ArgumentsJSON: `{"ms": 1}`})
	}
	if r := call(); !r.IsError || !strings.Contains(r.Text, "audit log cannot be written") {
		t.Fatalf("a risky call with no audit log: %s", r.Text)
	}
	// The refused call's record waits in the backlog: once its write has
	// failed too, a record is lost, and the log that opens again must
	// say so with an audit_gap.
	testwait.For(t, "the refused call's record to be lost", func() bool { return state().Lost > 0 })
	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	deadline := testwait.Deadline(t)
	for state().State != "ok" {
		if time.Now().After(deadline) {
			t.Fatal("the audit log never opened")
		}
		call()
		time.Sleep(50 * time.Millisecond)
	}
	if r := call(); r.IsError {
		t.Fatalf("a call once the log is back: %s", r.Text)
	}
	e.Close()
	// One audit_gap: the records were lost before the log opened again,
	// and however many appends of this process run as it resumes (the
	// writer's, a call's intent with the backlog's records ahead of it),
	// one of them names the note of lost records; a second would name
	// the same records again.
	gaps, _, err := audit.Read(audit.DefaultPath(agent), audit.Query{Kind: audit.KindAuditGap})
	if err != nil || len(gaps) != 1 {
		all, _, _ := audit.Read(audit.DefaultPath(agent), audit.Query{})
		for _, r := range all {
			t.Logf("record %d: %s %s %v", r.Seq, r.Kind, r.Status, r.Detail)
		}
		t.Fatalf("audit_gap records: %d %v", len(gaps), err)
	}
}
