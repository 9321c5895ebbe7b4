package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/voltmcp/voltmcp/internal/testwait"
)

// TestLogsCommand runs a server that dies at start, then `voltmcp logs`
// on it: the text and JSON forms show its stderr and its exit, -f shows
// them and keeps following until interrupted, an unknown server is an
// error that names it and the servers there are, and `voltmcp remove`
// deletes the log.
func TestLogsCommand(t *testing.T) {
	getenv := fakeEnv(t, nil)
	cli := func(args ...string) cliResult { return runCLI(t, getenv, args...) }
	if r := cli("add", "quiet", "--", "/bin/true"); r.code != exitOK {
		t.Fatalf("add: %s", r)
	}
	if r := cli("logs", "quiet"); r.code != exitOK || r.stdout != "" || !strings.Contains(r.stderr, `server "quiet" has no log yet`) {
		t.Errorf("logs of a server never run: %s", r)
	}
	if r := cli("add", "dies", "--", "/bin/sh", "-c", `printf 'starting\n}\n\nError: Cannot find module "x"\n' >&2; exit 1`); r.code != exitOK {
		t.Fatalf("add: %s", r)
	}
	if r := cli("refresh", "dies", "--approve"); r.code == exitOK || !strings.Contains(r.stderr, `Error: Cannot find module "x"`) || !strings.Contains(r.stderr, "voltmcp logs dies") {
		t.Fatalf("refresh: %s", r)
	}

	r := cli("logs", "dies")
	if r.code != exitOK {
		t.Fatalf("logs: %s", r)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	want := []string{"stderr starting", "stderr }", "stderr ", `stderr Error: Cannot find module "x"`, "error  "}
	if len(lines) != len(want) {
		t.Fatalf("logs printed %d lines, want %d:\n%s", len(lines), len(want), r.stdout)
	}
	for i, w := range want {
		_, rest, _ := strings.Cut(lines[i], " ")
		if !strings.HasPrefix(rest, w) {
			t.Errorf("line %d: %q, want it to start with a time and %q", i, lines[i], w)
		}
	}
	if !strings.Contains(lines[4], `server "dies" exited (exit status 1)`) {
		t.Errorf("the exit is not logged: %q", lines[4])
	}

	r = cli("logs", "dies", "--json")
	for i, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("--json line %d: %q", i, l)
		}
		if rec["server"] != "dies" || rec["time"] == "" || (rec["kind"] != "stderr" && rec["kind"] != "error") || rec["text"] == nil || len(rec) != 4 {
			t.Errorf("--json line %d: %v", i, rec)
		}
	}

	// -f prints what there is and follows until interrupted.
	ctx, cancel := context.WithCancel(testwait.Context(t))
	out := &syncBuffer{}
	done := make(chan cliResult, 1)
	go func() { done <- runCLICtx(t, ctx, getenv, out, "logs", "dies", "-f") }()
	testwait.For(t, "logs -f to print the log", func() bool { return strings.Contains(out.String(), "exited (exit status 1)") })
	cancel()
	if r := <-done; r.code != exitOK {
		t.Errorf("logs -f: %s", r)
	}

	r = cli("logs", "nope")
	if r.code != exitUsage || !strings.Contains(r.stderr, `unknown server "nope": the servers are dies, quiet`) {
		t.Errorf("logs of an unknown server: %s", r)
	}
	if r := cli("remove", "dies"); r.code != exitOK || !strings.Contains(r.stdout, "its log") {
		t.Errorf("remove: %s", r)
	}
}
