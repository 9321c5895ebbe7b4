package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// The tests in this file reproduce bugs found by review, now fixed; each
// fails if its bug comes back.

// config show (text) renders values with json.Marshal, which escapes <, >
// and & for HTML: a redacted secret prints as "\u003credacted\u003e" and a
// URL's & as \u0026, though the usage says literal secrets print as
// <redacted>.
func TestRegressionConfigShowTextEscapesHTML(t *testing.T) {
	t.Parallel()
	project := canaryProject(t)
	r := runCLI(t, nil, "config", "show", "--home", t.TempDir(), "--project", project, "--approve")
	if strings.Contains(r.stdout, `\u003c`) || strings.Contains(r.stdout, `\u0026`) {
		t.Errorf("config show escapes <, > or & :\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, `servers.local.env.GITHUB_TOKEN = "<redacted>"`) {
		t.Errorf("config show does not print <redacted>:\n%s", r.stdout)
	}
}

// config show (text) looks up sources with its own path syntax
// (pathJoin), which writes servers.1password where the cue package's
// Sources use servers["1password"]: every value of a server whose id
// starts with a digit, and of a header such as 9Header, shows as
// "derived" instead of its file:line:col.
func TestRegressionConfigShowSourceOfDigitKeys(t *testing.T) {
	t.Parallel()

	dir := writeProject(t, "", `{
  "version": 1,
  "servers": {
    "1password": { "command": "op-mcp", "lifecycle": "eager" }
  }
}
`)
	r := runCLI(t, nil, "config", "show", "--home", t.TempDir(), "--project", dir, "--approve")
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.Contains(l, `"op-mcp"`) && !strings.Contains(l, "# project ") {
			t.Errorf("command of server 1password has no file source: %q", l)
		}
	}
}

// `voltmcp help --help` (and help -h) reports unknown command "--help"
// and exits 2, where help for help is the global usage.
func TestRegressionHelpHelp(t *testing.T) {
	t.Parallel()

	for _, arg := range []string{"--help", "-h"} {
		r := runCLI(t, nil, "help", arg)
		if r.code != exitOK || !strings.Contains(r.stdout, "Commands:") {
			t.Errorf("help %s:\n%s", arg, r)
		}
	}
}

// report() prints "interrupted" for a cancelled context, but vet and
// config wrap the context error in failuref, and report checks for an
// exitError first: Ctrl-C prints "context canceled" instead.
func TestRegressionInterruptedMessage(t *testing.T) {
	t.Parallel()

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := runCLICtx(t, ctx, nil, nil, "vet", "--home", t.TempDir(), "--project", t.TempDir())
	if r.stderr != "voltmcp vet: interrupted\n" {
		t.Errorf("stderr = %q, want %q", r.stderr, "voltmcp vet: interrupted\n")
	}
}

// A value that fails an enum is left out of the "want one of" list only
// when CUE quotes it the way Go's %q does. A secret holding a character
// the two quote differently (here DEL, \u007f) is printed whole in the
// list (cue/schema.go report).
func TestRegressionEnumMessageLeaksValue(t *testing.T) {
	t.Parallel()

	dir := writeProject(t, "", `{
  "version": 1,
  "servers": {
    "s": { "command": "node", "lifecycle": "`+secretCanary+`\u007f" }
  }
}
`)
	r := runCLI(t, nil, "vet", "--home", t.TempDir(), "--project", dir, "--approve")
	if r.code != exitFindings {
		t.Fatalf("want exit 1\n%s", r)
	}
	assertNoCanary(t, "vet", r)
}

// urlSecret and redactURL read the query with url.Values, which drops a
// pair it cannot parse (one holding ';' or a bad %-escape) without a
// word: a token in such a pair is neither reported by vet nor redacted by
// config show (cue/redact.go).
func TestRegressionURLQuerySecretNotRedacted(t *testing.T) {
	t.Parallel()

	for _, u := range []string{
		"https://mcp.example.com/mcp?x=1;token=" + secretCanary,
		"https://mcp.example.com/mcp?token=" + secretCanary + "%zz",
	} {
		dir := writeProject(t, "", `{"version": 1, "servers": {"s": {"url": "`+u+`"}}}`)
		r := runCLI(t, nil, "config", "show", "--home", t.TempDir(), "--project", dir, "--approve")
		assertNoCanary(t, "config show "+u, r)
		v := runCLI(t, nil, "vet", "--home", t.TempDir(), filepath.Join(dir, ".volt", "mcp.json"))
		if !strings.Contains(v.stdout, "literal-secret") {
			t.Errorf("vet does not report the token in %s:\n%s", u, v.stdout)
		}
	}
}
