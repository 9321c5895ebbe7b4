package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voltmcp/voltmcp/engine"
)

// runPlugin runs the CLI with stdin and returns its result.
func runPlugin(t *testing.T, stdin string, args ...string) cliResult {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(stdin), &out, &errb, fakeEnv(t, nil))
	return cliResult{code: code, stdout: out.String(), stderr: errb.String()}
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPluginRunClassify(t *testing.T) {
	t.Parallel()
	in := writeFile(t, "tool.json", `{"server":"github","tool":"delete_repo","trust_tool_hints":false}`)
	for _, args := range [][]string{
		{"plugin", "run", "builtin", "--classify", in},
		{"plugin", "run", "builtin", "--classify", "-"},
	} {
		r := runPlugin(t, `{"server":"github","tool":"delete_repo"}`, args...)
		if r.code != exitOK {
			t.Fatalf("%v\n%s", args, r)
		}
		var c struct{ Risk, Reason, Module string }
		if err := json.Unmarshal([]byte(r.stdout), &c); err != nil {
			t.Fatalf("%v\n%s", err, r)
		}
		if c.Risk != "destructive" || c.Module != "builtin" || !strings.Contains(c.Reason, "delete") {
			t.Errorf("%v: got %+v", args, c)
		}
	}
}

func TestPluginRunShape(t *testing.T) {
	t.Parallel()
	in := writeFile(t, "result.json", `{"server":"s","tool":"t","risk":"read","content":[{"type":"text","text":"\u001b[32mok\u001b[0m"}],"limits":{"max_bytes":100,"max_lines":10}}`)
	r := runPlugin(t, "", "plugin", "run", "builtin", "--shape", in)
	if r.code != exitOK {
		t.Fatal(r)
	}
	want := `{
  "content": [
    {
      "type": "text",
      "text": "ok"
    }
  ],
  "notes": [
    "stripped 2 ANSI sequences"
  ]
}
`
	if r.stdout != want {
		t.Errorf("got\n%s\nwant\n%s", r.stdout, want)
	}
}

func TestPluginCheck(t *testing.T) {
	t.Parallel()
	asExample := filepath.Join("..", "..", "examples", "plugins", "as", "classifier.wasm")
	bad := writeFile(t, "bad.wasm", "\x00asm\x01\x00\x00\x00")
	r := runPlugin(t, "", "plugin", "check", "builtin", asExample)
	if r.code != exitOK || strings.Count(r.stdout, "ok   ") != 2 || !strings.Contains(r.stdout, "builtin (classify, shape; sha256 ") {
		t.Fatalf("want two ok lines\n%s", r)
	}
	r = runPlugin(t, "", "plugin", "check", asExample, bad)
	if r.code != exitFindings || !strings.Contains(r.stdout, "FAIL "+bad+": ") || !strings.Contains(r.stdout, "ok   "+asExample) {
		t.Errorf("want one ok and one FAIL, exit 1\n%s", r)
	}
	r = runPlugin(t, "", "plugin", "check", asExample, "--sha256", strings.Repeat("0", 64))
	if r.code != exitFindings || !strings.Contains(r.stdout, "does not match its pin") {
		t.Errorf("want a pin mismatch\n%s", r)
	}
}

func TestPluginUsageErrors(t *testing.T) {
	t.Parallel()
	in := writeFile(t, "tool.json", `{"tool":"x"}`)
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"plugin"}, exitUsage, "want 'voltmcp plugin run"},
		{[]string{"plugin", "runn", "builtin"}, exitUsage, `did you mean "run"`},
		{[]string{"plugin", "run", "builtin"}, exitUsage, "exactly one of --classify FILE and --shape FILE"},
		{[]string{"plugin", "run", "builtin", "--classify", in, "--shape", in}, exitUsage, "exactly one of"},
		{[]string{"plugin", "run", "a.wasm", "b.wasm", "--classify", in}, exitUsage, "exactly one MODULE"},
		{[]string{"plugin", "check"}, exitUsage, "at least one MODULE"},
		{[]string{"plugin", "run", "missing.wasm", "--classify", in}, exitFailure, "missing.wasm"},
		{[]string{"plugin", "run", "builtin", "--classify", writeFile(t, "typo.json", `{"tol":"x"}`)}, exitFailure, `unknown field "tol"`},
		{[]string{"plugin", "run", "builtin", "--classify", in, "--sha256", "00"}, exitFailure, "does not match its pin 00"},
	}
	for _, tt := range tests {
		r := runPlugin(t, "", tt.args...)
		if r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%v: want exit %d and %q\n%s", tt.args, tt.code, tt.want, r)
		}
	}
}

// TestPluginCacheDirIsTheGateways checks that the CLI keeps compiled
// plugins where the engine does by default (engine.DefaultPluginCacheDir,
// voltmcp/wasm under $XDG_CACHE_HOME, else under <home>/.cache): `plugin
// check` compiles into it, and the gateway's commands pass it on.
func TestPluginCacheDirIsTheGateways(t *testing.T) {
	t.Parallel()
	module, err := filepath.Abs(filepath.Join("..", "..", "wasm", "testdata", "grow.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	for _, xdg := range []bool{true, false} {
		home, cache := t.TempDir(), t.TempDir()
		vars := map[string]string{"HOME": home, "XDG_CACHE_HOME": ""}
		want := filepath.Join(home, ".cache", "voltmcp", "wasm")
		if xdg {
			vars["XDG_CACHE_HOME"] = cache
			want = filepath.Join(cache, "voltmcp", "wasm")
		}
		getenv := fakeEnv(t, vars)
		if got := engine.DefaultPluginCacheDir(home, func(k string) (string, bool) { v := getenv(k); return v, v != "" }); got != want {
			t.Errorf("XDG_CACHE_HOME set %v: engine.DefaultPluginCacheDir = %s; want %s", xdg, got, want)
		}
		g := globals{}
		if err := g.resolve(getenv); err != nil {
			t.Fatal(err)
		}
		if g.pluginCache != want {
			t.Errorf("XDG_CACHE_HOME set %v: the gateway's commands use %s; want %s", xdg, g.pluginCache, want)
		}
		if r := runCLI(t, getenv, "plugin", "check", module); r.code != exitOK {
			t.Fatalf("plugin check: %s", r)
		}
		if entries, err := os.ReadDir(want); err != nil || len(entries) == 0 {
			t.Errorf("XDG_CACHE_HOME set %v: plugin check left %v in %s (%v); want the compiled module", xdg, entries, want, err)
		}
	}
}
