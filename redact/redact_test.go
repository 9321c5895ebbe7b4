package redact_test

import (
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"strings"
	"testing"

	"github.com/voltmcp/voltmcp/redact"
)

func TestArgs(t *testing.T) {
	const v = "s3cr3t-value-1234"
	cases := []struct{ in, want []string }{
		{[]string{"--api-key", v}, []string{"--api-key", redact.Marker}},
		{[]string{"--token=" + v}, []string{"--token=" + redact.Marker}},
		{[]string{"--password", v}, []string{"--password", redact.Marker}},
		{[]string{"https://x.example/?key=" + v}, []string{"https://x.example/?key=REDACTED"}},
		{[]string{"--url", "https://bob:" + v + "@x.example/mcp"}, []string{"--url", "https://bob:REDACTED@x.example/mcp"}},
		{[]string{"--header", "Authorization: Bearer " + v}, []string{"--header", "Authorization: " + redact.Marker}},
		{[]string{"Bearer " + v}, []string{redact.Marker}},
		{[]string{"--header=Authorization: Bearer " + v}, []string{"--header=Authorization: " + redact.Marker}},
		{[]string{"-H", "Cookie: session=" + v}, []string{"-H", "Cookie: " + redact.Marker}},
		{[]string{"-e", "GITHUB_TOKEN=" + v}, []string{"-e", "GITHUB_TOKEN=" + redact.Marker}},
		{[]string{"-e", "LOG_LEVEL=debug", "--mode=fast", "host:8080", "github:owner/repo"}, nil},
		{[]string{"--token", "${env:TOKEN}"}, []string{"--token", "${env:TOKEN}"}},
		{[]string{"--token=${env:TOKEN}"}, []string{"--token=${env:TOKEN}"}},
		{[]string{"ghp_abcdefghijklmnop"}, []string{redact.Marker}},
		{[]string{"-y", "@acme/db-mcp@1.2.3", "--port", "8080", "localhost:8080", "/tmp/x"}, nil},
	}
	for _, c := range cases {
		got := redact.Args(c.in)
		want := c.want
		if want == nil {
			want = c.in
		}
		if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
			t.Errorf("Args(%q) = %q, want %q", c.in, got, want)
		}
		if c.want != nil {
			secrets := redact.ArgSecrets(c.in)
			if strings.Contains(strings.Join(c.in, " "), v) && !containsAny(secrets, v) && !strings.Contains(strings.Join(secrets, " "), v) {
				t.Errorf("ArgSecrets(%q) = %q lacks the value", c.in, secrets)
			}
		}
	}
}

func containsAny(list []string, v string) bool {
	for _, s := range list {
		if s == v {
			return true
		}
	}
	return false
}

func TestArgsNoCopy(t *testing.T) {
	in := []string{"-y", "pkg@1.0.0"}
	if got := redact.Args(in); &got[0] != &in[0] {
		t.Error("Args copied a list without secrets")
	}
}

func TestScrubberForms(t *testing.T) {
	const v = "hunter2-canary-Zq9"
	s := redact.NewScrubber("[redacted]", v, "short")
	texts := []string{
		"plain " + v + " end",
		"query ?x=" + url.QueryEscape(v+" /") + "&",
		"basic " + base64.StdEncoding.EncodeToString([]byte("alice:"+v)),
		"json " + base64.URLEncoding.EncodeToString([]byte(`{"k":"`+v+`"}`)),
		"raw " + base64.RawStdEncoding.EncodeToString([]byte("ab"+v+"c")),
		"hex " + hex.EncodeToString([]byte("k="+v)),
		"HEX " + strings.ToUpper(hex.EncodeToString([]byte(v))),
		"b32 " + base32.StdEncoding.EncodeToString([]byte(v)),
		"b32 inside " + base32.StdEncoding.EncodeToString([]byte("abc"+v+"de")),
	}
	for _, text := range texts {
		out := s.Text(text)
		if !strings.Contains(out, "[redacted]") {
			t.Errorf("Text(%q) = %q: nothing removed", text, out)
		}
	}
	if got := s.Text("a short text"); got != "a short text" {
		t.Errorf("a value under MinValueLen was removed: %q", got)
	}
	if s.With(v) != s {
		t.Error("With of a known value built a new scrubber")
	}
}
