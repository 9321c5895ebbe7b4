//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/voltmcp/voltmcp/engine/audit"
)

// TestCLIAuditFailureIsLoud puts a FIFO, then a symlink, where the audit
// log is and runs `voltmcp call` as a user would: each call exits
// non-zero and says the audit log cannot be written, a call of a risk
// other than read is refused (its intent cannot be written first), and
// nothing blocks. A later command, with the log back, names the records
// lost in an audit_gap record, and `audit verify` reports them.
func TestCLIAuditFailureIsLoud(t *testing.T) {
	t.Parallel()
	for _, shape := range []string{"fifo", "symlink"} {
		t.Run(shape, func(t *testing.T) {
			home, project := t.TempDir(), benchProject(t)
			logPath := audit.DefaultPath(filepath.Join(home, ".volt", "agent"))
			if err := os.MkdirAll(filepath.Dir(logPath), 0o700); err != nil {
				t.Fatal(err)
			}
			elsewhere := filepath.Join(t.TempDir(), "elsewhere.jsonl")
			switch shape {
			case "fifo":
				if err := syscall.Mkfifo(logPath, 0o600); err != nil {
					t.Fatal(err)
				}
			case "symlink":
				if err := os.Symlink(elsewhere, logPath); err != nil {
					t.Fatal(err)
				}
			}
			cli := func(args ...string) cliResult {
				return runCLI(t, nil, append(args, "--home", home, "--project", project, "--approve")...)
			}
			for _, args := range [][]string{
				{"call", "up", "slow", "--args", `{"ms":1}`},
				{"call", "up", "echo", "--args", `{"text":"x"}`},
				{"call", "up", "echo", "--args", `{"text":"x"}`, "--json"},
			} {
				r := cli(args...)
				if r.code == 0 || !strings.Contains(r.stdout+r.stderr, "audit log cannot be written") {
					t.Errorf("voltmcp %s with a %s for the audit log: code %d\n%s\n%s", strings.Join(args, " "), shape, r.code, r.stdout, r.stderr)
				}
			}
			r := cli("call", "up", "slow", "--args", `{"ms":1}`)
			if !strings.Contains(r.stdout, "refused") || strings.Contains(r.stdout, "slept") {
				t.Errorf("a call of unknown risk ran without its intent in the log:\n%s", r.stdout)
			}
			if _, err := os.Stat(elsewhere); err == nil {
				t.Errorf("records were written through the link")
			}
			if err := os.Remove(logPath); err != nil {
				t.Fatal(err)
			}
			if r := cli("call", "up", "slow", "--args", `{"ms":1}`); r.code != 0 {
				t.Fatalf("a call once the log is back: code %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			r = runCLI(t, nil, "audit", "verify", "--home", home)
			if r.code == 0 || !strings.Contains(r.stdout, "records LOST") {
				t.Errorf("audit verify after records were lost: code %d\n%s", r.code, r.stdout)
			}
		})
	}
}
