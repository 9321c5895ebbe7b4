package engine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/engine/audit"
	"github.com/voltmcp/voltmcp/engine/internal/auditq"
	"github.com/voltmcp/voltmcp/internal/mcptest"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// wirePeer is an agent that speaks raw JSON-RPC lines to serveStdio, to
// see exactly what the lean path writes.
type wirePeer struct {
	t    *testing.T
	in   *io.PipeWriter
	got  chan map[string]any
	done chan error
}

func newWirePeer(t *testing.T, e *Engine, lean *leanServe) *wirePeer {
	t.Helper()
	sr, cw := io.Pipe()
	cr, sw := io.Pipe()
	p := &wirePeer{t: t, in: cw, got: make(chan map[string]any, 64), done: make(chan error, 1)}
	go func() { p.done <- e.serveStdio(lean.ctx, sr, sw, lean) }()
	go func() {
		sc := bufio.NewScanner(cr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("serve wrote a line that is not JSON: %q", sc.Text())
				continue
			}
			p.got <- m
		}
		close(p.got)
	}()
	t.Cleanup(func() { cw.Close(); cr.Close() })
	return p
}

// initializedWirePeer serves e to a new wirePeer, which it initializes
// (id 1, protocol 2025-11-25); serving ends with the test.
func initializedWirePeer(t *testing.T, e *Engine) (*leanServe, *wirePeer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	lean := newLeanServe(ctx, e)
	p := newWirePeer(t, e, lean)
	p.send(map[string]any{"id": 1, "method": "initialize", "params": map[string]any{"protocolVersion": "2025-11-25",
		"capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "wire", "version": "1"}}})
	if r := p.reply(1); r["result"] == nil {
		t.Fatalf("initialize: %v", r)
	}
	p.send(map[string]any{"method": "notifications/initialized"})
	return lean, p
}

func (p *wirePeer) send(msg map[string]any) {
	p.t.Helper()
	msg["jsonrpc"] = "2.0"
	b, _ := json.Marshal(msg)
	if _, err := p.in.Write(append(b, '\n')); err != nil {
		p.t.Fatal(err)
	}
}

// reply waits for the response to id, skipping notifications; it fails
// the test if another response comes first.
func (p *wirePeer) reply(id any) map[string]any {
	p.t.Helper()
	timeout := time.After(testwait.Patience)
	for {
		select {
		case m, ok := <-p.got:
			if !ok {
				p.t.Fatalf("output ended before the response to %v", id)
			}
			if _, isNote := m["method"]; isNote {
				continue
			}
			if fmt.Sprint(m["id"]) != fmt.Sprint(id) {
				p.t.Fatalf("response to %v while waiting for %v: %v", m["id"], id, m)
			}
			return m
		case <-timeout:
			p.t.Fatalf("no response to %v", id)
		}
	}
}

func gatewayCallMsg(id any, args map[string]any, meta map[string]any) map[string]any {
	params := map[string]any{"name": "mcp", "arguments": args}
	if meta != nil {
		params["_meta"] = meta
	}
	return map[string]any{"id": id, "method": "tools/call", "params": params}
}

func resultText(t *testing.T, m map[string]any) string {
	t.Helper()
	res, ok := m["result"].(map[string]any)
	if !ok {
		t.Fatalf("no result: %v", m)
	}
	content, _ := res["content"].([]any)
	if len(content) == 0 {
		t.Fatalf("no content: %v", m)
	}
	text, _ := content[0].(map[string]any)["text"].(string)
	return text
}

// TestLeanServeWire drives the lean path of `voltmcp serve` over raw
// JSON-RPC lines: what it answers itself, what it leaves to the SDK, and
// the wire details it must get right.
func TestLeanServeWire(t *testing.T) {
	t.Parallel()
	opts := workspace(t, map[string]server{"s": stdio("behave", nil)}, nil)
	e := start(t, opts)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lean := newLeanServe(ctx, e)
	p := newWirePeer(t, e, lean)
	echo := map[string]any{"action": "call", "server": "s", "tool": "echo", "arguments": map[string]any{"text": "wire"}}

	// Before initialize, a call is the SDK's to refuse.
	p.send(gatewayCallMsg(1, echo, nil))
	if r := p.reply(1); r["error"] == nil {
		t.Errorf("call before initialize: %v", r)
	}
	if n := lean.answered.Load(); n != 0 {
		t.Errorf("the lean path answered %d calls before initialize", n)
	}

	p.send(map[string]any{"id": 2, "method": "initialize", "params": map[string]any{"protocolVersion": "2025-11-25",
		"capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "wire", "version": "1"}}})
	if r := p.reply(2); r["result"] == nil {
		t.Fatalf("initialize: %v", r)
	}
	p.send(map[string]any{"method": "notifications/initialized"})

	p.send(gatewayCallMsg(3, echo, nil))
	r := p.reply(3)
	if got := resultText(t, r); got != "wire" {
		t.Errorf("echo through the lean path: %q", got)
	}
	res := r["result"].(map[string]any)
	if _, ok := res["resultType"]; ok {
		t.Errorf("a 2025-11-25 session got a resultType: %v", res)
	}
	if sc, _ := res["structuredContent"].(map[string]any); sc["server"] != "s" || sc["status"] != "completed" {
		t.Errorf("structuredContent: %v", res["structuredContent"])
	}
	if n := lean.answered.Load(); n != 1 {
		t.Errorf("lean answers: %d, want 1", n)
	}

	// A string id, and a bad action: a tool result with isError.
	p.send(gatewayCallMsg("call-4", map[string]any{"action": "nope"}, nil))
	r = p.reply("call-4")
	if r["id"] != "call-4" || r["result"].(map[string]any)["isError"] != true {
		t.Errorf("bad action: %v", r)
	}

	// Protocol 2026-07-28: the client's triple rides in _meta, and the
	// result says it is complete, as the SDK's server says.
	meta := map[string]any{mcp.MetaKeyProtocolVersion: "2026-07-28",
		mcp.MetaKeyClientInfo:         map[string]any{"name": "wire", "version": "1"},
		mcp.MetaKeyClientCapabilities: map[string]any{}}
	p.send(gatewayCallMsg(5, echo, meta))
	r = p.reply(5)
	if r["result"].(map[string]any)["resultType"] != "complete" || resultText(t, r) != "wire" {
		t.Errorf("2026-07-28 call: %v", r)
	}
	// Without its capabilities, the SDK refuses such a call in its words.
	delete(meta, mcp.MetaKeyClientCapabilities)
	p.send(gatewayCallMsg(6, echo, meta))
	if r := p.reply(6); r["error"] == nil || !strings.Contains(fmt.Sprint(r["error"]), "_meta") {
		t.Errorf("2026-07-28 call without capabilities: %v", r)
	}

	// A cancelled call gets no answer; the connection keeps serving.
	slow := map[string]any{"action": "call", "server": "s", "tool": "slow", "arguments": map[string]any{"ms": 20000}}
	p.send(gatewayCallMsg(7, slow, nil))
	time.Sleep(300 * time.Millisecond)
	p.send(map[string]any{"method": "notifications/cancelled", "params": map[string]any{"requestId": 7, "reason": "test"}})
	p.send(map[string]any{"id": 8, "method": "ping"})
	if r := p.reply(8); r["error"] != nil {
		t.Errorf("ping after cancel: %v", r)
	}
	select {
	case m := <-p.got:
		t.Errorf("after the cancel: %v", m)
		// testwait: a negative wait, nothing may come after the cancel
	case <-time.After(500 * time.Millisecond):
	}

	// The agent closes stdin right after a call: the answer still comes.
	p.send(gatewayCallMsg(9, echo, nil))
	p.in.Close()
	if got := resultText(t, p.reply(9)); got != "wire" {
		t.Errorf("call before EOF: %q", got)
	}
	select {
	case err := <-p.done:
		if err != nil && !errors.Is(err, io.EOF) {
			t.Errorf("serve ended: %v", err)
		}
	case <-time.After(testwait.Patience):
		t.Fatal("serve did not end after EOF")
	}

	// The records a lean call holds until its answer is written reach
	// the log: the three echo calls, and the cancelled one.
	e.Close()
	var completed, other int
	for _, r := range auditRecords(t, opts, audit.Query{Kind: audit.KindCall, Server: "s"}) {
		if r.Status == "completed" && r.Tool == "echo" {
			completed++
		} else if r.Tool == "slow" {
			other++
		}
	}
	if completed != 3 || other != 1 {
		t.Errorf("call records: %d echo completed, %d slow; want 3 and 1", completed, other)
	}
}

// TestLeanServeMatchesSDK makes the same mcp tool calls through the lean
// path (stdio) and through the SDK's server (Streamable HTTP), and
// compares the results.
func TestLeanServeMatchesSDK(t *testing.T) {
	t.Parallel()
	leanServeMatchesSDK(t, false)
}

// TestLeanHTTPMatchesSDK is TestLeanServeMatchesSDK with the lean path
// on the Streamable HTTP surface (leanHTTP).
func TestLeanHTTPMatchesSDK(t *testing.T) {
	t.Parallel()
	leanServeMatchesSDK(t, true)
}

// leanServeMatchesSDK makes the same calls through the lean path, on
// stdio or on HTTP, and through the SDK's server, and compares them.
func leanServeMatchesSDK(t *testing.T, overHTTP bool) {
	e := start(t, workspace(t, map[string]server{"s": stdio(mcptest.ModeMedia, nil)}, nil))
	ctx := testwait.Context(t)
	lean := newLeanServe(ctx, e)
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	var leanT mcp.Transport
	if overHTTP {
		ls := httptest.NewServer(e.httpHandler(testToken, lean))
		defer ls.Close()
		leanT = &mcp.StreamableClientTransport{Endpoint: ls.URL, HTTPClient: bearerClient(testToken)}
	} else {
		cr, sw := io.Pipe()
		sr, cw := io.Pipe()
		go func() { _ = e.serveStdio(ctx, sr, sw, lean) }()
		leanT = &mcp.IOTransport{Reader: cr, Writer: cw}
	}
	viaLean, err := client.Connect(ctx, leanT, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer viaLean.Close()
	// The SDK's server alone, the reference.
	hs := httptest.NewServer(e.httpHandler(testToken, nil))
	defer hs.Close()
	viaSDK, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: bearerClient(testToken)}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer viaSDK.Close()

	inputs := []map[string]any{
		{"action": "call", "server": "s", "tool": "echo", "arguments": map[string]any{"text": "same"}},
		{"action": "call", "server": "s", "tool": "add", "argumentsJson": `{"a": 2, "b": 3}`},
		{"action": "call", "server": "s", "tool": "fail"},
		// Images, audio and embedded blobs: passed on, and a lie described.
		{"action": "call", "server": "s", "tool": mcptest.ToolMedia, "arguments": map[string]any{"kind": "image", "mimeType": "image/png", "bytes": 300, "count": 2}},
		{"action": "call", "server": "s", "tool": mcptest.ToolMedia, "arguments": map[string]any{"kind": "audio", "mimeType": "audio/wav", "magic": "wav", "bytes": 30}},
		{"action": "call", "server": "s", "tool": mcptest.ToolMedia, "arguments": map[string]any{"kind": "resource", "mimeType": "image/jpeg", "magic": "jpeg", "bytes": 30}},
		{"action": "call", "server": "s", "tool": mcptest.ToolMedia, "arguments": map[string]any{"kind": "image", "mimeType": "image/png", "magic": "elf", "bytes": 30}},
		// Resource blobs likewise.
		{"action": "read_resource", "server": "s", "resourceUri": mcptest.MediaResource("png", 300, 2, "image/png")},
		{"action": "read_resource", "server": "s", "resourceUri": mcptest.MediaResource("elf", 30, 1, "image/png")},
		{"action": "call", "server": "s", "tool": "ecko"},
		{"action": "call", "server": "s", "tool": "add", "argumentsJson": `{"a": `},
		{"action": "describe", "server": "s", "tool": "echo"},
		{"action": "search", "query": "sleep"},
		{"action": "call", "server": "nowhere", "tool": "echo"},
		{"action": "nope"},
		{"action": "call", "serer": "s"},
		{},
	}
	for _, in := range inputs {
		a, errA := viaLean.CallTool(ctx, &mcp.CallToolParams{Name: "mcp", Arguments: in})
		b, errB := viaSDK.CallTool(ctx, &mcp.CallToolParams{Name: "mcp", Arguments: in})
		if (errA == nil) != (errB == nil) {
			t.Errorf("%v: lean error %v, SDK error %v", in, errA, errB)
			continue
		}
		if errA != nil {
			continue
		}
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		var va, vb any
		_ = json.Unmarshal(ja, &va)
		_ = json.Unmarshal(jb, &vb)
		if !reflect.DeepEqual(va, vb) {
			t.Errorf("%v:\nlean %s\nSDK  %s", in, ja, jb)
		}
	}
	if n := lean.answered.Load(); n != int64(len(inputs)) {
		t.Errorf("the lean path answered %d of %d calls", n, len(inputs))
	}
	// Listing, and every other method, stays the SDK's.
	if tools, err := viaLean.ListTools(ctx, nil); err != nil || len(tools.Tools) != 1 {
		t.Errorf("tools/list: %v %v", tools, err)
	}
}

// TestLeanUpstreamCall checks that a call to a stdio server takes the
// lean path, and that the server's errors,
// progress and cancellation behave as through the SDK.
func TestLeanUpstreamCall(t *testing.T) {
	t.Parallel()
	e := start(t, workspace(t, map[string]server{"s": stdio("behave", nil)}, nil))
	ctx := testwait.Context(t)
	if err := e.Connect(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	s, err := e.supervisor("s")
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	conn, cs := s.conn, s.session
	s.mu.Unlock()
	if conn == nil {
		t.Fatal("a stdio session has no connection for the lean path")
	}
	if v := cs.InitializeResult().ProtocolVersion; v != upstreamProtocol {
		t.Fatalf("the session speaks %s, not %s", v, upstreamProtocol)
	}
	res, err := e.callUngated(ctx, "s", "echo", map[string]any{"text": "lean"})
	if err != nil || text(res) != "lean" {
		t.Fatalf("echo: %v %v", res, err)
	}
	if res, err := e.callUngated(ctx, "s", "add", map[string]any{"a": 1, "b": 2}); err != nil || fmt.Sprint(res.StructuredContent) != "map[sum:3]" {
		t.Errorf("add: %+v %v", res, err)
	}
	if res, err := e.callUngated(ctx, "s", "fail", nil); err != nil || !res.IsError {
		t.Errorf("fail: %+v %v", res, err)
	}
	_, err = e.callUngated(ctx, "s", "nope", nil)
	if err == nil || !strings.Contains(err.Error(), `unknown tool "nope"`) {
		t.Errorf("unknown tool: %v", err)
	}
	if n := conn.Sent(); n != 4 {
		t.Errorf("%d calls took the lean path, want 4", n)
	}

	// A cancelled call is cancelled on the server too: its progress stops.
	events, stop := e.Subscribe(256)
	defer stop()
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(350*time.Millisecond, cancel)
	if _, err := e.callUngated(cctx, "s", "slow", map[string]any{"ms": 20000}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	var updates, late int
	cancelledAt := time.Now()
	// testwait: a negative wait, the window in which late updates are counted
	deadline := time.After(800 * time.Millisecond)
collect:
	for {
		select {
		case ev := <-events:
			if ev.Type == EventCallUpdate {
				updates++
				if time.Since(cancelledAt) > 250*time.Millisecond {
					late++
				}
			}
		case <-deadline:
			break collect
		}
	}
	if updates == 0 || late > 0 {
		t.Errorf("progress: %d updates, %d of them well after the cancel", updates, late)
	}
	if left := conn.Pending(); left != 0 {
		t.Errorf("%d calls still pending", left)
	}
}

// TestProgressOnlyWhenSomeoneListens checks that a call asks its server
// for progress only while the engine's events have a subscriber, who is
// the only one to see it.
func TestProgressOnlyWhenSomeoneListens(t *testing.T) {
	t.Parallel()
	e := start(t, workspace(t, map[string]server{"s": stdio("behave", nil)}, nil))
	ctx := testwait.Context(t)
	s, err := e.supervisor("s")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.callUngated(ctx, "s", "slow", map[string]any{"ms": 350}); err != nil {
		t.Fatal(err)
	}
	if n := s.progressNotes.Load(); n != 0 {
		t.Errorf("with nobody listening, the server sent %d progress notifications", n)
	}
	events, stop := e.Subscribe(64)
	defer stop()
	go func() {
		for range events {
		}
	}()
	if _, err := e.callUngated(ctx, "s", "slow", map[string]any{"ms": 350}); err != nil {
		t.Fatal(err)
	}
	if n := s.progressNotes.Load(); n == 0 {
		t.Error("with a subscriber, the server sent no progress")
	}
}

// TestEncodeLeanResultMatchesSDK checks that the lean path's encoding of
// a gateway result is, byte for byte, the SDK's encoding of toolResult's
// CallToolResult, and that it adds resultType as the SDK's server does
// for a client of protocol 2026-07-28.
func TestEncodeLeanResultMatchesSDK(t *testing.T) {
	t.Parallel()
	for _, r := range []GatewayResult{
		{Text: "hello"},
		{Text: "", IsError: true},
		{Text: "<b>&\u2028 \x00 \xff é", Data: map[string]any{"z": 1, "a": []any{"<", nil, true}}},
		{Text: "ok", Data: CallResult{Server: "s", Tool: "t", Status: "completed", Risk: RiskRead, Content: "ok",
			Structured: json.RawMessage(`{"b": 1, "a": "<&>"}`)}},
		{Text: "cut", Data: CallResult{Server: "s", Tool: "t", Status: "failed", Content: "cut", Notes: []string{"n"},
			Truncation: &Truncation{Truncated: true, ReturnedBytes: 3, TotalBytes: 9}, Cache: &CacheRef{ID: "mcpout_x", Read: "r"}}},
		gwError("no server %q", "x"),
		{Text: "[image image/png, 9 bytes: attached as image content]", Data: CallResult{Server: "s", Tool: "shot", Status: "completed",
			Media: []MediaItem{{Kind: "image", MIMEType: "image/png", Bytes: 9, Inline: true}, {Kind: "audio", MIMEType: "audio/x", Bytes: 1, Reason: "no"}}},
			Attachments: []Attachment{{Kind: "image", MIMEType: "image/png", Data: []byte("\x89PNG\r\n\x1a\n\x00")},
				{Kind: "audio", MIMEType: "audio/ogg", Data: []byte("OggS")}, {Kind: "resource", MIMEType: "image/gif", URI: "file:///a<b>", Data: []byte("GIF89a")}}},
	} {
		got, err := encodeLeanResult(r, false)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(toolResult(r))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("got  %s\nwant %s", got, want)
		}
		complete, err := encodeLeanResult(r, true)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(complete, &m); err != nil || string(m["resultType"]) != `"complete"` {
			t.Errorf("%s: resultType %s (%v)", complete, m["resultType"], err)
		}
		delete(m, "resultType")
		var w map[string]json.RawMessage
		_ = json.Unmarshal(want, &w)
		if !reflect.DeepEqual(m, w) {
			t.Errorf("with resultType: %s, want %s and resultType", complete, want)
		}
	}
}

// TestLeanServePanicIsAnInternalError checks that a panic in the
// gateway's work on the lean path answers the call with an internal
// error that does not carry the panic's value, logs the stack without
// it, and leaves the connection serving.
func TestLeanServePanicIsAnInternalError(t *testing.T) {
	t.Parallel()
	const canary = "sk-panic-canary-5f1e"
	opts := workspace(t, map[string]server{"s": stdio("behave", nil)}, nil)
	var boom atomic.Bool
	opts.Decide = func(in ToolInput) ToolDecision {
		if boom.Load() && in.Tool.Name == "echo" {
			panic(canary)
		}
		return ToolDecision{Exposed: true, Allowed: true}
	}
	logs := &syncWriter{w: &bytes.Buffer{}}
	opts.Logger = slog.New(slog.NewTextHandler(logs, nil))
	e := start(t, opts)
	// Connected first: the panic comes in the call, not in discovery.
	if err := e.Connect(testwait.Context(t), "s"); err != nil {
		t.Fatal(err)
	}
	lean, p := initializedWirePeer(t, e)
	echo := map[string]any{"action": "call", "server": "s", "tool": "echo", "arguments": map[string]any{"text": "after"}}

	boom.Store(true)
	p.send(gatewayCallMsg(2, echo, nil))
	r := p.reply(2)
	boom.Store(false)
	e2, _ := r["error"].(map[string]any)
	if e2 == nil || e2["message"] != "internal error" || e2["code"] != float64(jsonrpc.CodeInternalError) {
		t.Fatalf("a call whose gateway work panicked: %v", r)
	}
	if n := lean.answered.Load(); n != 1 {
		t.Errorf("the lean path answered %d calls, want 1", n)
	}
	p.send(gatewayCallMsg(3, echo, nil))
	if got := resultText(t, p.reply(3)); got != "after" {
		t.Errorf("the call after the panic: %q", got)
	}
	logs.mu.Lock()
	logged := logs.w.String()
	logs.mu.Unlock()
	if !strings.Contains(logged, "the mcp tool panicked") {
		t.Errorf("the panic was not logged: %s", logged)
	}
	if strings.Contains(logged, canary) || strings.Contains(fmt.Sprint(r), canary) {
		t.Error("the panic's value leaked")
	}
}

// TestLeanServeReadsOnWhileTheAuditWaits checks that calls are answered
// while their audit records wait for the log's lock (another process
// holds it): the backlog's timer waits, and a call that finds the
// backlog full and writes it hands the reader over first. Every record
// is written once the lock is free. The calls are reads: a call of any
// other risk waits for its intent to be written before it is made
// (writeAhead).
func TestLeanServeReadsOnWhileTheAuditWaits(t *testing.T) {
	t.Parallel()
	switch runtime.GOOS {
	case "darwin", "dragonfly", "freebsd", "linux", "netbsd", "openbsd":
	default:
		t.Skip("the audit log has no file lock here")
	}
	opts := workspace(t, map[string]server{"s": stdio("behave", nil)}, nil)
	opts.Classify = func(string, Tool) (Risk, string) { return RiskRead, "test" }
	e := start(t, opts)
	if err := e.Connect(testwait.Context(t), "s"); err != nil {
		t.Fatal(err)
	}
	path := audit.DefaultPath(filepath.Join(opts.Home, ".volt", "agent"))
	lean, p := initializedWirePeer(t, e)
	call := func(id int, text string) {
		t.Helper()
		p.send(gatewayCallMsg(id, map[string]any{"action": "call", "server": "s", "tool": "echo", "arguments": map[string]any{"text": text}}, nil))
		if got := resultText(t, p.reply(id)); got != text {
			t.Fatalf("call %d answered %q, want %q", id, got, text)
		}
	}
	waitRecords := func(n int) {
		t.Helper()
		deadline := testwait.Deadline(t)
		for {
			recs, _, err := audit.Read(path, audit.Query{Kind: audit.KindCall, Tool: "echo"})
			if err == nil && len(recs) == n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d call records, want %d (%v)", len(recs), n, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// The first call opens the engine's log, so that the calls below
	// find it open and wait for its lock in the append itself.
	call(2, "zero")
	waitRecords(1)
	// Another writer of the same log (as another voltmcp process would
	// be) takes its lock and keeps it.
	holder, err := audit.Open(path, &audit.Options{HoldLock: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if err := holder.Append(context.Background(), audit.Record{Kind: audit.KindCall, Tool: "holder"}); err != nil {
		t.Fatal(err)
	}
	// The backlog's timer takes the first call's record and waits for
	// the lock.
	call(3, "first")
	for deadline := testwait.Deadline(t); !e.backlog.Writing(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the backlog's timer did not start writing")
		}
	}
	// More calls than the backlog keeps: the call that finds it full
	// writes it, waits for the timer's write, and must hand the server's
	// reader over for the calls after it to be answered.
	calls := auditq.BacklogCalls + 3
	for i := 1; i < calls; i++ {
		call(3+i, fmt.Sprint("call ", i))
	}
	if n := lean.answered.Load(); n != int64(calls+1) {
		t.Errorf("the lean path answered %d calls, want %d", n, calls+1)
	}
	if err := holder.Close(); err != nil {
		t.Fatal(err)
	}
	waitRecords(calls + 1)
}

// TestEveryCodecAnswersAPanicTheSameWay makes a call whose gateway work
// panics through each surface of the one pipeline: the SDK's server (a
// JSON-RPC internal error), the lean path over HTTP (the same), and the
// Go API (an error result). None carries the panic's value, and each
// surface serves the next call.
func TestEveryCodecAnswersAPanicTheSameWay(t *testing.T) {
	t.Parallel()
	const canary = "sk-panic-canary-9a4c"
	opts := workspace(t, map[string]server{"s": stdio("behave", nil)}, nil)
	var boom atomic.Bool
	opts.Decide = func(in ToolInput) ToolDecision {
		if boom.Load() && in.Tool.Name == "echo" {
			panic(canary)
		}
		return ToolDecision{Exposed: true, Allowed: true}
	}
	e := start(t, opts)
	ctx := testwait.Context(t)
	if err := e.Connect(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	echo := map[string]any{"action": "call", "server": "s", "tool": "echo", "arguments": map[string]any{"text": "after"}}
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	for _, lean := range []*leanServe{nil, newLeanServe(ctx, e)} {
		hs := httptest.NewServer(e.httpHandler(testToken, lean))
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: bearerClient(testToken)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		boom.Store(true)
		_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp", Arguments: echo})
		boom.Store(false)
		var jerr *jsonrpc.Error
		if !errors.As(err, &jerr) || jerr.Code != jsonrpc.CodeInternalError || strings.Contains(err.Error(), canary) {
			t.Errorf("lean %v: a call whose work panicked: %v", lean != nil, err)
		}
		if r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp", Arguments: echo}); err != nil || r.IsError {
			t.Errorf("lean %v: the call after the panic: %v %+v", lean != nil, err, r)
		}
		if lean != nil && lean.answered.Load() != 2 {
			t.Errorf("the lean path answered %d calls, want 2", lean.answered.Load())
		}
		cs.Close()
		hs.Close()
	}
	boom.Store(true)
	r := e.Gateway(ctx, GatewayInput{Action: "call", Server: "s", Tool: "echo", Arguments: map[string]any{"text": "x"}})
	boom.Store(false)
	if !r.IsError || !strings.Contains(r.Text, "internal error") || strings.Contains(r.Text, canary) {
		t.Errorf("Gateway, panicking: %+v", r)
	}
	// Each call, the ones that panicked too, leaves one record.
	e.Close()
	recs := auditRecords(t, opts, audit.Query{Kind: audit.KindCall})
	errs := 0
	for _, rec := range recs {
		if rec.Status == "error" && rec.Reason == "internal error" {
			errs++
		}
	}
	if len(recs) != 5 || errs != 3 {
		t.Errorf("%d call records, %d of them internal errors, for 5 calls of which 3 panicked", len(recs), errs)
	}
}
