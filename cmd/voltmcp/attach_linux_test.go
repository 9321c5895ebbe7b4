//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/daemon"
	"github.com/voltmcp/voltmcp/internal/mcptest"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// wireServe is a `voltmcp serve` process spoken to in raw JSON-RPC
// lines, as an agent's stdio transport speaks to it.
type wireServe struct {
	name string
	in   io.WriteCloser
	out  *bufio.Reader
}

// startWireServe starts serve with args and initializes it with
// protocol version proto.
func startWireServe(t *testing.T, name, proto string, args ...string) *wireServe {
	t.Helper()
	cmd := cliCommand(append([]string{"serve"}, args...)...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		_ = cmd.Wait()
	})
	w := &wireServe{name: name, in: in, out: bufio.NewReaderSize(out, 1<<20)}
	w.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"wire","version":"1"}}}`, proto))
	if line := w.line(t); !strings.Contains(line, `"protocolVersion":"`+proto+`"`) {
		t.Fatalf("%s: initialize: %s", name, line)
	}
	w.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return w
}

func (w *wireServe) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(w.in, line+"\n"); err != nil {
		t.Fatalf("%s: write: %v", w.name, err)
	}
}

// line reads the next line the serve writes (the test's deadline ends
// the process, and with it a read that would hang).
func (w *wireServe) line(t *testing.T) string {
	t.Helper()
	line, err := w.out.ReadString('\n')
	if err != nil {
		t.Fatalf("%s: read: %v (read %q)", w.name, err, line)
	}
	return strings.TrimSuffix(line, "\n")
}

// cacheIDs matches the ids of the engine's output store, which differ
// between two engines that stored the same output.
var cacheIDs = regexp.MustCompile(`mcpout_[A-Za-z0-9_-]+`)

// TestAttachedServeAnswersAsStandalone sends the same calls, as raw
// JSON-RPC lines, to a serve attached to a daemon and to a standalone
// serve of the same config, under the protocol before 2026-07-28 and
// under 2026-07-28 (whose results say "resultType"; its calls carry the
// client's protocol in _meta), and checks that the
// agent reads the same bytes from both: results of servers, non-ASCII
// and HTML-special text, a server's error result, the gateway's errors
// (bad arguments, an unknown server), output cut to its bound with a
// reference to the stored whole (the store's ids aside), media, search
// and describe, and a call the lean path leaves to the SDK's server.
func TestAttachedServeAnswersAsStandalone(t *testing.T) {
	home := daemonHome(t, "up")
	// A second server, of media, beside the behave one.
	cfg := filepath.Join(home, ".volt", "agent", "mcp.json")
	var doc struct {
		Version int            `json:"version"`
		Servers map[string]any `json:"servers"`
	}
	data, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	cmd, args, env := mcptest.Command(mcptest.ModeMedia)
	doc.Servers["pics"] = map[string]any{"command": cmd, "args": args, "env": env, "connectTimeoutMs": testTimeoutMs, "discoveryTimeoutMs": testTimeoutMs}
	data, _ = json.Marshal(doc)
	if err := os.WriteFile(cfg, data, 0o600); err != nil {
		t.Fatal(err)
	}
	startDaemonProcess(t, home)
	project := t.TempDir()

	call := func(args string) string { return `{"name":"mcp","arguments":` + args + `}` }
	meta26 := `"_meta":{"` + mcp.MetaKeyProtocolVersion + `":"2026-07-28","` + mcp.MetaKeyClientInfo + `":{"name":"wire","version":"1"},"` + mcp.MetaKeyClientCapabilities + `":{}}`
	calls := []struct{ name, params string }{
		{"echo", call(`{"action":"call","server":"up","tool":"echo","arguments":{"text":"hello, gateway"}}`)},
		{"non-ASCII and HTML", call(`{"action":"call","server":"up","tool":"echo","arguments":{"text":"grüße, 日本語 \u2028 <b>&amp;</b> \"q\" \\ 🦀"}}`)},
		{"server error result", call(`{"action":"call","server":"up","tool":"fail","arguments":{}}`)},
		{"unknown server", call(`{"action":"call","server":"nope","tool":"echo","arguments":{"text":"x"}}`)},
		{"unknown field", call(`{"action":"call","server":"up","tool":"echo","arguments":{"text":"x"},"extra":1}`)},
		{"no arguments", `{"name":"mcp"}`},
		{"large output", call(`{"action":"call","server":"up","tool":"big","arguments":{"bytes":300000}}`)},
		{"image", call(`{"action":"call","server":"pics","tool":"media","arguments":{"kind":"image","mimeType":"image/png","bytes":2000}}`)},
		{"search", call(`{"action":"search","query":"echo"}`)},
		{"describe", call(`{"action":"describe","server":"up","tool":"echo"}`)},
		{"progress token", `{"name":"mcp","_meta":{"progressToken":"p1"},"arguments":{"action":"call","server":"up","tool":"echo","arguments":{"text":"tok"}}}`},
	}
	for _, proto := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(proto, func(t *testing.T) {
			// A client of 2026-07-28 sends its protocol version in each
			// request's _meta; the session is initialized either way.
			attached := startWireServe(t, "attached", "2025-11-25", "--home", home, "--project", project, "--daemon=on")
			standalone := startWireServe(t, "standalone", "2025-11-25", "--home", home, "--project", project, "--no-daemon")
			for i, c := range calls {
				params := c.params
				if proto == "2026-07-28" {
					params = strings.Replace(params, `{"name":"mcp"`, `{`+meta26+`,"name":"mcp"`, 1)
				}
				req := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, i+1, params)
				var got [2]string
				for k, w := range []*wireServe{attached, standalone} {
					w.send(t, req)
					got[k] = cacheIDs.ReplaceAllString(w.line(t), "mcpout_ID")
				}
				if got[0] != got[1] {
					t.Errorf("%s: the attached serve answered\n%.2000s\nthe standalone one\n%.2000s", c.name, got[0], got[1])
				}
				var m struct {
					Result *mcp.CallToolResult `json:"result"`
				}
				if err := json.Unmarshal([]byte(got[1]), &m); err != nil || m.Result == nil {
					t.Fatalf("%s: no result: %v %.500s", c.name, err, got[1])
				}
				wantErr := strings.Contains(c.name, "error") || strings.Contains(c.name, "unknown") || c.name == "no arguments"
				if m.Result.IsError != wantErr {
					t.Errorf("%s: isError %v, want %v: %.500s", c.name, m.Result.IsError, wantErr, got[1])
				}
				if complete := bytes.Contains([]byte(got[1]), []byte(`"resultType":"complete"}}`)); complete != (proto == "2026-07-28") {
					t.Errorf("%s: resultType: %.300s", c.name, got[1])
				}
			}
		})
	}
}

// TestAttachedServeForwardsCancel: an agent cancels a call in flight
// through an attached serve (the SDK's client sends
// notifications/cancelled when the call's context ends); the serve
// tells the daemon, whose engine ends the server's call, which a real
// slow upstream would otherwise run for ten minutes: the daemon reports
// the call's end, and the session goes on serving.
func TestAttachedServeForwardsCancel(t *testing.T) {
	home := daemonHome(t, "up")
	startDaemonProcess(t, home)
	project := t.TempDir()
	ctx := testwait.Context(t)
	cs := attachSession(ctx, t, home, project, "on")
	started, ended := make(chan struct{}), make(chan string, 1)
	var startOnce, endOnce sync.Once
	watch, _, err := daemon.Attach(ctx, filepath.Join(home, ".volt", "agent"), mustCanonical(t, project), func(method string, params json.RawMessage) {
		p := string(params)
		if method != "mcp_event" || !strings.Contains(p, `"slow"`) {
			return
		}
		if strings.Contains(p, `"mcp_call_start"`) {
			startOnce.Do(func() { close(started) })
		}
		if strings.Contains(p, `"mcp_call_end"`) {
			endOnce.Do(func() { ended <- p })
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	if err := watch.Call(ctx, "subscribe_mcp_events", map[string]any{"sinceSeq": 0}, nil); err != nil {
		t.Fatal(err)
	}
	callCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	returned := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(callCtx, &mcp.CallToolParams{Name: "mcp", Arguments: map[string]any{"action": "call", "server": "up", "tool": "slow", "arguments": map[string]any{"ms": 600000}}})
		returned <- err
	}()
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the slow call did not start")
	}
	cancel()
	select {
	case p := <-ended:
		if strings.Contains(p, `"completed"`) {
			t.Errorf("the cancelled call completed: %s", p)
		}
	case <-ctx.Done():
		t.Fatal("the daemon did not end the cancelled call")
	}
	if err := <-returned; err == nil {
		t.Error("the cancelled call returned no error to the agent")
	}
	if text, isErr := callTool(ctx, t, cs, echoArgs("up", "after")); isErr || !strings.Contains(text, "after") {
		t.Fatalf("next call: %v %s", isErr, text)
	}
}
