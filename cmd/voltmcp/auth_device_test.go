package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/engine"
	"github.com/voltmcp/voltmcp/internal/oauthtest"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// codeWatcher is the stdout of a running voltmcp auth in the device
// flow: it hands over the user code once printed (the line after "and
// enter the code:"), or the authorization URL of the browser flow.
type codeWatcher struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	sent bool
	got  chan string
}

func (w *codeWatcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if w.sent {
		return len(p), nil
	}
	lines := strings.Split(w.buf.String(), "\n")
	for i, line := range lines {
		if strings.HasPrefix(line, "and enter the code:") && i+3 < len(lines) {
			w.sent = true
			w.got <- "code " + strings.TrimSpace(lines[i+2])
			break
		}
		if strings.HasPrefix(line, "To authorize voltmcp for server") && strings.Contains(line, "open this URL") && i+3 < len(lines) {
			w.sent = true
			w.got <- "url " + strings.TrimSpace(lines[i+2])
			break
		}
	}
	return len(p), nil
}

func (w *codeWatcher) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// startLogin runs voltmcp auth with args in the background and returns
// what it asks the user for ("code XXXX-XXXX" in the device flow, "url
// …" in the browser flow, "" when it ended before asking) and a function
// that waits for its end.
func startLogin(t *testing.T, env func(string) string, args ...string) (string, func() cliResult) {
	t.Helper()
	w := &codeWatcher{got: make(chan string, 1)}
	done := make(chan cliResult, 1)
	go func() {
		r := runCLICtx(t, testwait.Context(t), env, w, append([]string{"auth"}, args...)...)
		r.stdout = w.String()
		done <- r
	}()
	wait := func() cliResult {
		select {
		case r := <-done:
			return r
		case <-time.After(time.Until(testwait.Deadline(t))):
			t.Fatalf("voltmcp auth did not end; stdout so far:\n%s", w.String())
			return cliResult{}
		}
	}
	select {
	case got := <-w.got:
		return got, wait
	case r := <-done:
		done <- r
		return "", wait
	case <-time.After(time.Until(testwait.Deadline(t))):
		t.Fatalf("voltmcp auth asked nothing:\n%s", w.String())
		return "", nil
	}
}

// tokenFile is the path of a server's token file under home.
func tokenFile(home, id string) string {
	return filepath.Join(home, ".volt", "agent", "mcp", "auth", id+".json")
}

func TestAuthDeviceFlowEndToEnd(t *testing.T) {
	t.Parallel()
	const secret = "client_secret_canary_device_0123456789"
	o := oauthtest.New(t, &oauthtest.Options{Device: true, DeviceInterval: 1, DevicePending: 2, VerificationURIComplete: true})
	pre := oauthtest.New(t, &oauthtest.Options{Device: true, DeviceInterval: 1, ClientID: "voltmcp-test", ClientSecret: secret, NoRegistration: true})
	home, env := oauthServers(t, map[string]string{"CLIENT_SECRET": secret}, map[string]*oauthtest.Server{"o": o, "pre": pre},
		map[string]map[string]any{
			"o":   {"scope": "notes:read"},
			"pre": {"clientId": "voltmcp-test", "clientSecret": "${env:CLIENT_SECRET}", "issuer": pre.Issuer},
		})
	var outputs []string
	cli := func(args ...string) cliResult {
		r := runCLI(t, env, args...)
		outputs = append(outputs, r.stdout, r.stderr)
		return r
	}
	for id, s := range map[string]*oauthtest.Server{"o": o, "pre": pre} {
		asked, wait := startLogin(t, env, id, "--device")
		code, ok := strings.CutPrefix(asked, "code ")
		if !ok {
			t.Fatalf("auth %s --device asked %q:\n%s", id, asked, wait())
		}
		if err := s.ApproveDevice(code); err != nil {
			t.Fatal(err)
		}
		r := wait()
		outputs = append(outputs, r.stdout, r.stderr)
		if r.code != exitOK || !strings.Contains(r.stdout, "Server "+id+" is authenticated: ") || !strings.Contains(r.stdout, "status ready") {
			t.Fatalf("auth %s --device:\n%s", id, r)
		}
		// The page, its host on a line of its own, the code; nothing opened.
		for _, want := range []string{"\n  https://verify.example/device\n", "\n  Host: verify.example ", "\n  " + code + "\n"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("auth %s: stdout lacks %q:\n%s", id, want, r.stdout)
			}
		}
		if s.Authorizes.Load() != 0 || s.DeviceGrants.Load() != 1 {
			t.Errorf("%s: %d browser authorizations and %d device grants, want 0 and 1", id, s.Authorizes.Load(), s.DeviceGrants.Load())
		}
		if fi, err := os.Stat(tokenFile(home, id)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: token file %v %v", id, fi, err)
		}
	}
	if !strings.Contains(outputs[0]+outputs[2], "(or open https://verify.example/device?user_code=") {
		t.Errorf("verification_uri_complete not shown:\n%s", outputs[0]+outputs[2])
	}

	// What was asked for: the resource, the scopes, the client.
	req := o.DeviceRequests()[0]
	if req.Resource != o.MCPURL || req.Scope != "notes:read" || !strings.HasPrefix(req.ClientID, "dcr-") {
		t.Errorf("device authorization request %+v", req)
	}
	if got := pre.DeviceRequests()[0].ClientID; got != "voltmcp-test" {
		t.Errorf("pre: client %q", got)
	}
	// authorization_pending twice (after the approval), then the token; at
	// least the interval between polls.
	polls := o.DevicePolls()
	if len(polls) < 3 {
		t.Errorf("%d polls, want at least 3 (2 authorization_pending)", len(polls))
	}
	for i := 1; i < len(polls); i++ {
		if gap := polls[i].Sub(polls[i-1]); gap < time.Second-300*time.Millisecond {
			t.Errorf("poll %d came %s after the one before; the interval is 1 s", i+1, gap)
		}
	}

	// Used without another login, with the stored token.
	for _, id := range []string{"o", "pre"} {
		if r := cli("call", id, "echo", "--args", `{"text": "hello"}`); r.code != exitOK || !strings.Contains(r.stdout, "hello") {
			t.Fatalf("call %s after the device login:\n%s", id, r)
		}
	}
	if r := cli("auth", "o", "--device"); r.code != exitOK || !strings.Contains(r.stdout, "authenticated already") {
		t.Fatalf("auth --device when authenticated:\n%s", r)
	}
	r := cli("auth", "--status", "--json")
	var infos []engine.AuthInfo
	if err := json.Unmarshal([]byte(r.stdout), &infos); err != nil || len(infos) != 2 {
		t.Fatalf("status (%v):\n%s", err, r)
	}
	for _, info := range infos {
		want := map[string]string{"o": o.Issuer, "pre": pre.Issuer}[info.Server]
		if info.State != engine.AuthAuthenticated || !info.Refreshable || info.Issuer != want {
			t.Errorf("status %+v, want authenticated by %s, refreshable", info, want)
		}
	}
	if o.DeviceGrants.Load() != 1 {
		t.Errorf("%d device grants after the calls, want 1", o.DeviceGrants.Load())
	}

	// No token, device code or client secret anywhere but in the token files.
	outputs = append(outputs, agentFiles(t, home))
	for _, text := range outputs {
		if strings.Contains(text, secret) {
			t.Errorf("an output shows the client secret:\n%s", text)
		}
		for _, s := range []*oauthtest.Server{o, pre} {
			if leak := s.Leaked(text); leak != "" {
				t.Errorf("an output shows %s:\n%s", leak, text)
			}
		}
	}
}

func TestAuthDeviceSlowDown(t *testing.T) {
	t.Parallel()
	// The second poll is answered slow_down: every poll after it waits
	// 1 + 5 s. "flow": "device" in the config, no --device.
	const slowAt = 2
	s := oauthtest.New(t, &oauthtest.Options{Device: true, DeviceInterval: 1, DevicePending: 1, DeviceSlowDownAt: slowAt})
	_, env := oauthServers(t, nil, map[string]*oauthtest.Server{"o": s}, map[string]map[string]any{"o": {"flow": "device"}})
	asked, wait := startLogin(t, env, "o")
	code, ok := strings.CutPrefix(asked, "code ")
	if !ok {
		t.Fatalf("auth asked %q:\n%s", asked, wait())
	}
	if err := s.ApproveDevice(code); err != nil {
		t.Fatal(err)
	}
	if r := wait(); r.code != exitOK || !strings.Contains(r.stdout, "is authenticated") {
		t.Fatalf("auth:\n%s", r)
	}
	polls := s.DevicePolls()
	if len(polls) < slowAt+1 {
		t.Fatalf("%d polls, want at least %d", len(polls), slowAt+1)
	}
	// Polls arrive on a ticker: allow some scheduling jitter below the
	// interval, far less than the 5 s slow_down adds.
	const jitter = 500 * time.Millisecond
	for i := 1; i < len(polls); i++ {
		want := time.Second
		if i >= slowAt {
			want += 5 * time.Second
		}
		if gap := polls[i].Sub(polls[i-1]); gap < want-jitter {
			t.Errorf("poll %d came %s after poll %d, want at least %s (slow_down at poll %d)", i+1, gap, i, want, slowAt)
		}
	}
}

func TestAuthDeviceFailuresAreNamed(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		opts oauthtest.Options
		args []string
		// act is what the user does with the code; nil: the command must
		// end before showing one.
		act  func(t *testing.T, s *oauthtest.Server, code string)
		want []string
	}{
		"access denied": {opts: oauthtest.Options{Device: true, DeviceInterval: 1},
			act: func(t *testing.T, s *oauthtest.Server, code string) {
				if err := s.DenyDevice(code); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"access_denied"}},
		"expired": {opts: oauthtest.Options{Device: true, DeviceInterval: 1},
			act:  func(_ *testing.T, s *oauthtest.Server, _ string) { s.ExpireDevices() },
			want: []string{"the device code expired", "expired_token"}},
		"timeout": {opts: oauthtest.Options{Device: true, DeviceInterval: 1}, args: []string{"--timeout", "2s"}, // testwait: the timeout under test
			act: func(*testing.T, *oauthtest.Server, string) {}, want: []string{"no authorization after 2s", "not approved"}},
		"not https": {opts: oauthtest.Options{Device: true, DeviceInterval: 1, VerificationURI: "http://verify.example/device"},
			want: []string{"verification URI is refused", "verification_uri is not https"}},
		"javascript URI": {opts: oauthtest.Options{Device: true, DeviceInterval: 1, VerificationURI: "javascript:alert(1)//verify.example/"},
			want: []string{"verification URI is refused"}},
		"no device endpoint": {want: []string{"offers no device authorization", "device_authorization_endpoint"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			opts := tc.opts
			s := oauthtest.New(t, &opts)
			home, env := oauthServers(t, nil, map[string]*oauthtest.Server{"o": s}, nil)
			asked, wait := startLogin(t, env, append([]string{"o", "--device"}, tc.args...)...)
			code, ok := strings.CutPrefix(asked, "code ")
			switch {
			case tc.act == nil && asked != "":
				t.Errorf("asked %q", asked)
			case tc.act != nil && !ok:
				t.Fatalf("asked %q, want a code:\n%s", asked, wait())
			case tc.act != nil:
				tc.act(t, s, code)
			}
			r := wait()
			t.Logf("%s", r.stderr)
			if r.code != exitFailure || !strings.Contains(r.stderr, "server o") {
				t.Errorf("want exit 3 naming server o:\n%s", r)
			}
			for _, want := range tc.want {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
				}
			}
			if tc.act == nil && strings.Contains(r.stdout+r.stderr, "verify.example") {
				t.Errorf("a refused verification URI is shown:\n%s", r)
			}
			if _, err := os.Stat(tokenFile(home, "o")); !os.IsNotExist(err) {
				t.Errorf("a token file after a failure: %v", err)
			}
			if st := runCLI(t, env, "auth", "--status", "o"); !strings.Contains(st.stdout, "needs_auth") {
				t.Errorf("status:\n%s", st)
			}
			if leak := s.Leaked(r.stdout + r.stderr + agentFiles(t, home)); leak != "" {
				t.Errorf("output shows %s", leak)
			}
		})
	}
}

func TestAuthAutoChoosesDeviceWithoutDisplay(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the display rule under test is Linux's")
	}
	// With a display the browser flow opens a browser: a fake xdg-open on
	// PATH, which does nothing, stands in for it.
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "xdg-open"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	for name, tc := range map[string]struct {
		vars   map[string]string
		flow   any // nil: no flow in the config
		device bool
		noDev  bool // the authorization server offers no device grant
	}{
		"no display":               {flow: "auto", device: true},
		"no flow, no display":      {device: true},
		"ssh without display":      {vars: map[string]string{"SSH_CONNECTION": "10.0.0.2 50000 10.0.0.1 22", "WAYLAND_DISPLAY": ""}, flow: "auto", device: true},
		"X display":                {vars: map[string]string{"DISPLAY": ":0"}, flow: "auto"},
		"wayland over ssh":         {vars: map[string]string{"WAYLAND_DISPLAY": "wayland-0", "SSH_TTY": "/dev/pts/1"}, flow: "auto"},
		"no display, no device AS": {flow: "auto", noDev: true},
		"browser flow":             {flow: "browser"},
	} {
		t.Run(name, func(t *testing.T) {
			s := oauthtest.New(t, &oauthtest.Options{Device: !tc.noDev, DeviceInterval: 1})
			extra := map[string]any{}
			if tc.flow != nil {
				extra["flow"] = tc.flow
			}
			_, env := oauthServers(t, tc.vars, map[string]*oauthtest.Server{"o": s}, map[string]map[string]any{"o": extra})
			asked, wait := startLogin(t, env, "o")
			kind, v, _ := strings.Cut(asked, " ")
			switch {
			case tc.device && kind == "code":
				if err := s.ApproveDevice(v); err != nil {
					t.Fatal(err)
				}
			case !tc.device && kind == "url":
				visit(t, approve(t, v), "")
			default:
				t.Fatalf("asked %q, want the device flow %v:\n%s", asked, tc.device, wait())
			}
			if r := wait(); r.code != exitOK || !strings.Contains(r.stdout, "is authenticated") {
				t.Fatalf("auth:\n%s", r)
			}
			if got := s.DeviceGrants.Load() == 1; got != tc.device {
				t.Errorf("device grant %v, want %v", got, tc.device)
			}
		})
	}
}

func TestHasDisplay(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		goos string
		env  map[string]string
		want bool
	}{
		{"linux", nil, false},
		{"linux", map[string]string{"DISPLAY": ":0"}, true},
		{"linux", map[string]string{"WAYLAND_DISPLAY": "wayland-0"}, true},
		{"linux", map[string]string{"DISPLAY": ""}, false},
		{"freebsd", nil, false},
		{"darwin", nil, true},
		{"windows", nil, true},
		{"darwin", map[string]string{"SSH_CONNECTION": "a b c d"}, false},
		{"linux", map[string]string{"SSH_CLIENT": "a b c", "DISPLAY": "localhost:10.0"}, true},
		{"windows", map[string]string{"SSH_TTY": "/dev/pts/0"}, false},
	} {
		lookup := func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
		if got := engine.HasDisplay(lookup, tc.goos); got != tc.want {
			t.Errorf("HasDisplay(%v, %s) = %v, want %v", tc.env, tc.goos, got, tc.want)
		}
	}
}

func TestAuthDeviceTokenRefreshes(t *testing.T) {
	t.Parallel()
	// Access tokens of 1 s: the call after the device login, once the
	// stored one has expired, refreshes it, as the browser flow's tokens
	// are.
	s := oauthtest.New(t, &oauthtest.Options{Device: true, DeviceInterval: 1, TTL: time.Second})
	home, env := oauthServers(t, nil, map[string]*oauthtest.Server{"o": s}, nil)
	asked, wait := startLogin(t, env, "o", "--device")
	code, ok := strings.CutPrefix(asked, "code ")
	if !ok {
		t.Fatalf("auth asked %q:\n%s", asked, wait())
	}
	if err := s.ApproveDevice(code); err != nil {
		t.Fatal(err)
	}
	r := wait()
	if r.code != exitOK || !strings.Contains(r.stdout, "is authenticated") {
		t.Fatalf("auth:\n%s", r)
	}
	before := s.Refreshes.Load()
	oauthtest.WaitExpired(t, filepath.Join(home, ".volt", "agent", "mcp", "auth", "o.json"))
	c := runCLI(t, env, "call", "o", "echo", "--args", `{"text": "fresh"}`)
	if c.code != exitOK || !strings.Contains(c.stdout, "fresh") {
		t.Fatalf("call:\n%s", c)
	}
	if s.Refreshes.Load() <= before || s.DeviceGrants.Load() != 1 {
		t.Errorf("refreshes %d → %d, device grants %d: want a refresh by the call and one grant", before, s.Refreshes.Load(), s.DeviceGrants.Load())
	}
	if leak := s.Leaked(r.stdout + r.stderr + c.stdout + c.stderr + agentFiles(t, home)); leak != "" {
		t.Errorf("output shows %s", leak)
	}
}
