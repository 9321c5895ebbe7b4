//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package engine

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/engine/audit"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// TestWriteAhead puts something other than a writable regular file
// where the audit log is, in several shapes: a call of unknown risk is
// refused at once (nothing blocks on a FIFO, nothing is written through
// a link), every answer says the log cannot be written, and the records
// lost are left in the note beside the log. A later engine, with the log
// back, names them in an audit_gap record that Verify reports, writes
// each risky call's intent before the call and its outcome after, and
// Verify finds every intent completed.
func TestWriteAhead(t *testing.T) {
	t.Parallel()
	for _, shape := range []struct {
		name string
		make func(t *testing.T, path string)
		why  string // in the status's error
	}{
		{"fifo", func(t *testing.T, path string) {
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "not a regular file (fifo)"},
		{"symlink", func(t *testing.T, path string) {
			if err := os.Symlink(filepath.Join(t.TempDir(), "elsewhere.jsonl"), path); err != nil {
				t.Fatal(err)
			}
		}, "not a regular file (symlink)"},
		{"directory", func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}, "directory"},
	} {
		// serve writes intents through the log's intent journal; the
		// default surface appends them.
		for _, surface := range []cue.Surface{"", cue.SurfaceServe} {
			t.Run(shape.name+"/surface="+string(surface), func(t *testing.T) {
				opts := workspace(t, map[string]server{"s": stdio("behave", nil)}, nil)
				opts.Surface = surface
				logPath := audit.DefaultPath(filepath.Join(opts.Home, ".volt", "agent"))
				if err := os.MkdirAll(filepath.Dir(logPath), 0o700); err != nil {
					t.Fatal(err)
				}
				shape.make(t, logPath)
				e := start(t, opts)
				risky := GatewayInput{Action: "call", Server: "s", Tool: "slow", ArgumentsJSON: `{"ms": 1}`}
				read := GatewayInput{Action: "call", Server: "s", Tool: "echo", Arguments: map[string]any{"text": "hi"}}
				if r := gw(t, e, risky); !r.IsError || !strings.Contains(r.Text, "audit log cannot be written") {
					t.Fatalf("a call of unknown risk with a %s for the audit log: %s", shape.name, r.Text)
				}
				st := gw(t, e, GatewayInput{Action: "status"})
				if a := st.Data.(map[string]any)["audit"].(AuditState); a.State != "failing" || !strings.Contains(a.Error, shape.why) {
					t.Errorf("the audit state with a %s for the log: %+v", shape.name, a)
				}
				// Every answer says so, whatever the action.
				for _, in := range []GatewayInput{{Action: "status"}, {Action: "list_servers"}, read, risky} {
					if r := gw(t, e, in); !strings.Contains(r.Text, "audit log cannot be written") {
						t.Errorf("the answer of %s %s.%s does not say the audit log cannot be written: %s", in.Action, in.Server, in.Tool, r.Text)
					}
				}
				e.Close()
				if shape.name == "symlink" {
					target, _ := os.Readlink(logPath)
					if _, err := os.Stat(target); err == nil {
						t.Errorf("records were written through the link")
					}
				}
				note, err := audit.PendingLost(logPath)
				if err != nil || note.Records < 2 || !strings.Contains(note.Error, shape.why) {
					t.Fatalf("the note of lost records: %+v %v", note, err)
				}

				// A later engine, with the log back.
				if err := os.Remove(logPath); err != nil {
					t.Fatal(err)
				}
				e = start(t, opts)
				ctx := testwait.Context(t)
				for _, in := range []GatewayInput{risky, read, risky} {
					if r := e.Gateway(ctx, in); r.IsError || strings.Contains(r.Text, "audit") {
						t.Fatalf("a call once the log is back: %s", r.Text)
					}
				}
				e.Close()
				rep, err := audit.Verify(logPath)
				if err != nil {
					t.Fatal(err)
				}
				if rep.LostRecords != note.Records || len(rep.Lost) != 1 || rep.Intact || rep.UnfinishedCalls != 0 || rep.BrokenLinks != 0 {
					t.Errorf("verify: lost %d (noted %d) in %d, intact %v, unfinished %d", rep.LostRecords, note.Records, len(rep.Lost), rep.Intact, rep.UnfinishedCalls)
				}
				if n, err := audit.PendingLost(logPath); err != nil || n.Records != 0 {
					t.Errorf("the note once an audit_gap names its records: %+v %v", n, err)
				}
				intents := auditRecords(t, opts, audit.Query{Kind: audit.KindCallIntent})
				calls := auditRecords(t, opts, audit.Query{Kind: audit.KindCall})
				if len(calls) != 3 {
					t.Fatalf("%d call records for 3 calls", len(calls))
				}
				// Each call not rated read names the intent written before it.
				seqs := map[int64]bool{}
				for _, in := range intents {
					seqs[in.Seq] = true
				}
				notRead := 0
				for _, c := range calls {
					switch {
					case c.Risk == string(RiskRead) && c.Intent != 0:
						t.Errorf("a read names an intent: %+v", c)
					case c.Risk != string(RiskRead) && (!seqs[c.Intent] || c.Intent >= c.Seq):
						t.Errorf("a call of risk %s names intent %d, not one written before it", c.Risk, c.Intent)
					}
					if c.Risk != string(RiskRead) {
						notRead++
					}
				}
				if notRead < 2 || len(intents) != notRead {
					t.Errorf("%d intents for %d calls not rated read", len(intents), notRead)
				}
				if js, _ := filepath.Glob(logPath + ".intents/j-*"); len(js) != 0 {
					t.Errorf("intent journals left by a closed engine: %v", js)
				}
			})
		}
	}
}
