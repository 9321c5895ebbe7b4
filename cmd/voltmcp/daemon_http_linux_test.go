//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/voltmcp/voltmcp/daemon"
	"github.com/voltmcp/voltmcp/internal/mcptest"
	"github.com/voltmcp/voltmcp/internal/oauthtest"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// The canaries of TestDaemonHTTPRemoteClients: a stdio server's argument
// and environment value, and an HTTP server's URL path and query.
const (
	httpCanaryArg   = "arg-canary-91d0c3e5aa"
	httpCanaryEnv   = "env-canary-4be27f0c19"
	httpCanaryPath  = "path-canary-d7a2e8"
	httpCanaryQuery = "query-canary-0c6f1b42"
)

// remoteHome is a home whose user layer holds "demo" (mcptest's server,
// started with a canary argument and environment value), "far" (an HTTP
// server at a closed port, canaries in its URL's path and query), "dev"
// (an OAuth server that offers the device flow) and "web" (one whose
// auth.flow is the browser's).
func remoteHome(t *testing.T, dev, web *oauthtest.Server) string {
	t.Helper()
	home, err := os.MkdirTemp("", "vh")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	command, args, env := mcptest.Command(mcptest.ModeBehave, "VOLTMCP_CANARY="+httpCanaryEnv)
	servers := map[string]any{
		"demo": map[string]any{"command": command, "args": append(args, "--key="+httpCanaryArg), "env": env,
			"connectTimeoutMs": testTimeoutMs, "discoveryTimeoutMs": testTimeoutMs},
		"far": map[string]any{"url": "http://127.0.0.1:1/" + httpCanaryPath + "/mcp?key=" + httpCanaryQuery, "transport": "streamable-http", "connectTimeoutMs": 2000},
		"dev": map[string]any{"url": dev.MCPURL, "transport": "streamable-http", "auth": map[string]any{"type": "oauth", "allowInsecureLoopback": true, "flow": "device"}},
		"web": map[string]any{"url": web.MCPURL, "transport": "streamable-http", "auth": map[string]any{"type": "oauth", "allowInsecureLoopback": true, "flow": "browser"}},
	}
	data, _ := json.Marshal(map[string]any{"version": 1, "servers": servers})
	dir := filepath.Join(home, ".volt", "agent")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "mcp.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

// remoteClient is a paired device's HTTP client of the daemon, written
// from the spec's DTOs: it speaks JSON-RPC with maps.
type remoteClient struct {
	t     *testing.T
	base  string // http://127.0.0.1:PORT
	token string
	mu    sync.Mutex
	seen  bytes.Buffer // every answer body, for the canary checks
}

// do sends one request with the token and headers and returns the
// status and the body.
func (c *remoteClient) do(method, path, body string, header map[string]string) (int, string) {
	c.t.Helper()
	req, err := http.NewRequestWithContext(testwait.Context(c.t), method, c.base+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	c.mu.Lock()
	c.seen.Write(b)
	c.mu.Unlock()
	return res.StatusCode, string(b)
}

// call sends one JSON-RPC request to POST /rpc and returns the answer.
func (c *remoteClient) call(method string, params any) map[string]any {
	c.t.Helper()
	p, _ := json.Marshal(params)
	status, body := c.do("POST", "/rpc", fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`, method, p), nil)
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil || status != http.StatusOK {
		c.t.Fatalf("%s: HTTP %d %q", method, status, body)
	}
	return m
}

// result is call's result, failing on an error answer.
func (c *remoteClient) result(method string, params any) map[string]any {
	c.t.Helper()
	m := c.call(method, params)
	if m["error"] != nil {
		c.t.Fatalf("%s: %v", method, m["error"])
	}
	res, _ := m["result"].(map[string]any)
	return res
}

// errorOf is call's error, failing on a result.
func (c *remoteClient) errorOf(method string, params any) map[string]any {
	c.t.Helper()
	m := c.call(method, params)
	e, _ := m["error"].(map[string]any)
	if e == nil {
		c.t.Fatalf("%s: %v, want an error", method, m)
	}
	return e
}

// eventStream reads GET /events until it ends.
type eventStream struct {
	mu    sync.Mutex
	text  strings.Builder
	ended bool
}

func (s *eventStream) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.text.String()
}

func (s *eventStream) done() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ended
}

// events opens GET /events after seq since: as ?sinceSeq, or as a
// Last-Event-ID header (a reconnecting EventSource's) when lastEventID.
func (c *remoteClient) events(since string, lastEventID bool) *eventStream {
	c.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c.t.Cleanup(cancel)
	path := "/events?sinceSeq=" + since
	if lastEventID {
		path = "/events"
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", c.base+path, nil)
	if lastEventID {
		req.Header.Set("Last-Event-ID", since)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(res.Body)
		c.t.Fatalf("GET /events: HTTP %d %s %q", res.StatusCode, res.Header.Get("Content-Type"), b)
	}
	s := &eventStream{}
	go func() {
		defer res.Body.Close()
		r := bufio.NewReader(res.Body)
		for {
			line, err := r.ReadString('\n')
			s.mu.Lock()
			s.text.WriteString(line)
			if err != nil {
				s.ended = true
			}
			s.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return s
}

// TestDaemonHTTPRemoteClients runs `voltmcp daemon --http 127.0.0.1:0`
// as its own process with a device paired by `voltmcp daemon pair`, and
// speaks to it as a paired device does, over real HTTP:
//
//   - a remote-safe command runs; get_mcp_capabilities names
//     mcp_management.v1; what the voltmcp.remote policy refuses (a tool
//     call, a pin approval, the browser-redirect completion) is -32003;
//   - auth is the device flow only: start, poll and cancel run, a server
//     whose flow is the browser's is refused with why;
//   - summaries show a stdio server's command without its arguments and
//     a URL by its origin; no answer or event holds a canary of a
//     server's arguments, environment or URL, an OAuth token, or the
//     device token;
//   - a missing or bad token is 401, a Host or Origin not the daemon's is
//     refused, a body over the limit is 413, a workspace no session
//     opened is refused;
//   - the event stream resumes after a Last-Event-ID;
//   - a device revoked by `voltmcp daemon devices revoke` is refused by
//     the running daemon at once, and its event stream ends.
func TestDaemonHTTPRemoteClients(t *testing.T) {
	dev := oauthtest.New(t, &oauthtest.Options{Device: true, DeviceInterval: 1})
	web := oauthtest.New(t, nil)
	home := remoteHome(t, dev, web)
	agentDir := filepath.Join(home, ".volt", "agent")

	// Pairing prints the token once; the store holds its hash, 0600.
	pair := cliCommand("daemon", "pair", "--name", "phone", "--home", home)
	out, err := pair.Output()
	if err != nil {
		t.Fatalf("voltmcp daemon pair: %v", err)
	}
	token := strings.TrimSpace(string(out))
	if !strings.HasPrefix(token, "vmd_") {
		t.Fatalf("voltmcp daemon pair printed %q, want a device token", out)
	}
	store, err := os.ReadFile(daemon.DevicesPath(agentDir))
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(daemon.DevicesPath(agentDir)); fi.Mode().Perm() != 0o600 || bytes.Contains(store, []byte(token)) {
		t.Fatalf("the device store: mode %v, holds the token: %v", fi.Mode().Perm(), bytes.Contains(store, []byte(token)))
	}
	if list, err := cliCommand("daemon", "devices", "--home", home).Output(); err != nil || !strings.Contains(string(list), "phone") || strings.Contains(string(list), token) {
		t.Fatalf("voltmcp daemon devices: %q %v", list, err)
	}

	startDaemonProcess(t, home, "--http", "127.0.0.1:0")
	ctx := testwait.Context(t)
	st, err := daemon.AskStatus(ctx, agentDir)
	if err != nil || st.HTTP == "" {
		t.Fatalf("daemon status: %+v %v, want its HTTP address", st, err)
	}
	c := &remoteClient{t: t, base: "http://" + st.HTTP, token: token}
	evs := c.events("1", false)

	caps := c.result("get_mcp_capabilities", nil)
	if !strings.Contains(fmt.Sprint(caps["features"]), "mcp_management.v1") {
		t.Errorf("get_mcp_capabilities features: %v, want mcp_management.v1", caps["features"])
	}
	servers, _ := c.result("list_mcp_servers", nil)["servers"].([]any)
	if len(servers) != 4 {
		t.Fatalf("list_mcp_servers: %v", servers)
	}
	demo := c.result("get_mcp_server", map[string]any{"id": "demo"})
	if cmd, _ := demo["command"].(string); cmd == "" || demo["args"] != nil || demo["env"] != nil {
		t.Errorf("demo's summary: command %v, args %v, env %v; want the command alone", demo["command"], demo["args"], demo["env"])
	}
	if far := c.result("get_mcp_server", map[string]any{"id": "far"}); far["url"] != "http://127.0.0.1:1" {
		t.Errorf("far's url: %v, want its origin", far["url"])
	}
	c.result("connect_mcp_server", map[string]any{"id": "demo"})
	if e := c.errorOf("connect_mcp_server", map[string]any{"id": "far"}); e["code"] == float64(-32003) {
		t.Errorf("connect_mcp_server far: refused %v, want it tried (a remote-safe command)", e)
	}
	for _, r := range []struct {
		method string
		params map[string]any
	}{
		{"call_mcp_tool", map[string]any{"id": "demo", "tool": "echo", "arguments": map[string]any{"text": "hi"}}},
		{"approve_mcp_server", map[string]any{"id": "demo"}},
		{"list_mcp_pins", map[string]any{"id": "demo"}},
		{"gateway", map[string]any{"action": "call", "server": "demo", "tool": "echo"}},
		{"complete_mcp_server_auth", map[string]any{"id": "web", "callbackUrl": "http://127.0.0.1:1/callback?code=x&state=y"}},
		{"get_mcp_server", map[string]any{"id": "nope"}},
	} {
		if e := c.errorOf(r.method, r.params); e["code"] != float64(-32003) {
			t.Errorf("%s: %v, want -32003", r.method, e)
		}
	}

	// The device flow: start, the user approves, poll; then cancel one.
	f := c.result("start_mcp_server_auth", map[string]any{"id": "dev"})
	code, _ := f["userCode"].(string)
	if f["flow"] != "device" || f["state"] != "pending" || code == "" {
		t.Fatalf("start_mcp_server_auth dev: %v", f)
	}
	if err := dev.ApproveDevice(code); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "the device flow to end", func() bool {
		return c.result("poll_mcp_server_auth", map[string]any{"id": "dev"})["state"] != "pending"
	})
	if f := c.result("poll_mcp_server_auth", map[string]any{"id": "dev"}); f["state"] != "authenticated" {
		t.Fatalf("poll_mcp_server_auth dev: %v", f)
	}
	c.result("refresh_mcp_server", map[string]any{"id": "dev"})
	c.result("logout_mcp_server", map[string]any{"id": "dev"})
	c.result("disconnect_mcp_server", map[string]any{"id": "dev"})
	if f := c.result("start_mcp_server_auth", map[string]any{"id": "dev"}); f["state"] != "pending" {
		t.Fatalf("start_mcp_server_auth dev after logout: %v", f)
	}
	if f := c.result("cancel_mcp_server_auth", map[string]any{"id": "dev"}); f["state"] != "cancelled" {
		t.Errorf("cancel_mcp_server_auth dev: %v", f)
	}
	// A server whose flow is the browser's is not authorized remotely.
	if e := c.errorOf("start_mcp_server_auth", map[string]any{"id": "web"}); !strings.Contains(fmt.Sprint(e["message"]), "browser flow") {
		t.Errorf("start_mcp_server_auth web: %v, want a refusal naming the browser flow", e)
	}
	if web.Authorizes.Load() != 0 {
		t.Errorf("the browser flow reached the authorization endpoint %d times", web.Authorizes.Load())
	}
	testwait.For(t, "the events of the calls", func() bool {
		s := evs.String()
		return strings.Contains(s, "mcp_auth") && strings.Contains(s, `"server":"far"`) && strings.Contains(s, "id: ")
	})

	// A client that comes back with Last-Event-ID gets what followed.
	resumed := c.events("5", true)
	testwait.For(t, "the resumed stream's first events", func() bool { return strings.Contains(resumed.String(), "\nid: 7\n") })
	if r := resumed.String(); !strings.Contains(r, "\nid: 6\n") || strings.Contains(r, "id: 5\n") {
		t.Errorf("the stream resumed after 5:\n%s", r)
	}

	// A workspace an agent session of this machine opened is reached
	// with the header; its project is not trusted, so its server is
	// listed and not acted on.
	proj := t.TempDir()
	projCmd, projArgs, projEnv := mcptest.Command(mcptest.ModeBehave)
	projData, _ := json.Marshal(map[string]any{"version": 1, "servers": map[string]any{"proj": map[string]any{"command": projCmd, "args": projArgs, "env": projEnv}}})
	if err := os.MkdirAll(filepath.Join(proj, ".volt"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proj, ".volt", "mcp.json"), projData, 0o644); err != nil {
		t.Fatal(err)
	}
	session, _, err := daemon.Attach(ctx, agentDir, proj, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	for _, w := range []struct {
		header map[string]string
		want   bool
	}{{nil, false}, {map[string]string{daemon.WorkspaceHeader: proj}, true}} {
		_, body := c.do("POST", "/rpc", `{"jsonrpc":"2.0","id":1,"method":"list_mcp_servers"}`, w.header)
		if got := strings.Contains(body, `"id":"proj"`); got != w.want {
			t.Errorf("list_mcp_servers with %v lists proj: %v, want %v", w.header, got, w.want)
		}
	}
	if _, body := c.do("POST", "/rpc", `{"jsonrpc":"2.0","id":1,"method":"connect_mcp_server","params":{"id":"proj"}}`, map[string]string{daemon.WorkspaceHeader: proj}); !strings.Contains(body, "-32003") {
		t.Errorf("connect_mcp_server of an untrusted project's server: %s, want -32003", body)
	}

	// The web's holes.
	okHost := strings.Replace(st.HTTP, "127.0.0.1", "localhost", 1)
	unauthorized := map[string]bool{} // the 401 answers' bodies: one
	big := `{"jsonrpc":"2.0","id":1,"method":"list_mcp_servers","params":{"pad":"` + strings.Repeat("x", 2<<20) + `"}}`
	for _, h := range []struct {
		name   string
		token  string
		path   string
		body   string
		header map[string]string
		want   int
	}{
		{"localhost Host", token, "/rpc", `{"jsonrpc":"2.0","id":1,"method":"list_mcp_servers"}`, map[string]string{"Host": okHost}, 200},
		{"same origin", token, "/rpc", `{"jsonrpc":"2.0","id":1,"method":"list_mcp_servers"}`, map[string]string{"Origin": "http://" + st.HTTP}, 200},
		{"no token", "", "/rpc", `{"jsonrpc":"2.0","id":1,"method":"list_mcp_servers"}`, nil, 401},
		{"bad token", "vmd_" + strings.Repeat("A", 43), "/rpc", `{"jsonrpc":"2.0","id":1,"method":"list_mcp_servers"}`, nil, 401},
		{"not a device token", "owner-token", "/events", "", nil, 401},
		{"rebinding Host", token, "/rpc", `{"jsonrpc":"2.0","id":1,"method":"list_mcp_servers"}`, map[string]string{"Host": "evil.example:80"}, 421},
		{"other port Host", token, "/rpc", `{"jsonrpc":"2.0","id":1,"method":"list_mcp_servers"}`, map[string]string{"Host": "127.0.0.1:1"}, 421},
		{"cross origin", token, "/rpc", `{"jsonrpc":"2.0","id":1,"method":"list_mcp_servers"}`, map[string]string{"Origin": "http://evil.example"}, 403},
		{"null origin", token, "/rpc", `{"jsonrpc":"2.0","id":1,"method":"list_mcp_servers"}`, map[string]string{"Origin": "null"}, 403},
		{"cross site", token, "/rpc", `{"jsonrpc":"2.0","id":1,"method":"list_mcp_servers"}`, map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"form post", token, "/rpc", `{"jsonrpc":"2.0","id":1,"method":"list_mcp_servers"}`, map[string]string{"Content-Type": "text/plain"}, 415},
		{"body over the limit", token, "/rpc", big, nil, 413},
		{"unopened workspace", token, "/rpc", `{"jsonrpc":"2.0","id":1,"method":"list_mcp_servers"}`, map[string]string{daemon.WorkspaceHeader: t.TempDir()}, 404},
		{"missing workspace", token, "/rpc", `{"jsonrpc":"2.0","id":1,"method":"list_mcp_servers"}`, map[string]string{daemon.WorkspaceHeader: "/nonexistent/dir"}, 404},
		{"unknown path", token, "/admin", "", nil, 404},
	} {
		c.token = h.token
		method := "POST"
		if h.path == "/events" {
			method = "GET"
		}
		status, body := c.do(method, h.path, h.body, h.header)
		if status != h.want {
			t.Errorf("%s: HTTP %d %q, want %d", h.name, status, body, h.want)
		}
		if status == http.StatusUnauthorized {
			unauthorized[body] = true
		}
	}
	c.token = token

	// Nothing secret reached the device.
	seen := c.seen.String() + evs.String() + resumed.String()
	for _, canary := range []string{httpCanaryArg, httpCanaryEnv, httpCanaryPath, httpCanaryQuery, token} {
		if strings.Contains(seen, canary) {
			t.Errorf("a remote answer or event holds %q", canary)
		}
	}
	for _, s := range []*oauthtest.Server{dev, web} {
		if leak := s.Leaked(seen); leak != "" {
			t.Errorf("a remote answer or event holds an OAuth token or code of %s", s.Issuer)
		}
	}

	// The daemon recorded the device's last use.
	if list, err := cliCommand("daemon", "devices", "--json", "--home", home).Output(); err != nil || !strings.Contains(string(list), `"lastUsedAt"`) {
		t.Errorf("voltmcp daemon devices --json after use: %s %v, want a lastUsedAt", list, err)
	}

	// Revoked while the daemon runs: refused at once, and its event
	// stream ends with no event to send.
	if out, err := cliCommand("daemon", "devices", "revoke", "phone", "--home", home).CombinedOutput(); err != nil {
		t.Fatalf("voltmcp daemon devices revoke: %v %s", err, out)
	}
	status, body := c.do("POST", "/rpc", `{"jsonrpc":"2.0","id":1,"method":"list_mcp_servers"}`, nil)
	if status != 401 {
		t.Errorf("a revoked device's request: HTTP %d %q, want 401", status, body)
	}
	if unauthorized[body] = true; len(unauthorized) != 1 {
		t.Errorf("a missing, a bad and a revoked token are told apart: %v", unauthorized)
	}
	testwait.For(t, "the revoked device's event stream to end", evs.done)
}

// TestDaemonHTTPUsageErrors refuses, before anything starts, an --http
// address that is not a loopback one, --http with a subcommand, and a
// devices subcommand it does not know.
func TestDaemonHTTPUsageErrors(t *testing.T) {
	home := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"daemon", "--http", "0.0.0.0:7465"}, "not a loopback address"},
		{[]string{"daemon", "--http", "192.168.1.5:7465"}, "not a loopback address"},
		{[]string{"daemon", "--http", "example.com:80"}, "not a loopback address"},
		{[]string{"daemon", "--http", "7465"}, "want HOST:PORT"},
		{[]string{"daemon", "status", "--http", "127.0.0.1:0"}, "--http goes with 'voltmcp daemon' itself"},
		{[]string{"daemon", "devices", "forget", "x"}, "unknown daemon devices command"},
		{[]string{"daemon", "devices", "revoke"}, "takes one device id"},
	} {
		r := runCLI(t, nil, append([]string{"--home", home}, c.args...)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("voltmcp %v: want exit 2 naming %q\n%s", c.args, c.want, r)
		}
	}
}
