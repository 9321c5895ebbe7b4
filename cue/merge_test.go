package cue

import (
	"context"
	"reflect"
	"strings"
	"testing"
)

func TestMergeRules(t *testing.T) {
	tests := []struct {
		name  string
		files map[Layer]string
		check func(t *testing.T, res *Result)
	}{{
		name: "nested settings merge",
		files: map[Layer]string{
			LayerUserShared: `{"settings":{"maxOutputBytes":4096}}`,
			LayerProject:    `{"settings":{"maxOutputLines":99}}`,
		},
		check: func(t *testing.T, res *Result) {
			s := res.Config.Settings
			if s.MaxOutputBytes != 4096 || s.MaxOutputLines != 99 || s.CallTimeoutMs != 600000 {
				t.Errorf("settings = %+v", s)
			}
		},
	}, {
		name: "higher layer wins",
		files: map[Layer]string{
			LayerUserShared: `{"settings":{"maxOutputBytes":4096}}`,
			LayerUser:       `{"settings":{"maxOutputBytes":8192}}`,
		},
		check: func(t *testing.T, res *Result) {
			if got := res.Config.Settings.MaxOutputBytes; got != 8192 {
				t.Errorf("maxOutputBytes = %d, want 8192", got)
			}
			if o := res.Config.Sources["settings.maxOutputBytes"]; o.Layer != LayerUser || o.Line != 1 {
				t.Errorf("source = %+v, want the user layer", o)
			}
		},
	}, {
		name: "arrays replace",
		files: map[Layer]string{
			LayerUserShared: `{"servers":{"gh":{"command":"gh-mcp","args":["a","b"],"excludeTools":["x","y"]}}}`,
			LayerUser:       `{"servers":{"gh":{"args":["c"]}}}`,
		},
		check: func(t *testing.T, res *Result) {
			s := mustServer(t, res, "gh")
			if !reflect.DeepEqual(s.Args, []string{"c"}) || !reflect.DeepEqual(s.ExcludeTools, []string{"x", "y"}) {
				t.Errorf("args = %q, excludeTools = %q", s.Args, s.ExcludeTools)
			}
		},
	}, {
		name: "null removes an inherited field",
		files: map[Layer]string{
			LayerUserShared: `{"settings":{"maxOutputBytes":4096},"servers":{"gh":{"command":"gh-mcp","env":{"A":"1","B":"2"},"cwd":"sub"}}}`,
			LayerUser:       `{"settings":{"maxOutputBytes":null},"servers":{"gh":{"env":{"A":null},"cwd":null}}}`,
		},
		check: func(t *testing.T, res *Result) {
			noErrors(t, res)
			if got := res.Config.Settings.MaxOutputBytes; got != 51200 {
				t.Errorf("maxOutputBytes = %d, want the default 51200", got)
			}
			s := mustServer(t, res, "gh")
			if !reflect.DeepEqual(s.Env, map[string]string{"B": "2"}) || s.Cwd != "" {
				t.Errorf("env = %v, cwd = %q", s.Env, s.Cwd)
			}
		},
	}, {
		name: "null removes a whole server",
		files: map[Layer]string{
			LayerUserShared: `{"servers":{"gh":{"command":"gh-mcp"},"keep":{"command":"k"}}}`,
			LayerUser:       `{"servers":{"gh":null}}`,
		},
		check: func(t *testing.T, res *Result) {
			if _, ok := res.Config.Server("gh"); ok {
				t.Error("gh still present")
			}
			mustServer(t, res, "keep")
		},
	}, {
		name: "same scope merges server fields",
		files: map[Layer]string{
			LayerUserShared: `{"servers":{"gh":{"command":"gh-mcp","env":{"A":"1"},"lifecycle":"eager"}}}`,
			LayerUser:       `{"servers":{"gh":{"env":{"B":"2"}}}}`,
		},
		check: func(t *testing.T, res *Result) {
			s := mustServer(t, res, "gh")
			if !reflect.DeepEqual(s.Env, map[string]string{"A": "1", "B": "2"}) || s.Lifecycle != "eager" {
				t.Errorf("env = %v, lifecycle = %q", s.Env, s.Lifecycle)
			}
		},
	}, {
		name: "project definition replaces user definition whole",
		files: map[Layer]string{
			LayerUser:          `{"servers":{"gh":{"command":"gh-mcp","args":["--x"],"env":{"TOKEN":"${env:GH}"},"envAllowlist":["SSH_AUTH_SOCK"]}}}`,
			LayerProjectShared: `{"mcpServers":{"gh":{"command":"other"}}}`,
		},
		check: func(t *testing.T, res *Result) {
			noErrors(t, res)
			s := mustServer(t, res, "gh")
			if s.Command != "other" || s.Args != nil || s.Env != nil || s.EnvAllowlist != nil {
				t.Errorf("inherited from the user definition: %+v", s)
			}
			if s.Layer != LayerProjectShared {
				t.Errorf("layer = %s", s.Layer)
			}
		},
	}, {
		name: "project http definition inherits no headers or auth",
		files: map[Layer]string{
			LayerUser:    `{"servers":{"api":{"url":"https://a.example/mcp","headers":{"X-Key":"${env:K}"},"auth":{"type":"bearer","token":"${env:T}"}}}}`,
			LayerProject: `{"servers":{"api":{"url":"https://b.example/mcp"}}}`,
		},
		check: func(t *testing.T, res *Result) {
			s := mustServer(t, res, "api")
			if s.Headers != nil || s.Auth != nil || s.URL != "https://b.example/mcp" {
				t.Errorf("got %+v", s)
			}
		},
	}, {
		name: "project adjusts a user server without redefining it",
		files: map[Layer]string{
			LayerUser:    `{"servers":{"gh":{"command":"gh-mcp","env":{"TOKEN":"${env:GH}"}}}}`,
			LayerProject: `{"servers":{"gh":{"excludeTools":["delete_*"],"lifecycle":"eager"}}}`,
		},
		check: func(t *testing.T, res *Result) {
			noErrors(t, res)
			s := mustServer(t, res, "gh")
			if s.Env["TOKEN"] != "${env:GH}" || s.Lifecycle != "eager" || len(s.ExcludeTools) != 1 {
				t.Errorf("got %+v", s)
			}
		},
	}, {
		name: "project cannot add env to a user server",
		files: map[Layer]string{
			LayerUser:    `{"servers":{"gh":{"command":"gh-mcp"}}}`,
			LayerProject: `{"servers":{"gh":{"env":{"LD_PRELOAD":"/tmp/x.so"},"args":["--evil"]}}}`,
		},
		check: func(t *testing.T, res *Result) {
			if n := len(find(res, CodeCrossScopeField)); n != 2 {
				t.Fatalf("want 2 cross-scope-field errors, got:%s", dump(res.Diagnostics))
			}
			s := mustServer(t, res, "gh")
			if s.Env != nil || s.Args != nil {
				t.Errorf("project fields leaked into the user server: %+v", s)
			}
		},
	}, {
		name: "project adjustments only narrow",
		files: map[Layer]string{
			LayerUser: `{"servers":{
				"off":{"command":"o","enabled":false},
				"ex":{"command":"e","excludeTools":["delete_*"],"includeTools":["get_*","list_*"],"lifecycle":"eager"}}}`,
			LayerProject: `{"servers":{
				"off":{"enabled":true},
				"ex":{"excludeTools":["write_*"],"lifecycle":null}}}`,
		},
		check: func(t *testing.T, res *Result) {
			if mustServer(t, res, "off").Enabled {
				t.Error("project re-enabled a server the user disabled")
			}
			ex := mustServer(t, res, "ex")
			if !reflect.DeepEqual(ex.ExcludeTools, []string{"delete_*", "write_*"}) || ex.Lifecycle != "eager" {
				t.Errorf("excludeTools = %q, lifecycle = %q", ex.ExcludeTools, ex.Lifecycle)
			}
			if n := len(find(res, CodeCrossScopeField)); n != 2 {
				t.Errorf("want 2 cross-scope-field findings:%s", dump(res.Diagnostics))
			}
		},
	}, {
		name: "project includeTools may narrow but not widen",
		files: map[Layer]string{
			LayerUser:    `{"servers":{"a":{"command":"a","includeTools":["get_*"]},"b":{"command":"b","includeTools":["get_*"]}}}`,
			LayerProject: `{"servers":{"a":{"includeTools":["get_issue"]},"b":{"includeTools":["get_issue","delete_repo"]}}}`,
		},
		check: func(t *testing.T, res *Result) {
			if a := mustServer(t, res, "a"); !reflect.DeepEqual(a.IncludeTools, []string{"get_issue"}) {
				t.Errorf("a includeTools = %q", a.IncludeTools)
			}
			if b := mustServer(t, res, "b"); !reflect.DeepEqual(b.IncludeTools, []string{"get_*"}) {
				t.Errorf("b includeTools = %q", b.IncludeTools)
			}
			if ds := find(res, CodeCrossScopeField); len(ds) != 1 || !strings.Contains(ds[0].Message, "delete_repo") {
				t.Errorf("want one finding naming delete_repo:%s", dump(res.Diagnostics))
			}
		},
	}, {
		name: "a bad project adjustment disables the server",
		files: map[Layer]string{
			LayerUser:    `{"servers":{"a":{"command":"a"}}}`,
			LayerProject: `{"servers":{"a":{"enabled":"no"}}}`,
		},
		check: func(t *testing.T, res *Result) {
			if a := mustServer(t, res, "a"); a.Enabled || !a.Invalid {
				t.Errorf("a = enabled %v invalid %v", a.Enabled, a.Invalid)
			}
		},
	}, {
		name: "another auth type replaces the old auth",
		files: map[Layer]string{
			LayerUserShared: `{"servers":{"a":{"url":"https://a.example","auth":{"type":"bearer","token":"${env:T}"}}}}`,
			LayerUser:       `{"servers":{"a":{"auth":{"type":"env","variable":"V","scheme":""}}}}`,
		},
		check: func(t *testing.T, res *Result) {
			noErrors(t, res)
			a := mustServer(t, res, "a").Auth
			if a == nil || a.Type != "env" || a.Token != "" || a.Scheme == nil || *a.Scheme != "" {
				t.Errorf("auth = %+v", a)
			}
		},
	}, {
		name: "higher enabled false disables",
		files: map[Layer]string{
			LayerUserShared: `{"mcpServers":{"gh":{"command":"gh-mcp"}}}`,
			LayerProject:    `{"servers":{"gh":{"enabled":false}}}`,
		},
		check: func(t *testing.T, res *Result) {
			if mustServer(t, res, "gh").Enabled {
				t.Error("still enabled")
			}
			ds := find(res, CodeDisabledAbove)
			if len(ds) != 1 || ds[0].Layer != LayerProject {
				t.Errorf("want one disabled-by-higher-layer warning at the project layer:%s", dump(res.Diagnostics))
			}
		},
	}, {
		name: "higher enabled true re-enables",
		files: map[Layer]string{
			LayerUserShared: `{"mcpServers":{"gh":{"command":"gh-mcp","disabled":true}}}`,
			LayerUser:       `{"servers":{"gh":{"enabled":true}}}`,
		},
		check: func(t *testing.T, res *Result) {
			if !mustServer(t, res, "gh").Enabled {
				t.Error("still disabled")
			}
		},
	}, {
		name: "ids normalize across layers",
		files: map[Layer]string{
			LayerUserShared: `{"mcpServers":{"GitHub":{"command":"gh-mcp"}}}`,
			LayerUser:       `{"servers":{"github":{"lifecycle":"keep-alive"}}}`,
		},
		check: func(t *testing.T, res *Result) {
			s := mustServer(t, res, "github")
			if s.Lifecycle != "keep-alive" || s.Key != "GitHub" {
				t.Errorf("got %+v", s)
			}
			if len(find(res, CodeServerIDChanged)) != 1 {
				t.Errorf("want a server-id-normalized note:%s", dump(res.Diagnostics))
			}
		},
	}, {
		name: "server timeouts inherit settings",
		files: map[Layer]string{
			LayerUser: `{"settings":{"callTimeoutMs":1000},"servers":{"a":{"command":"a"},"b":{"command":"b","callTimeoutMs":2000}}}`,
		},
		check: func(t *testing.T, res *Result) {
			if a, b := mustServer(t, res, "a"), mustServer(t, res, "b"); a.CallTimeoutMs != 1000 || b.CallTimeoutMs != 2000 {
				t.Errorf("a=%d b=%d", a.CallTimeoutMs, b.CallTimeoutMs)
			}
			if o := res.Config.Sources["servers.a.callTimeoutMs"]; o.Layer != LayerUser {
				t.Errorf("inherited timeout source = %+v", o)
			}
		},
	}, {
		name: "transport inference",
		files: map[Layer]string{
			LayerUser: `{"servers":{"local":{"command":"x"},"remote":{"url":"https://r.example/mcp"},"old":{"transport":"sse","url":"https://o.example/sse"}}}`,
		},
		check: func(t *testing.T, res *Result) {
			noErrors(t, res)
			l, r, o := mustServer(t, res, "local"), mustServer(t, res, "remote"), mustServer(t, res, "old")
			if l.Transport != TransportStdio || r.Transport != TransportStreamableHTTP || !r.TransportAuto || o.Transport != TransportSSE || o.TransportAuto {
				t.Errorf("local=%s remote=%s/%v old=%s/%v", l.Transport, r.Transport, r.TransportAuto, o.Transport, o.TransportAuto)
			}
		},
	}, {
		name: "a server with errors is disabled",
		files: map[Layer]string{
			LayerUser: `{"servers":{"bad":{"command":"x","auth":{"type":"bearer"}},"good":{"command":"y"}}}`,
		},
		check: func(t *testing.T, res *Result) {
			if b := mustServer(t, res, "bad"); b.Enabled || !b.Invalid {
				t.Errorf("bad = enabled %v invalid %v", b.Enabled, b.Invalid)
			}
			if g := mustServer(t, res, "good"); !g.Enabled || g.Invalid {
				t.Errorf("good = %+v", g)
			}
		},
	}, {
		name: "base directory per layer",
		files: map[Layer]string{
			LayerUser:    `{"servers":{"u":{"command":"u","cwd":"bin"}}}`,
			LayerProject: `{"servers":{"p":{"command":"p"}}}`,
		},
		check: func(t *testing.T, res *Result) {
			u, p := mustServer(t, res, "u"), mustServer(t, res, "p")
			if u.WorkDir(u.Cwd) == p.WorkDir(p.Cwd) || p.BaseDir == "" {
				t.Errorf("user workdir %q, project workdir %q", u.WorkDir(u.Cwd), p.WorkDir(p.Cwd))
			}
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, load(t, tt.files))
		})
	}
}

func TestUntrustedProjectDoesNotLoad(t *testing.T) {
	loc := layers(t, map[Layer]string{
		LayerUser:          `{"servers":{"mine":{"command":"mine"}}}`,
		LayerProjectShared: `{"mcpServers":{"theirs":{"command":"curl"}}}`,
		LayerProject:       `{"servers":{"mine":{"enabled":false}}}`,
	})
	for _, tt := range []struct {
		name    string
		opts    Options
		trusted bool
	}{
		{"ask is untrusted without a prompt", Options{Surface: SurfaceServe}, false},
		{"approve trusts", Options{Surface: SurfaceServe, Approve: true}, true},
		{"no-approve wins", Options{Surface: SurfaceServe, Approve: true, NoApprove: true}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Schema = testSchema()
			res, err := Load(context.Background(), loc, &tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			_, hasTheirs := res.Config.Server("theirs")
			mine, _ := res.Config.Server("mine")
			if hasTheirs != tt.trusted || mine.Enabled == tt.trusted {
				t.Errorf("theirs loaded = %v, mine enabled = %v; want trusted = %v", hasTheirs, mine.Enabled, tt.trusted)
			}
			ignored := find(res, CodeProjectIgnored)
			if tt.trusted != (len(ignored) == 0) {
				t.Errorf("project-ignored diagnostics = %d, trusted = %v", len(ignored), tt.trusted)
			}
			for _, f := range res.Files {
				if f.Layer.IsProject() && f.Loaded != tt.trusted {
					t.Errorf("%s loaded = %v", f.Layer, f.Loaded)
				}
			}
		})
	}
}

func TestProjectCannotTrustItself(t *testing.T) {
	loc := layers(t, map[Layer]string{
		LayerProject: `{"settings":{"defaultProjectTrust":"always"},"servers":{"x":{"command":"x"}}}`,
	})
	res, err := Load(context.Background(), loc, &Options{Schema: testSchema(), Surface: SurfaceServe})
	if err != nil {
		t.Fatal(err)
	}
	if res.Trust.Trusted || len(res.Config.Servers) != 0 {
		t.Fatalf("project trusted itself: %+v", res.Trust)
	}
	// Trusted by the user, the project's attempt is still ignored.
	res, err = Load(context.Background(), loc, &Options{Schema: testSchema(), Approve: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(find(res, CodeProjectSetting)) != 1 || res.Config.Settings.DefaultProjectTrust != "ask" {
		t.Errorf("defaultProjectTrust = %q:%s", res.Config.Settings.DefaultProjectTrust, dump(res.Diagnostics))
	}
}

func TestUserTrustSettingDecides(t *testing.T) {
	for _, tt := range []struct {
		setting string
		trusted bool
	}{{"always", true}, {"never", false}, {"ask", false}, {"alwayss", false}} {
		loc := layers(t, map[Layer]string{
			LayerUser:          `{"settings":{"defaultProjectTrust":"` + tt.setting + `"}}`,
			LayerProjectShared: `{"mcpServers":{"x":{"command":"x"}}}`,
		})
		res, err := Load(context.Background(), loc, &Options{Schema: testSchema(), Surface: SurfacePrint})
		if err != nil {
			t.Fatal(err)
		}
		if res.Trust.Trusted != tt.trusted {
			t.Errorf("%s: trusted = %v, want %v (%s)", tt.setting, res.Trust.Trusted, tt.trusted, res.Trust.Reason)
		}
	}
}

func TestCheckUntrustedReportsButDoesNotLoad(t *testing.T) {
	loc := layers(t, map[Layer]string{
		LayerProjectShared: `{"mcpServers":{"x":{"command":"x","bogus":1}}}`,
	})
	res, err := Load(context.Background(), loc, &Options{Schema: testSchema(), Surface: SurfaceVet, CheckUntrusted: true, Lint: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(find(res, CodeUnknownField)) != 1 || len(find(res, CodeProjectIgnored)) != 1 {
		t.Errorf("want unknown-field and project-ignored:%s", dump(res.Diagnostics))
	}
	if len(res.Config.Servers) != 0 {
		t.Errorf("untrusted server loaded")
	}
}

func TestDecideTrust(t *testing.T) {
	for _, tt := range []struct {
		in   TrustInput
		want bool
	}{
		{TrustInput{DefaultProjectTrust: "ask", Surface: SurfaceInteractive}, false},
		{TrustInput{DefaultProjectTrust: "always"}, true},
		{TrustInput{DefaultProjectTrust: "always", NoApprove: true}, false},
		{TrustInput{DefaultProjectTrust: "never", Approve: true}, true},
		{TrustInput{DefaultProjectTrust: "never"}, false},
		{TrustInput{Approve: true, NoApprove: true}, false},
	} {
		got := DecideTrust(tt.in)
		if got.Trusted != tt.want || got.Reason == "" {
			t.Errorf("DecideTrust(%+v) = %+v, want trusted %v with a reason", tt.in, got, tt.want)
		}
	}
}

func TestCustomTrustFunction(t *testing.T) {
	loc := layers(t, map[Layer]string{LayerProject: `{"servers":{"x":{"command":"x"}}}`})
	var seen TrustInput
	res, err := Load(context.Background(), loc, &Options{Schema: testSchema(), Surface: SurfaceDaemon,
		Trust: func(in TrustInput) TrustDecision {
			seen = in
			return TrustDecision{Trusted: true, Reason: "policy says yes"}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Trust.Trusted || len(res.Config.Servers) != 1 {
		t.Fatalf("custom trust ignored: %+v", res.Trust)
	}
	if seen.Surface != SurfaceDaemon || len(seen.Files) != 1 || len(seen.Files[0].SHA256) != 64 || seen.DefaultProjectTrust != "ask" {
		t.Errorf("trust input = %+v", seen)
	}
}
