package cue

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
)

func identityBases() (stdio, http Server) {
	stdio = Server{ID: "tools", Key: "tools", Layer: LayerUser, File: "/home/u/.volt/agent/mcp.json", BaseDir: "/home/u",
		Transport: TransportStdio, Command: "/usr/bin/tools", Args: []string{"serve", "--port", "0"}, Cwd: "work",
		Env: map[string]string{"API_TOKEN": "canary-env-value", "MODE": "a"}, EnvAllowlist: []string{"LANG", "TZ"}}
	scheme := "Bearer"
	http = Server{ID: "notes", Key: "notes", Layer: LayerUser, BaseDir: "/home/u",
		Transport: TransportStreamableHTTP, TransportAuto: true, URL: "https://notes.example/mcp",
		Headers: map[string]string{"Authorization": "Bearer canary-header-value", "X-Team": "a"},
		Auth: &Auth{Type: "oauth", Token: "canary-token", ClientID: "client", ClientSecret: "canary-secret",
			Scheme: &scheme, Issuer: "https://auth.example", Scope: "read"}}
	return stdio, http
}

// TestIdentity changes each field that says what a server is, one at a
// time, and each that does not: the first change the identity, the
// second leave it as it was.
func TestIdentity(t *testing.T) {
	stdio, http := identityBases()
	other := func(s string) *string { return &s }
	cases := []struct {
		name   string
		base   Server
		change func(*Server)
		same   bool
	}{
		// What a stdio server runs.
		{"command", stdio, func(s *Server) { s.Command = "/usr/bin/other" }, false},
		{"an argument", stdio, func(s *Server) { s.Args[2] = "1" }, false},
		{"one more argument", stdio, func(s *Server) { s.Args = append(s.Args, "--x") }, false},
		{"arguments run together", stdio, func(s *Server) { s.Args = []string{"serve --port", "0"} }, false},
		{"argument order", stdio, func(s *Server) { s.Args = []string{"--port", "0", "serve"} }, false},
		{"cwd", stdio, func(s *Server) { s.Cwd = "elsewhere" }, false},
		{"cwd unset", stdio, func(s *Server) { s.Cwd = "" }, false},
		{"base dir of a relative cwd", stdio, func(s *Server) { s.BaseDir = "/home/v" }, false},
		{"an env name added", stdio, func(s *Server) { s.Env["NODE_OPTIONS"] = "" }, false},
		{"an env name renamed", stdio, func(s *Server) { delete(s.Env, "MODE"); s.Env["MODE2"] = "a" }, false},
		{"envAllowlist", stdio, func(s *Server) { s.EnvAllowlist = append(s.EnvAllowlist, "HOME") }, false},
		{"transport", stdio, func(s *Server) { s.Transport = TransportSSE }, false},
		{"defined by a project", stdio, func(s *Server) { s.Layer = LayerProject }, false},
		// What an HTTP server reaches.
		{"url", http, func(s *Server) { s.URL = "https://notes.example/mcp2" }, false},
		{"a token in the url's query", http, func(s *Server) { s.URL += "?token=canary-url" }, false},
		{"transport named", http, func(s *Server) { s.TransportAuto = false }, false},
		{"sse", http, func(s *Server) { s.Transport = TransportSSE }, false},
		{"a header name added", http, func(s *Server) { s.Headers["X-Tenant"] = "b" }, false},
		{"auth type", http, func(s *Server) { s.Auth.Type = "bearer" }, false},
		{"auth removed", http, func(s *Server) { s.Auth = nil }, false},
		{"auth client", http, func(s *Server) { s.Auth.ClientID = "client2" }, false},
		{"auth issuer", http, func(s *Server) { s.Auth.Issuer = "https://evil.example" }, false},
		{"auth scope", http, func(s *Server) { s.Auth.Scope = "write" }, false},
		{"auth scheme", http, func(s *Server) { s.Auth.Scheme = other("") }, false},
		{"auth scheme unset", http, func(s *Server) { s.Auth.Scheme = nil }, false},
		{"auth variable", http, func(s *Server) { s.Auth.Variable = "TOKEN" }, false},
		{"auth header", http, func(s *Server) { s.Auth.Header = "X-Key" }, false},
		{"auth flow", http, func(s *Server) { s.Auth.Flow = "device" }, false},
		{"auth metadata urls", http, func(s *Server) { s.Auth.ResourceMetadataURL = "https://x.example" }, false},
		{"auth client metadata url", http, func(s *Server) { s.Auth.ClientMetadataURL = "https://x.example/c" }, false},
		{"auth token endpoint auth", http, func(s *Server) { s.Auth.TokenEndpointAuthMethod = "none" }, false},
		{"auth insecure loopback", http, func(s *Server) { s.Auth.AllowInsecureLoopback = true }, true},
		{"project of an http server", http, func(s *Server) { s.Layer, s.BaseDir = LayerProject, "/src/p" }, false},
		// Not what the server is.
		{"id", stdio, func(s *Server) { s.ID = "other" }, false},
		{"key spelled otherwise", stdio, func(s *Server) { s.Key = "Tools" }, true},
		{"env value", stdio, func(s *Server) { s.Env["API_TOKEN"] = "rotated" }, true},
		{"envAllowlist order", stdio, func(s *Server) { s.EnvAllowlist = []string{"TZ", "LANG"} }, true},
		{"user layer", stdio, func(s *Server) { s.Layer, s.File = LayerUserShared, "/home/u/.config/mcp/mcp.json" }, true},
		{"title, timeouts, tools", stdio, func(s *Server) {
			s.Title, s.CallTimeoutMs, s.ExcludeTools, s.Enabled = "T", 5, []string{"x"}, !s.Enabled
		}, true},
		{"project given relative to the working directory", stdio, func(s *Server) {
			s.Layer, s.BaseDir = LayerProject, "."
		}, false},
		{"header value", http, func(s *Server) { s.Headers["Authorization"] = "Bearer rotated" }, true},
		{"header name case", http, func(s *Server) {
			delete(s.Headers, "X-Team")
			s.Headers["x-team"] = "a"
		}, true},
		{"auth token", http, func(s *Server) { s.Auth.Token = "rotated" }, true},
		{"auth client secret", http, func(s *Server) { s.Auth.ClientSecret = "rotated" }, true},
		{"stdio fields of an http server", http, func(s *Server) { s.Command = "x" }, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := clone(c.base)
			changed := clone(c.base)
			c.change(&changed)
			before, after := base.Identity(), changed.Identity()
			if (before == after) != c.same {
				t.Errorf("identity before %s, after %s; want same=%v", before, after, c.same)
			}
		})
	}
}

// TestIdentityOfARelativeProject holds a project given as "." to the
// identity of its absolute path: `voltmcp approve` run in the project
// and serve started with --project name one server.
func TestIdentityOfARelativeProject(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	stdio, http := identityBases()
	for _, s := range []Server{stdio, http} {
		rel, abs := clone(s), clone(s)
		rel.Layer, rel.BaseDir, rel.Cwd = LayerProject, ".", ""
		abs.Layer, abs.BaseDir, abs.Cwd = LayerProject, wd, ""
		if rel.Identity() != abs.Identity() {
			t.Errorf("%s: the project . and %s are two identities", s.ID, wd)
		}
		other := clone(abs)
		other.BaseDir = filepath.Dir(wd)
		if other.Identity() == abs.Identity() {
			t.Errorf("%s: two projects are one identity", s.ID)
		}
	}
}

// clone copies a server deeply enough for TestIdentity's changes.
func clone(s Server) Server {
	s.Args = append([]string(nil), s.Args...)
	s.EnvAllowlist = append([]string(nil), s.EnvAllowlist...)
	env := map[string]string{}
	for k, v := range s.Env {
		env[k] = v
	}
	s.Env = env
	headers := map[string]string{}
	for k, v := range s.Headers {
		headers[k] = v
	}
	s.Headers = headers
	if s.Auth != nil {
		a := *s.Auth
		s.Auth = &a
	}
	return s
}

// TestIdentityIsStable holds the identity of a fixed definition to its
// value: state written by one run of voltmcp is found by the next, and
// a change to the hash's input shows here (and needs a new
// identityDomain).
func TestIdentityIsStable(t *testing.T) {
	stdio, http := identityBases()
	for _, c := range []struct {
		s    Server
		want string
	}{
		{stdio, "5859d8a110346cb798213d9843453f97e6854f2b1dd4e9cbd70891eb78a47d29"},
		{http, "1abc8a1f2e99fc818ad2d731ab5dc94448501b202833431f17e9d41d34e78351"},
	} {
		id := c.s.Identity()
		if _, err := hex.DecodeString(id); err != nil || len(id) != 64 {
			t.Errorf("identity %q is not a hex sha256", id)
		}
		if id != c.want {
			t.Errorf("identity of %s: %s, want %s", c.s.ID, id, c.want)
		}
	}
}

// FuzzIdentity checks, for any arguments and env entries, that the
// identity is the same for the same definition (map order and env
// values aside) and tells argument lists apart however their bytes are
// split.
func FuzzIdentity(f *testing.F) {
	f.Add("serve", "--port=0", "TOKEN", "v1", "v2")
	f.Add("a;b", "", "A", "", "x")
	f.Add("1:a", "b", "K=V", "secret", "other")
	f.Fuzz(func(t *testing.T, a, b, name, value, other string) {
		base := Server{ID: "srv", Transport: TransportStdio, Command: "/bin/x", Args: []string{a, b}, BaseDir: "/h",
			Env: map[string]string{name: value, name + "_2": value}}
		id := base.Identity()
		again := clone(base)
		again.Env[name] = other
		if again.Identity() != id {
			t.Errorf("an env value changed the identity")
		}
		joined := clone(base)
		joined.Args = []string{a + b}
		if joined.Identity() == id {
			t.Errorf("args %q and %q hash as %q", a, b, a+b)
		}
		if len(a) > 0 {
			moved := clone(base)
			moved.Args = []string{a[:len(a)-1], a[len(a)-1:] + b}
			if moved.Identity() == id {
				t.Errorf("args %q hash as %q", base.Args, moved.Args)
			}
		}
	})
}
