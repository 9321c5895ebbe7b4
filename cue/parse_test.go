package cue

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/voltmcp/voltmcp/redact"
)

func TestParseJSON(t *testing.T) {
	for _, tt := range []struct {
		in      string
		wantErr string
		errOff  int
	}{
		{in: `{"a":[1,-2.5e3,true,false,null,"x\u00e9\n"],"b":{}}`},
		{in: "\ufeff{\"a\":1}"},
		{in: `  {"a" : 1 }  `},
		{in: `{"a":1,}`, wantErr: "trailing comma", errOff: 7},
		{in: `[1,]`, wantErr: "trailing comma", errOff: 3},
		{in: `{"a":1} x`, wantErr: "after the top-level value", errOff: 8},
		{in: `{"a":01}`, wantErr: "want ',' or '}'", errOff: 6},
		{in: `{"a":"\x"}`, wantErr: "invalid escape", errOff: 7},
		{in: "{\"a\":\"\x01\"}", wantErr: "control character", errOff: 6},
		{in: `{"a":"unterminated`, wantErr: "unterminated string", errOff: 5},
		{in: `{"a":tru}`, wantErr: "want a value", errOff: 5},
		{in: `// comment` + "\n{}", wantErr: "want a value", errOff: 0},
		{in: "{\"a\":\"\xff\"}", wantErr: "invalid UTF-8", errOff: 6},
		{in: ``, wantErr: "end of file", errOff: 0},
		{in: strings.Repeat("[", maxDepth+2), wantErr: "nesting deeper", errOff: maxDepth + 1},
	} {
		n, _, err := parseJSON(newSource("t.json", LayerFile, []byte(tt.in)))
		if tt.wantErr == "" {
			if err != nil {
				t.Errorf("%q: %v", tt.in, err)
				continue
			}
			// The tree round-trips to the same JSON value.
			var want, got any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(tt.in, "\ufeff")), &want); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(n.appendJSON(nil), &got); err != nil {
				t.Fatalf("%q: re-encoded JSON invalid: %v", tt.in, err)
			}
			if a, b := mustJSON(want), mustJSON(got); a != b {
				t.Errorf("%q: round trip %s != %s", tt.in, b, a)
			}
			continue
		}
		se, ok := err.(*syntaxError)
		if !ok || !strings.Contains(se.msg, tt.wantErr) || se.off != tt.errOff {
			t.Errorf("%q: err = %v, want %q at offset %d", tt.in, err, tt.wantErr, tt.errOff)
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestParsePositionsAndPaths(t *testing.T) {
	src := newSource("t.json", LayerFile, []byte("{\n  \"servers\": {\n    \"my.srv\": {\"args\": [\"a\", \"b\"]}\n  }\n}"))
	n, dups, err := parseJSON(src)
	if err != nil || len(dups) != 0 {
		t.Fatal(err, dups)
	}
	b := n.get("servers").get("my.srv").get("args").items[1]
	if b.path != `servers["my.srv"].args[1]` {
		t.Errorf("path = %q", b.path)
	}
	if p := b.pos(); p.Line != 3 || p.Col != 30 {
		t.Errorf("pos = %d:%d, want 3:30", p.Line, p.Col)
	}
}

func TestDuplicateKeysLastWins(t *testing.T) {
	n, dups, err := parseJSON(newSource("t.json", LayerFile, []byte(`{"a":1,"b":2,"a":3}`)))
	if err != nil {
		t.Fatal(err)
	}
	if len(dups) != 1 || dups[0].path != "a" || n.get("a").str != "3" || len(n.fields) != 2 {
		t.Errorf("dups = %+v, a = %s", dups, n.get("a").str)
	}
}

func TestNormalizeID(t *testing.T) {
	for in, want := range map[string]string{
		"github": "github", "GitHub": "github", "my server": "my-server", "a__b": "a_b",
		"a-_b": "a-b", "--x--": "x", "x.y.z": "x-y-z", "__init__": "init", "!!!": "",
		"über": "ber", strings.Repeat("a", 60): strings.Repeat("a", 48),
	} {
		if got := NormalizeID(in); got != want {
			t.Errorf("NormalizeID(%q) = %q, want %q", in, got, want)
		}
		if got := NormalizeID(NormalizeID(in)); got != NormalizeID(in) {
			t.Errorf("NormalizeID is not idempotent on %q", in)
		}
	}
}

func TestExpandEnv(t *testing.T) {
	lookup := func(k string) (string, bool) {
		v, ok := map[string]string{"A": "1", "EMPTY": ""}[k]
		return v, ok
	}
	got, err := ExpandEnv("x${env:A}y${env:EMPTY}z", lookup)
	if err != nil || got != "x1yz" {
		t.Errorf("ExpandEnv = %q, %v", got, err)
	}
	_, err = ExpandEnv("${env:MISSING}", lookup)
	if me, ok := err.(*MissingEnvError); !ok || me.Name != "MISSING" {
		t.Errorf("err = %v", err)
	}
	if refs := EnvRefs("Bearer ${env:T} ${env:U}"); len(refs) != 2 || refs[0] != "T" {
		t.Errorf("EnvRefs = %q", refs)
	}
}

func TestLintHelpers(t *testing.T) {
	for _, tt := range []struct {
		base string
		args []string
		pkg  string
		pin  bool
	}{
		{"npx", []string{"-y", "@scope/pkg@1.2.3"}, "@scope/pkg@1.2.3", true},
		{"npx", []string{"-y", "@scope/pkg"}, "@scope/pkg", false},
		{"npx", []string{"pkg@^1.2.0"}, "pkg@^1.2.0", false},
		{"npx", []string{"--package", "pkg@2.0.0", "bin"}, "pkg@2.0.0", true},
		{"uvx", []string{"mcp-server-git==0.6.2"}, "mcp-server-git==0.6.2", true},
		{"uvx", []string{"--from", "git+https://x", "tool"}, "git+https://x", false},
		{"pnpm", []string{"dlx", "pkg@1.0.0"}, "pkg@1.0.0", true},
		{"npx", []string{"./local/server.js"}, "./local/server.js", true},
	} {
		pkg, ok := launcherPackage(tt.base, tt.args)
		if !ok || pkg != tt.pkg || pinned(tt.base, pkg) != tt.pin {
			t.Errorf("%s %q: pkg %q ok %v pinned %v", tt.base, tt.args, pkg, ok, pinned(tt.base, pkg))
		}
	}
	for _, s := range []string{"ghp_abcdefghijklmnopqrstuvwxyz0123456789", "sk-proj-abc", "AKIAIOSFODNN7EXAMPLE", "9f8e7d6c5b4a39281706f5e4d3c2b1a0ffeeddcc"} {
		if !redact.LooksSecret(s) {
			t.Errorf("redact.LooksSecret(%q) = false", s)
		}
	}
	for _, s := range []string{"@modelcontextprotocol/server-everything@2026.8.31", "/usr/local/bin/server", "hello world", "https://example.com/a/b/c/d", "production-environment-01"} {
		if redact.LooksSecret(s) {
			t.Errorf("redact.LooksSecret(%q) = true", s)
		}
	}
	if !isLoopback("127.0.0.1") || !isLoopback("::1") || !isLoopback("localhost") || isLoopback("10.0.0.1") {
		t.Error("isLoopback")
	}
}
