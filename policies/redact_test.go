package policies

import (
	"context"
	"encoding/base64"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/voltmcp/voltmcp/redact"
)

// canaries are secret values that must never survive redaction.
var canaryEnv = map[string]string{
	"ACME_DEPLOY_TOKEN": "canary-env-4d1c0ffee",
	"DB_PASSWORD":       `pa"ss\word-canary`,
	"SHORT":             "abc", // below MinSecretLen: not redacted by value
}

func lookupCanary(name string) (string, bool) {
	v, ok := canaryEnv[name]
	return v, ok
}

func TestRedactCanaries(t *testing.T) {
	t.Parallel()
	p := mustLoad(t, nil)
	r, err := p.Redactor(context.Background(), RedactInput{EnvNames: []string{"ACME_DEPLOY_TOKEN", "DB_PASSWORD", "SHORT", "UNSET"}, LookupEnv: lookupCanary})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ in, secret string }{
		{"deploying with canary-env-4d1c0ffee now", "canary-env-4d1c0ffee"},
		{`{"note":"pa\"ss\\word-canary"}`, `word-canary`},
		{"https://example.com/x?v=canary-env-4d1c0ffee", "canary-env-4d1c0ffee"},
		{"Authorization: Bearer canaryBEARER1234567", "canaryBEARER1234567"},
		{"authorization: basic Y2FuYXJ5OmJhc2ljcGFzcw==", "Y2FuYXJ5OmJhc2ljcGFzcw=="},
		{"clone https://alice:canary-pass-99@git.example.com/repo.git", "canary-pass-99"},
		{"clone https://canarytok3n@github.com/acme/repo", "canarytok3n"},
		{"callback https://app.example.com/cb?code=canary-code-77&state=ok", "canary-code-77"},
		{"GET /x?access_token=canary-at-55 HTTP/1.1", "canary-at-55"},
		{"token ghp_canary0123456789abcdefghijklmnopqrstu", "ghp_canary0123456789abcdefghijklmnopqrstu"},
		{"aws AKIACANARY0123456789", "AKIACANARY0123456789"},
		{"key sk-ant-canary0123456789abcdefghij", "sk-ant-canary0123456789abcdefghij"},
		{"slack xoxb-canary-0123456789", "xoxb-canary-0123456789"},
		{"jwt eyJhbGciOiJIUzI1NiJ9.eyJjYW5hcnkiOnRydWV9.Y2FuYXJ5c2lnbmF0dXJl", "eyJjYW5hcnkiOnRydWV9"},
		{"-----BEGIN PRIVATE KEY-----\ncanaryPEMbody\n-----END PRIVATE KEY-----", "canaryPEMbody"},
		{`{"client_secret": "canary secret with spaces", "q": "ok"}`, "canary secret with spaces"},
		{`{"GITHUB_TOKEN":"canary-json-token"}`, "canary-json-token"},
		{"password=canary-kv-pass&user=bob", "canary-kv-pass"},
		{"x-api-key: canary-header-key", "canary-header-key"},
	}
	for _, tt := range tests {
		got := r.Redact(tt.in)
		if strings.Contains(got, tt.secret) || !strings.Contains(got, Replacement) {
			t.Errorf("Redact(%q) = %q: secret %q survived", tt.in, got, tt.secret)
		}
		if b := r.RedactBytes([]byte(tt.in)); string(b) != got {
			t.Errorf("RedactBytes differs from Redact: %q vs %q", b, got)
		}
	}
	for _, keep := range []string{
		"list the open issues in voltmcp/voltmcp",
		"https://example.com/docs?page=2#intro",
		`{"limit": 10, "owner": "acme"}`,
		"abc is short and stays",
	} {
		if got := r.Redact(keep); got != keep {
			t.Errorf("Redact(%q) = %q, want it unchanged", keep, got)
		}
	}
	if !r.IsSecretKey("GITHUB_TOKEN") || !r.IsSecretKey("Authorization") || r.IsSecretKey("owner") {
		t.Error("IsSecretKey misclassifies")
	}
	// The names package redact knows as secret (vet and config show go by
	// them) are secret keys here too, beyond the decision's keys.
	for _, k := range []string{"X-Auth", "SESSION", "STRIPE_KEY", "sig"} {
		if !r.IsSecretKey(k) {
			t.Errorf("IsSecretKey(%q) = false; redact.IsSecretName says it is secret", k)
		}
	}
	if got := r.Redact(r.Redact(`"token": "x1"`)); got != `"token": "[REDACTED]"` {
		t.Errorf("redaction is not idempotent: %s", got)
	}
}

func TestRedactUserAdditions(t *testing.T) {
	t.Parallel()
	dir, _ := writePolicy(t, "redact.rego", "package voltmcp.redact\n\nsecret_pattern contains `\\bACME-[0-9]{6}\\b`\n\nsecret_env contains \"ALWAYS_SECRET\"\n")
	p := mustLoad(t, &Options{Dirs: []string{dir}})
	r, err := p.Redactor(context.Background(), RedactInput{LookupEnv: func(n string) (string, bool) {
		if n == "ALWAYS_SECRET" {
			return "canary-always-1", true
		}
		return "", false
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Redact("ticket ACME-123456 and canary-always-1"); got != "ticket [REDACTED] and [REDACTED]" {
		t.Fatalf("got %q", got)
	}
}

func TestRedactBadPatternFallsBackToDefaults(t *testing.T) {
	t.Parallel()
	dir, _ := writePolicy(t, "redact.rego", "package voltmcp.redact\n\nsecret_pattern contains `(unclosed`\n")
	p := mustLoad(t, &Options{Dirs: []string{dir}})
	r, err := p.Redactor(context.Background(), RedactInput{EnvNames: []string{"ACME_DEPLOY_TOKEN"}, LookupEnv: lookupCanary})
	if err == nil || !strings.Contains(err.Error(), "(unclosed") {
		t.Fatalf("want an error naming the pattern, got %v", err)
	}
	if got := r.Redact("canary-env-4d1c0ffee ghp_canary0123456789abcdefghijklmnopqrstu"); strings.Contains(got, "canary") {
		t.Fatalf("fallback redactor leaked: %q", got)
	}
}

// TestPrefilterAgreesWithRegexp checks that skipping text never changes
// what a pattern finds.
func TestPrefilterAgreesWithRegexp(t *testing.T) {
	t.Parallel()
	p := mustLoad(t, nil)
	r, err := p.Redactor(context.Background(), RedactInput{LookupEnv: lookupCanary})
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{
		"",
		"plain text\nwith lines\n",
		"Authorization: BEARER abcdefgh12345678\nnext line token  zzzzzzzzzz\n",
		"a\nhttps://u:p@h/x?Token=abc&code=1\n\"Password\": \"x y\"\nsk-0123456789abcdefghijkl",
		"line1 ghp_0123456789abcdefghijklmnopqrstuvwxyz\r\nline2 eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlMTIz",
		"-----BEGIN EC PRIVATE KEY-----\nabc\n-----END EC PRIVATE KEY-----\nİstanbul token=ÄÖÜ",
		strings.Repeat("x", 5000) + "\napi_key=abc\n" + strings.Repeat("y", 5000),
	}
	for _, vp := range r.all {
		for _, s := range texts {
			got := vp.filter.findAll(vp.re, s, func() string { return lowerASCII(s) })
			want := vp.re.FindAllStringSubmatchIndex(s, -1)
			if len(got) != len(want) {
				t.Errorf("%s on %q: %v, want %v", vp.re, s, got, want)
				continue
			}
			for i := range got {
				if !slices.Equal(got[i], want[i]) {
					t.Errorf("%s on %q: %v, want %v", vp.re, s, got, want)
				}
			}
		}
	}
}

// TestRedactEncodedEnvValues checks that a secret env value is redacted
// in the forms it takes inside an audit record's strings when something
// carried it there encoded: a tool name or resource URI holding it
// URL-encoded, an error or detail holding it base64-encoded on its own or
// inside a longer encoded string (Basic credentials, a JSON document).
func TestRedactEncodedEnvValues(t *testing.T) {
	t.Parallel()
	const v = "canary/ENC+6e1d 9a3f=c7&x"
	p := mustLoad(t, nil)
	r, err := p.Redactor(context.Background(), RedactInput{EnvNames: []string{"ENC_VALUE"},
		LookupEnv: func(n string) (string, bool) { return v, n == "ENC_VALUE" }})
	if err != nil {
		t.Fatal(err)
	}
	lowerHex := strings.NewReplacer("%2F", "%2f", "%2B", "%2b", "%3D", "%3d")
	b64 := func(e *base64.Encoding, s string) string { return e.EncodeToString([]byte(s)) }
	doc := b64(base64.StdEncoding, `{"user":"bob","secret_value":"`+v+`","n":1}`)
	tests := []struct{ in, secret string }{
		{"mcptest://readme?q=" + url.QueryEscape(v), url.QueryEscape(v)},
		{"mcptest://files/" + url.PathEscape(v) + "/x", url.PathEscape(v)},
		{"mcptest://readme?q=" + lowerHex.Replace(url.QueryEscape(v)), lowerHex.Replace(url.QueryEscape(v))},
		{"tool-" + b64(base64.StdEncoding, v), b64(base64.RawStdEncoding, v)},
		{"tool-" + b64(base64.URLEncoding, v), b64(base64.RawURLEncoding, v)},
		{"upstream said: " + b64(base64.RawStdEncoding, v) + " is wrong", b64(base64.RawStdEncoding, v)},
		// Inside a longer encoding: the run of characters all of whose bits
		// are v's (all but the up to two characters at either end).
		{"payload " + doc, b64(base64.RawStdEncoding, `"secret_value":"`+v)[24:]},
		{"x-creds: " + b64(base64.StdEncoding, "bob:"+v), b64(base64.RawStdEncoding, "bob:"+v)[8:30]},
		{`{"detail":"` + strings.ReplaceAll(v, "&", `\u0026`) + `"}`, strings.ReplaceAll(v, "&", `\u0026`)},
	}
	for _, tt := range tests {
		got := r.Redact(tt.in)
		if strings.Contains(got, tt.secret) || strings.Contains(got, v) || !strings.Contains(got, Replacement) {
			t.Errorf("Redact(%q) = %q: the encoded secret %q survived", tt.in, got, tt.secret)
		}
	}
}

// TestDefaultPatternsKnowEveryTokenFormat checks the default redact
// decision against package redact's list of credential formats, the one
// vet and config show go by: a token of each format in free text is
// redacted from audit records too.
func TestDefaultPatternsKnowEveryTokenFormat(t *testing.T) {
	t.Parallel()
	p := mustLoad(t, nil)
	r, err := p.Redactor(context.Background(), RedactInput{})
	if err != nil {
		t.Fatal(err)
	}
	body := strings.Repeat("0123456789", 7)
	for _, prefix := range redact.TokenPrefixes() {
		token := prefix + body
		if strings.HasPrefix(prefix, "-----BEGIN") {
			token = "-----BEGIN PRIVATE KEY-----\n" + body + "\n-----END PRIVATE KEY-----"
		}
		// Fixed-length formats (AKIA and 16 characters) leave the rest of
		// the long body: the token's start must be gone.
		if got := r.Redact("the server said " + token + " and more"); !strings.Contains(got, Replacement) || strings.Contains(got, token[:len(prefix)+8]) {
			t.Errorf("a %q token survived the default redact decision: %q", prefix, got)
		}
	}
}
