package engine

import (
	"slices"
	"testing"

	"github.com/voltmcp/voltmcp/cue"
)

// TestServerSecrets: every place a server's definition holds a secret
// gives serverSecrets the value as the server receives it, and nothing
// else of the definition is taken for one.
func TestServerSecrets(t *testing.T) {
	t.Parallel()
	host := map[string]string{"TOK": "hostTOKv4lue1", "ALLOWED": "allowedV4lue2", "QTOK": "qtokV4lue3", "AUTHV": "authV4lue4",
		"MODE_PLAIN": "plainmode"}
	lookup := func(k string) (string, bool) { v, ok := host[k]; return v, ok }
	cases := []struct {
		name string
		srv  cue.Server
		want []string // each must be found
		not  []string // none may be
	}{
		{"env reference", cue.Server{Env: map[string]string{"API": "${env:TOK}"}}, []string{"hostTOKv4lue1"}, nil},
		{"env literal secret", cue.Server{Env: map[string]string{"API_TOKEN": "litS3cretValue"}}, []string{"litS3cretValue"}, nil},
		{"env literal plain", cue.Server{Env: map[string]string{"LOG_LEVEL": "verbose-debug"}}, nil, []string{"verbose-debug"}},
		{"env reference unset", cue.Server{Env: map[string]string{"API": "${env:NOPE}"}}, nil, []string{""}},
		{"allowlist", cue.Server{EnvAllowlist: []string{"ALLOWED", "NOPE"}}, []string{"allowedV4lue2"}, nil},
		{"argv flag", cue.Server{Args: []string{"--api-key", "argFl4gValue"}}, []string{"argFl4gValue"}, []string{"--api-key"}},
		{"argv eq", cue.Server{Args: []string{"--token=argEqV4lue"}}, []string{"argEqV4lue"}, nil},
		{"argv url", cue.Server{Args: []string{"https://x.example/v1?key=argUrlV4lue"}}, []string{"argUrlV4lue"}, nil},
		{"argv bearer", cue.Server{Args: []string{"--header", "Authorization: Bearer argBe4rerValue"}}, []string{"argBe4rerValue"}, nil},
		{"argv reference", cue.Server{Args: []string{"--token=${env:TOK}"}}, []string{"hostTOKv4lue1", "--token=hostTOKv4lue1"}, nil},
		{"argv plain", cue.Server{Args: []string{"--mode", "${env:MODE_PLAIN}", "serve-files"}}, []string{"plainmode"}, []string{"serve-files", "--mode"}},
		{"header reference", cue.Server{URL: "https://x.example/mcp", Headers: map[string]string{"X-Key": "${env:TOK}"}}, []string{"hostTOKv4lue1"}, nil},
		{"header literal secret", cue.Server{URL: "https://x.example/mcp", Headers: map[string]string{"Authorization": "Bearer hdrLitV4lue99"}},
			[]string{"Bearer hdrLitV4lue99", "hdrLitV4lue99"}, nil},
		{"header bearer reference", cue.Server{URL: "https://x.example/mcp", Headers: map[string]string{"Authorization": "Bearer ${env:TOK}"}},
			[]string{"Bearer hostTOKv4lue1", "hostTOKv4lue1"}, nil},
		{"url query reference", cue.Server{URL: "https://x.example/mcp?token=${env:QTOK}"}, []string{"qtokV4lue3"}, nil},
		{"url literal query", cue.Server{URL: "https://x.example/mcp?api_key=urlLitV4lue"}, []string{"urlLitV4lue"}, []string{"https://x.example/mcp"}},
		{"url password", cue.Server{URL: "https://user:urlPassV4lue@x.example/mcp"}, []string{"urlPassV4lue"}, nil},
		{"auth bearer", cue.Server{URL: "https://x.example/mcp", Auth: &cue.Auth{Type: "bearer", Token: "${env:TOK}"}}, []string{"hostTOKv4lue1"}, nil},
		{"auth env", cue.Server{URL: "https://x.example/mcp", Auth: &cue.Auth{Type: "env", Variable: "AUTHV"}}, []string{"authV4lue4"}, nil},
		{"auth client secret", cue.Server{URL: "https://x.example/mcp", Auth: &cue.Auth{Type: "oauth", ClientID: "public-client", ClientSecret: "clientS3cretV"}},
			[]string{"clientS3cretV"}, []string{"public-client"}},
	}
	for _, c := range cases {
		got := serverSecrets(c.srv, lookup)
		for _, w := range c.want {
			if !slices.Contains(got, w) {
				t.Errorf("%s: %q not among %q", c.name, w, got)
			}
		}
		for _, n := range c.not {
			if slices.Contains(got, n) {
				t.Errorf("%s: %q taken for a secret: %q", c.name, n, got)
			}
		}
	}
}
