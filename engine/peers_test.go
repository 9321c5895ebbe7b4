package engine

// Integration tests against real third-party MCP servers: the official
// server-everything (stdio, Streamable HTTP and legacy SSE) and
// server-filesystem, from npm (see internal/npmpeers). Without the npm
// peers these tests skip, unless VOLTMCP_REQUIRE_PEERS=1 (as in CI),
// which makes them fail instead.

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/internal/npmpeers"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// peerTimeouts are generous: node takes about half a second to start, more
// on a loaded CI machine running the race detector.
var peerTimeouts = server{"connectTimeoutMs": 30000, "discoveryTimeoutMs": 30000, "callTimeoutMs": 30000}

// nodeServer returns a stdio server entry that runs a script of an npm
// peer with Node 22. The command is the bare name "node", found through
// the PATH the config gives the server, so that the engine's command
// lookup takes part.
func nodeServer(t *testing.T, entry string, args ...string) server {
	t.Helper()
	node := npmpeers.Node(t)
	s := server{
		"command": "node",
		"args":    append([]string{npmpeers.Path(t, entry)}, args...),
		"env":     map[string]string{"PATH": filepath.Dir(node)},
	}
	for k, v := range peerTimeouts {
		s[k] = v
	}
	return s
}

// httpServer returns a URL server entry; transport "" leaves it out
// (auto: Streamable HTTP, then SSE).
func httpServer(url, transport string) server {
	s := server{"url": url}
	if transport != "" {
		s["transport"] = transport
	}
	for k, v := range peerTimeouts {
		s[k] = v
	}
	return s
}

// startWithPeers is start for tests that run HTTP servers of their own:
// when the test ends it closes the engine, then stops the peers, and only
// then checks that no child process is left.
func startWithPeers(t *testing.T, opts Options, peers ...*npmpeers.Server) *Engine {
	t.Helper()
	e, err := New(testwait.Context(t), &opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.Close()
		for _, p := range peers {
			p.Stop()
		}
		if kids := children(); len(kids) > 0 {
			t.Errorf("child processes left after Close: %v", kids)
		}
	})
	if d := e.Diagnostics(); d.HasErrors() {
		t.Fatalf("config errors: %v", d)
	}
	return e
}

func toolNames(m *Metadata) []string {
	var names []string
	for _, t := range m.Tools {
		names = append(names, t.Name)
	}
	return names
}

// checkEverything checks what server-everything offers every client,
// whatever its capabilities, and an echo round trip.
func checkEverything(t *testing.T, e *Engine, id, transport string) {
	t.Helper()
	ctx := testwait.Context(t)
	if err := e.Connect(ctx, id); err != nil {
		t.Fatalf("connect %s: %v", id, err)
	}
	m, err := e.Metadata(id)
	if err != nil || m == nil {
		t.Fatalf("metadata of %s: %v %v", id, m, err)
	}
	names := toolNames(m)
	for _, want := range []string{"echo", "get-sum", "get-env", "get-tiny-image", "get-structured-content", "trigger-long-running-operation"} {
		if !slices.Contains(names, want) {
			t.Errorf("%s: no tool %q among %v", id, want, names)
		}
	}
	if m.Transport != transport || m.ProtocolVersion == "" || !strings.Contains(m.Name, "everything") {
		t.Errorf("%s: transport %q, protocol %q, server name %q", id, m.Transport, m.ProtocolVersion, m.Name)
	}
	var uris []string
	for _, r := range m.Resources {
		uris = append(uris, r.URI)
	}
	if len(uris) == 0 || !strings.HasPrefix(uris[0], "demo://resource/") {
		t.Errorf("%s: resources %v", id, uris)
	}
	var templates []string
	for _, r := range m.ResourceTemplates {
		templates = append(templates, r.URITemplate)
	}
	if !slices.Contains(templates, "demo://resource/dynamic/text/{resourceId}") {
		t.Errorf("%s: resource templates %v", id, templates)
	}
	var prompts []string
	for _, p := range m.Prompts {
		prompts = append(prompts, p.Name)
	}
	for _, want := range []string{"simple-prompt", "args-prompt"} {
		if !slices.Contains(prompts, want) {
			t.Errorf("%s: no prompt %q among %v", id, want, prompts)
		}
	}
	// server-everything may announce a list change right after connecting,
	// which starts a background refresh: wait for it to settle.
	s := waitStatus(t, e, id, StatusReady)
	if s.Transport != transport || s.ToolCounts.Cached != len(m.Tools) ||
		s.Resources != len(m.Resources) || s.Prompts != len(m.Prompts) {
		t.Errorf("%s: summary %+v", id, s)
	}

	res, err := e.callUngated(ctx, id, "echo", map[string]any{"message": "hello from voltmcp ✓"})
	if err != nil {
		t.Fatalf("%s: echo: %v", id, err)
	}
	if got := text(res); res.IsError || got != "Echo: hello from voltmcp ✓" {
		t.Errorf("%s: echo = %q (isError %v)", id, got, res.IsError)
	}
	res, err = e.callUngated(ctx, id, "get-sum", map[string]any{"a": 2, "b": 40})
	if err != nil {
		t.Fatalf("%s: get-sum: %v", id, err)
	}
	if got := text(res); res.IsError || !strings.Contains(got, "42") {
		t.Errorf("%s: get-sum = %q (isError %v)", id, got, res.IsError)
	}
	// A call the server rejects is a tool error, not a broken session.
	res, err = e.callUngated(ctx, id, "get-sum", map[string]any{"a": "two"})
	if err == nil && !res.IsError {
		t.Errorf("%s: get-sum with a bad argument succeeded: %q", id, text(res))
	}
	if _, err := e.callUngated(ctx, id, "echo", map[string]any{"message": "still here"}); err != nil {
		t.Errorf("%s: session unusable after a rejected call: %v", id, err)
	}
}

func TestPeerEverythingStdio(t *testing.T) {
	t.Parallel()
	opts := workspace(t, map[string]server{
		"everything": nodeServer(t, npmpeers.EverythingEntry, "stdio"),
	}, nil)
	e := start(t, opts)
	checkEverything(t, e, "everything", cue.TransportStdio)
	if s, _ := e.Server("everything"); !strings.Contains(s.Stderr, "Starting") {
		t.Errorf("stderr of the server not kept: %q", s.Stderr)
	}
	// Close stops node: start's cleanup checks that no process is left.
}

// TestPeerEverythingEnvCanary checks that a real server sees none of the
// host's environment beyond the baseline: its get-env tool returns its
// whole process environment.
func TestPeerEverythingEnvCanary(t *testing.T) {
	t.Parallel()
	const canaryName = "VOLTMCP_CANARY_TOKEN"
	const canary = "ghp_voltmcpCanary0123456789abcdefABCDEF"
	opts := workspace(t, map[string]server{
		"plain": nodeServer(t, npmpeers.EverythingEntry, "stdio"),
		// The control: the same server, allowed to see the variable, shows
		// it, so the check on "plain" is not vacuous.
		"allowed": func() server {
			s := nodeServer(t, npmpeers.EverythingEntry, "stdio")
			s["envAllowlist"] = []string{canaryName}
			return s
		}(),
	}, nil)
	host := opts.LookupEnv
	opts.LookupEnv = func(k string) (string, bool) {
		if k == canaryName {
			return canary, true
		}
		return host(k)
	}
	e := start(t, opts)
	ctx := testwait.Context(t)
	envOf := func(id string) string {
		t.Helper()
		res, err := e.callUngated(ctx, id, "get-env", map[string]any{})
		if err != nil {
			t.Fatalf("%s: get-env: %v", id, err)
		}
		if res.IsError {
			t.Fatalf("%s: get-env failed: %s", id, text(res))
		}
		return text(res)
	}
	plain := envOf("plain")
	if strings.Contains(plain, canary) || strings.Contains(plain, canaryName) {
		t.Errorf("the server sees the host's %s:\n%s", canaryName, plain)
	}
	if !strings.Contains(plain, `"PATH"`) || !strings.Contains(plain, `"HOME"`) {
		t.Errorf("get-env output does not look like an environment:\n%s", plain)
	}
	if allowed := envOf("allowed"); !strings.Contains(allowed, canary) {
		t.Errorf("the allowlisted server does not see %s; the canary check proves nothing:\n%s", canaryName, allowed)
	}
	for _, s := range e.Servers() {
		if strings.Contains(s.LastError+s.Stderr+s.SourceLabel, canary) {
			t.Errorf("summary of %s shows the canary", s.ID)
		}
	}
}

func TestPeerEverythingStreamableHTTP(t *testing.T) {
	peer := npmpeers.StartEverything(t, "streamableHttp")
	opts := workspace(t, map[string]server{
		"http": httpServer(peer.URL("/mcp"), cue.TransportStreamableHTTP),
		"auto": httpServer(peer.URL("/mcp"), ""),
	}, nil)
	e := startWithPeers(t, opts, peer)
	checkEverything(t, e, "http", cue.TransportStreamableHTTP)
	// Auto-detection keeps Streamable HTTP where it works.
	checkEverything(t, e, "auto", cue.TransportStreamableHTTP)
	if err := e.Disconnect(testwait.Context(t), "http"); err != nil {
		t.Fatal(err)
	}
	// The server is still up for a new session.
	if _, err := e.callUngated(testwait.Context(t), "http", "echo", map[string]any{"message": "again"}); err != nil {
		t.Errorf("reconnect after disconnect: %v", err)
	}
}

func TestPeerEverythingSSE(t *testing.T) {
	peer := npmpeers.StartEverything(t, "sse")
	opts := workspace(t, map[string]server{
		"sse": httpServer(peer.URL("/sse"), cue.TransportSSE),
		// No transport: the Streamable HTTP POST to /sse gets 404 from
		// this server, and the engine falls back to SSE.
		"auto": httpServer(peer.URL("/sse"), ""),
	}, nil)
	e := startWithPeers(t, opts, peer)
	if s, _ := e.Server("auto"); s.Transport != "auto" {
		t.Errorf("auto server before connecting: transport %q", s.Transport)
	}
	checkEverything(t, e, "sse", cue.TransportSSE)
	checkEverything(t, e, "auto", cue.TransportSSE)
}

func TestPeerHTTPServerGoneIsAnError(t *testing.T) {
	peer := npmpeers.StartEverything(t, "streamableHttp")
	opts := workspace(t, map[string]server{"http": httpServer(peer.URL("/mcp"), cue.TransportStreamableHTTP)}, nil)
	e := startWithPeers(t, opts, peer)
	ctx := testwait.Context(t)
	if err := e.Connect(ctx, "http"); err != nil {
		t.Fatal(err)
	}
	peer.Stop()
	if _, err := e.callUngated(ctx, "http", "echo", map[string]any{"message": "x"}); err == nil {
		t.Fatal("a call to a stopped server succeeded")
	}
}

func TestPeerFilesystemStdio(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	const content = "voltmcp was here\nline two\n"
	if err := os.WriteFile(filepath.Join(root, "hello.txt"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("not for the server"), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := workspace(t, map[string]server{"fs": nodeServer(t, npmpeers.FilesystemEntry, root)}, nil)
	e := start(t, opts)
	ctx := testwait.Context(t)
	if err := e.Connect(ctx, "fs"); err != nil {
		t.Fatal(err)
	}
	m, _ := e.Metadata("fs")
	names := toolNames(m)
	for _, want := range []string{"list_directory", "read_text_file", "write_file", "list_allowed_directories"} {
		if !slices.Contains(names, want) {
			t.Errorf("no tool %q among %v", want, names)
		}
	}
	call := func(tool string, args map[string]any) (string, bool) {
		t.Helper()
		res, err := e.callUngated(ctx, "fs", tool, args)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		return text(res), res.IsError
	}
	if out, isErr := call("list_directory", map[string]any{"path": root}); isErr ||
		!strings.Contains(out, "[FILE] hello.txt") || !strings.Contains(out, "[DIR] sub") {
		t.Errorf("list_directory = %q (isError %v)", out, isErr)
	}
	if out, isErr := call("read_text_file", map[string]any{"path": filepath.Join(root, "hello.txt")}); isErr || out != content {
		t.Errorf("read_text_file = %q (isError %v)", out, isErr)
	}
	if out, isErr := call("read_text_file", map[string]any{"path": filepath.Join(root, "hello.txt"), "head": 1}); isErr || out != "voltmcp was here" {
		t.Errorf("read_text_file head 1 = %q (isError %v)", out, isErr)
	}
	// The server refuses a path outside its root: a tool error.
	if out, isErr := call("read_text_file", map[string]any{"path": filepath.Join(outside, "secret.txt")}); !isErr || strings.Contains(out, "not for the server") {
		t.Errorf("read outside the root = %q (isError %v)", out, isErr)
	}
}
