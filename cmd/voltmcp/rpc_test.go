package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/voltmcp/voltmcp/internal/mcptest"
	"github.com/voltmcp/voltmcp/internal/oauthtest"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// The RPC client of these tests is written from the behaviour spec's
// DTOs (its TypeScript interfaces McpServerSummary and
// McpRecentCallSummary), not from package rpc's Go types: each answer is
// decoded into map[string]any and checked against specFields below,
// field by field, with the JSON type and the enum spellings the spec
// gives.

// specField is one field of a spec interface: its JSON type ("string",
// "boolean", "number", "array", "object"), whether it is optional (the
// spec's "?"), and its enum values when it has some.
type specField struct {
	typ      string
	optional bool
	enum     []string
}

// specServerSummary is the spec's McpServerSummary.
var specServerSummary = map[string]specField{
	"id":              {typ: "string"},
	"displayName":     {typ: "string"},
	"sourceScope":     {typ: "string", enum: []string{"user", "project", "temporary"}},
	"sourceLabel":     {typ: "string"},
	"enabled":         {typ: "boolean"},
	"activeInSession": {typ: "boolean"},
	"transport":       {typ: "string", enum: []string{"stdio", "streamable_http", "sse"}},
	"lifecycle":       {typ: "string", enum: []string{"lazy", "eager", "keep_alive"}},
	"status": {typ: "string", enum: []string{"disabled", "untrusted", "cold", "connecting", "connected", "ready",
		"needs_auth", "error", "disconnected"}},
	"authState":       {typ: "string", enum: []string{"none", "required", "pending", "authenticated", "failed"}},
	"toolCounts":      {typ: "object"},
	"resourceCount":   {typ: "number", optional: true},
	"promptCount":     {typ: "number", optional: true},
	"recentCalls":     {typ: "array"},
	"lastError":       {typ: "string", optional: true},
	"lastConnectedAt": {typ: "string", optional: true},
	"capabilities":    {typ: "object"},
}

// specToolCounts is McpServerSummary.toolCounts.
var specToolCounts = map[string]specField{
	"cached": {typ: "number"}, "live": {typ: "number", optional: true}, "enabled": {typ: "number", optional: true},
}

// specCapabilities is McpServerSummary.capabilities.
var specCapabilities = map[string]specField{
	"canEnable": {typ: "boolean"}, "canConnect": {typ: "boolean"}, "canDisconnect": {typ: "boolean"},
	"canRefresh": {typ: "boolean"}, "canAuthenticate": {typ: "boolean"}, "canPersistChanges": {typ: "boolean"},
}

// specRecentCall is the spec's McpRecentCallSummary.
var specRecentCall = map[string]specField{
	"id": {typ: "string"}, "timestamp": {typ: "string"}, "server": {typ: "string"}, "tool": {typ: "string"},
	"risk":        {typ: "string", enum: []string{"read", "write", "destructive", "unknown"}},
	"status":      {typ: "string", enum: []string{"started", "completed", "failed", "cancelled"}},
	"durationMs":  {typ: "number", optional: true},
	"outputBytes": {typ: "number", optional: true},
	"truncated":   {typ: "boolean", optional: true},
}

func jsonType(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case bool:
		return "boolean"
	case float64:
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// checkSpec checks obj against the spec interface fields: every field
// present unless optional, of its type and enum.
func checkSpec(t *testing.T, what string, obj map[string]any, fields map[string]specField) {
	t.Helper()
	for name, f := range fields {
		v, ok := obj[name]
		if !ok {
			if !f.optional {
				t.Errorf("%s: spec field %q missing", what, name)
			}
			continue
		}
		if got := jsonType(v); got != f.typ {
			t.Errorf("%s: spec field %q is a JSON %s, want %s", what, name, got, f.typ)
			continue
		}
		if f.enum != nil && !slices.Contains(f.enum, v.(string)) {
			t.Errorf("%s: spec field %q = %q, not one of the spec's %v", what, name, v, f.enum)
		}
	}
}

func checkSummary(t *testing.T, what string, s map[string]any) {
	t.Helper()
	checkSpec(t, what, s, specServerSummary)
	if tc, ok := s["toolCounts"].(map[string]any); ok {
		checkSpec(t, what+".toolCounts", tc, specToolCounts)
	}
	if c, ok := s["capabilities"].(map[string]any); ok {
		checkSpec(t, what+".capabilities", c, specCapabilities)
	}
	calls, _ := s["recentCalls"].([]any)
	for i, c := range calls {
		checkSpec(t, fmt.Sprintf("%s.recentCalls[%d]", what, i), c.(map[string]any), specRecentCall)
	}
}

// rpcProcess is a running `voltmcp rpc` and its pipes.
type rpcProcess struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *strings.Builder
	next   int
	// seen is every line read, events included.
	seen strings.Builder
	// home is the --home of the process, when startRPC made it.
	home string
}

// end closes the process's stdin and waits for it to exit.
func (p *rpcProcess) end() {
	p.t.Helper()
	p.in.Close()
	if err := p.cmd.Wait(); err != nil {
		p.t.Fatalf("voltmcp rpc: %v (stderr: %s)", err, p.stderr)
	}
}

// auditCalls are the call records of the audit log under home.
func auditCalls(t *testing.T, home string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(home, ".volt", "agent", "audit", "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		if rec["kind"] == "call" {
			out = append(out, rec)
		}
	}
	return out
}

// startRPC starts `voltmcp rpc` on a project whose servers are given, in
// an empty home.
func startRPC(t *testing.T, servers map[string]any, env ...string) *rpcProcess {
	t.Helper()
	dir := t.TempDir()
	for _, s := range servers {
		s.(map[string]any)["connectTimeoutMs"] = testTimeoutMs
		s.(map[string]any)["discoveryTimeoutMs"] = testTimeoutMs
	}
	data, _ := json.Marshal(map[string]any{"version": 1, "servers": servers})
	if err := os.MkdirAll(filepath.Join(dir, ".volt"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".volt", "mcp.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := cliCommand("rpc", "--home", filepath.Join(dir, "home"), "--project", dir, "--approve")
	cmd.Env = append(cmd.Env, env...)
	p := runRPC(t, cmd)
	p.home = filepath.Join(dir, "home")
	return p
}

// runRPC starts cmd, a voltmcp rpc, with pipes to talk to it.
func runRPC(t *testing.T, cmd *exec.Cmd) *rpcProcess {
	t.Helper()
	p := &rpcProcess{t: t, cmd: cmd, stderr: &strings.Builder{}}
	cmd.Stderr = p.stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.in, p.out = in, bufio.NewReaderSize(out, 1<<20)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.in.Close()
		_ = cmd.Wait()
	})
	return p
}

func (p *rpcProcess) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		p.t.Fatalf("write: %v (stderr: %s)", err, p.stderr)
	}
}

// read returns the next message that is not an event, and its raw line.
func (p *rpcProcess) read() (map[string]any, string) {
	p.t.Helper()
	for {
		line, err := p.out.ReadString('\n')
		if err != nil {
			p.t.Fatalf("read: %v (stderr: %s)", err, p.stderr)
		}
		p.seen.WriteString(line)
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			p.t.Fatalf("answer %q is not JSON: %v", line, err)
		}
		if m["jsonrpc"] != "2.0" {
			p.t.Fatalf("answer %q: jsonrpc is not 2.0", line)
		}
		if m["method"] == "mcp_event" {
			if path := os.Getenv("VOLTMCP_RPC_TRANSCRIPT"); path != "" {
				if f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
					fmt.Fprintf(f, "! %s", line)
					f.Close()
				}
			}
			continue
		}
		return m, line
	}
}

// call sends method with params and returns the answer.
func (p *rpcProcess) call(method string, params any) map[string]any {
	p.t.Helper()
	p.next++
	req := map[string]any{"jsonrpc": "2.0", "id": p.next, "method": method}
	if params != nil {
		req["params"] = params
	}
	data, _ := json.Marshal(req)
	p.send(string(data))
	m, line := p.read()
	// VOLTMCP_RPC_TRANSCRIPT names a file that gets each request and its
	// answer: docs/rpc.md's examples are taken from it.
	if path := os.Getenv("VOLTMCP_RPC_TRANSCRIPT"); path != "" {
		if f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
			fmt.Fprintf(f, "> %s\n< %s", data, line)
			f.Close()
		}
	}
	if m["id"] != float64(p.next) {
		p.t.Fatalf("%s: answer %s has another id", method, line)
	}
	return m
}

// result is call's result, failing on an error answer.
func (p *rpcProcess) result(method string, params any) map[string]any {
	p.t.Helper()
	m := p.call(method, params)
	if m["error"] != nil {
		p.t.Fatalf("%s: %v", method, m["error"])
	}
	r, ok := m["result"].(map[string]any)
	if !ok {
		p.t.Fatalf("%s: result %v is not an object", method, m["result"])
	}
	return r
}

// rpcCanary is the value of a secret a server is configured with: no
// answer may hold it.
const rpcCanary = "rpc_secret_canary_4f1e9a0b7c"

func TestRPCEveryMethod(t *testing.T) {
	command, args, env := mcptest.Command(mcptest.ModeBehave)
	env["API_TOKEN"] = "${env:VOLTMCP_RPC_CANARY}"
	p := startRPC(t, map[string]any{
		"demo": map[string]any{"command": command, "args": args, "env": env},
		"off":  map[string]any{"command": command, "args": args, "env": env, "enabled": false, "lifecycle": "keep-alive"},
		// Never connected: its spellings are what it shows.
		"remote": map[string]any{"url": "http://127.0.0.1:1/mcp", "transport": "streamable-http", "enabled": false,
			"headers": map[string]any{"Authorization": "Bearer ${env:VOLTMCP_RPC_CANARY}"}},
	}, "VOLTMCP_RPC_CANARY="+rpcCanary)

	caps := p.result("get_mcp_capabilities", nil)
	var methods []string
	for _, m := range caps["methods"].([]any) {
		methods = append(methods, m.(string))
	}
	for _, want := range []string{"get_mcp_capabilities", "list_mcp_servers", "get_mcp_server", "set_mcp_server_enabled",
		"connect_mcp_server", "disconnect_mcp_server", "refresh_mcp_server", "list_mcp_tools", "get_mcp_tool",
		"list_mcp_resources", "read_mcp_resource", "list_mcp_prompts", "get_mcp_prompt", "list_mcp_recent_calls",
		"start_mcp_server_auth", "poll_mcp_server_auth", "cancel_mcp_server_auth", "complete_mcp_server_auth",
		"logout_mcp_server", "subscribe_mcp_events", "unsubscribe_mcp_events"} {
		if !slices.Contains(methods, want) {
			t.Errorf("get_mcp_capabilities does not list the spec's %s", want)
		}
	}
	if !slices.Contains(toStrings(caps["features"]), "mcp_management.v1") {
		t.Errorf("features %v lack mcp_management.v1", caps["features"])
	}

	p.result("subscribe_mcp_events", nil)
	list := p.result("list_mcp_servers", nil)
	servers := list["servers"].([]any)
	if len(servers) != 3 {
		t.Fatalf("list_mcp_servers: %v", list)
	}
	spelled := map[string]string{}
	for i, s := range servers {
		checkSummary(t, fmt.Sprintf("list_mcp_servers[%d]", i), s.(map[string]any))
		m := s.(map[string]any)
		spelled[fmt.Sprint(m["id"])] = fmt.Sprintf("%v %v %v", m["transport"], m["lifecycle"], m["status"])
	}
	if want := map[string]string{"demo": "stdio lazy cold", "off": "stdio keep_alive disabled", "remote": "streamable_http lazy disabled"}; !maps.Equal(spelled, want) {
		t.Errorf("transport, lifecycle and status: %v, want %v", spelled, want)
	}
	sum := p.result("connect_mcp_server", map[string]any{"id": "demo"})
	checkSummary(t, "connect_mcp_server", sum)
	if sum["status"] != "ready" || sum["activeInSession"] != true || sum["sourceScope"] != "project" || sum["lifecycle"] != "lazy" {
		t.Errorf("after connect: %v", sum)
	}
	sum = p.result("refresh_mcp_server", map[string]any{"id": "demo"})
	checkSummary(t, "refresh_mcp_server", sum)
	if sum["toolCounts"].(map[string]any)["cached"].(float64) < 5 {
		t.Errorf("after refresh: %v", sum["toolCounts"])
	}
	tools := p.result("list_mcp_tools", map[string]any{"id": "demo"})
	if !strings.Contains(fmt.Sprint(tools["tools"]), "echo") {
		t.Errorf("list_mcp_tools: %v", tools)
	}
	tool := p.result("get_mcp_tool", map[string]any{"id": "demo", "name": "add"})
	if !slices.Contains([]string{"read", "write", "destructive", "unknown"}, fmt.Sprint(tool["risk"])) || tool["inputSchema"] == nil {
		t.Errorf("get_mcp_tool: %v", tool)
	}
	res := p.result("call_mcp_tool", map[string]any{"id": "demo", "tool": "add", "arguments": map[string]any{"a": 2, "b": 3}})
	if res["status"] != "completed" || !strings.Contains(fmt.Sprint(res["content"]), "5") {
		t.Errorf("call_mcp_tool: %v", res)
	}
	rs := p.result("list_mcp_resources", map[string]any{"id": "demo"})
	if !strings.Contains(fmt.Sprint(rs), "mcptest://readme") || !strings.Contains(fmt.Sprint(rs), "mcptest://items/{id}") {
		t.Errorf("list_mcp_resources: %v", rs)
	}
	rd := p.result("read_mcp_resource", map[string]any{"id": "demo", "uri": "mcptest://readme"})
	if rd["content"] == "" {
		t.Errorf("read_mcp_resource: %v", rd)
	}
	ps := p.result("list_mcp_prompts", map[string]any{"id": "demo"})
	if !strings.Contains(fmt.Sprint(ps["prompts"]), "greet") {
		t.Errorf("list_mcp_prompts: %v", ps)
	}
	// Prompts are user-preview by default: the RPC's host is served as a
	// model's surface, which may not fetch them, and the answer says so.
	gp := p.call("get_mcp_prompt", map[string]any{"id": "demo", "name": "greet", "arguments": map[string]any{"name": "Ada"}})
	if e, _ := gp["error"].(map[string]any); e == nil || !strings.Contains(fmt.Sprint(e["message"]), "user-preview") {
		t.Errorf("get_mcp_prompt: %v", gp)
	}
	pins := p.result("list_mcp_pins", map[string]any{"id": "demo"})
	if !strings.Contains(fmt.Sprint(pins["pins"]), "echo") {
		t.Errorf("list_mcp_pins: %v", pins)
	}
	checkSummary(t, "approve_mcp_server", p.result("approve_mcp_server", map[string]any{"id": "demo"}))
	if lg := p.result("read_mcp_server_log", map[string]any{"id": "demo"}); lg["id"] != "demo" || lg["records"] == nil {
		t.Errorf("read_mcp_server_log: %v", lg)
	}
	rc := p.call("list_mcp_recent_calls", map[string]any{"id": "demo"})
	checkRecentCalls(t, rc)
	sum = p.result("get_mcp_server", map[string]any{"id": "demo"})
	checkSummary(t, "get_mcp_server", sum)
	if calls, _ := sum["recentCalls"].([]any); len(calls) != 1 {
		t.Errorf("get_mcp_server's recentCalls after one call: %v", sum["recentCalls"])
	}
	sum = p.result("disconnect_mcp_server", map[string]any{"id": "demo"})
	if sum["status"] != "disconnected" || sum["activeInSession"] != false {
		t.Errorf("after disconnect: %v", sum)
	}
	sum = p.result("set_mcp_server_enabled", map[string]any{"id": "off", "enabled": true})
	if sum["enabled"] != true {
		t.Errorf("after enabling: %v", sum)
	}
	sum = p.result("set_mcp_server_enabled", map[string]any{"id": "off", "enabled": false})
	if sum["enabled"] != false || sum["status"] != "disabled" {
		t.Errorf("after disabling: %v", sum)
	}
	// demo uses no OAuth: the auth methods say so, by server.
	for _, m := range []string{"start_mcp_server_auth", "poll_mcp_server_auth", "cancel_mcp_server_auth", "logout_mcp_server"} {
		a := p.call(m, map[string]any{"id": "demo"})
		if e, _ := a["error"].(map[string]any); e == nil || !strings.Contains(fmt.Sprint(e["message"]), "demo") {
			t.Errorf("%s of a server without OAuth: %v", m, a)
		}
	}
	a := p.call("complete_mcp_server_auth", map[string]any{"id": "demo", "callbackUrl": "http://127.0.0.1:1/callback?code=x"})
	if a["error"] == nil {
		t.Errorf("complete_mcp_server_auth of a server without OAuth: %v", a)
	}
	p.result("unsubscribe_mcp_events", nil)

	// The one call through the RPC left one call record.
	p.end()
	if calls := auditCalls(t, p.home); len(calls) != 1 || calls[0]["tool"] != "add" || calls[0]["status"] != "completed" {
		t.Errorf("audit call records: %v, want one of add, completed", calls)
	}
	for _, where := range []struct{ name, text string }{{"an answer or event", p.seen.String()}, {"stderr", p.stderr.String()}} {
		if i := strings.Index(where.text, rpcCanary); i >= 0 {
			t.Errorf("%s holds the secret canary: ...%s...", where.name, where.text[max(0, i-300):min(len(where.text), i+100)])
		}
	}
}

// checkRecentCalls checks list_mcp_recent_calls' answer: the calls made,
// newest first, in the spec's DTO.
func checkRecentCalls(t *testing.T, m map[string]any) {
	t.Helper()
	if e, _ := m["error"].(map[string]any); e != nil {
		t.Fatalf("list_mcp_recent_calls: %v", e)
	}
	calls, _ := m["result"].(map[string]any)["calls"].([]any)
	if len(calls) != 1 || calls[0].(map[string]any)["tool"] != "add" || calls[0].(map[string]any)["status"] != "completed" {
		t.Errorf("list_mcp_recent_calls after one call of add: %v", m)
	}
	for i, c := range calls {
		checkSpec(t, fmt.Sprintf("recentCalls[%d]", i), c.(map[string]any), specRecentCall)
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

func TestRPCBadInput(t *testing.T) {
	command, args, env := mcptest.Command(mcptest.ModeBehave)
	p := startRPC(t, map[string]any{"demo": map[string]any{"command": command, "args": args, "env": env}})
	for _, tc := range []struct {
		name, line string
		code       float64
		want       string
	}{
		{"unknown field", `{"jsonrpc":"2.0","id":1,"method":"get_mcp_server","params":{"id":"demo","extra":1}}`, -32602, `unknown field "params.extra"`},
		{"duplicate key", `{"jsonrpc":"2.0","id":1,"method":"get_mcp_server","params":{"id":"demo","id":"demo"}}`, -32602, `duplicate key "params.id"`},
		{"wrong case", `{"jsonrpc":"2.0","id":1,"method":"set_mcp_server_enabled","params":{"id":"demo","Enabled":true}}`, -32602, `key "params.Enabled" is in the wrong case`},
		{"wrong type", `{"jsonrpc":"2.0","id":1,"method":"get_mcp_server","params":{"id":7}}`, -32602, `field "params.id": want a string, got a number`},
		{"trailing data", `{"jsonrpc":"2.0","id":1,"method":"list_mcp_servers"}]`, -32602, "trailing data"},
		{"unknown method", `{"jsonrpc":"2.0","id":1,"method":"drop_tables"}`, -32601, `unknown method "drop_tables"`},
		{"malformed JSON", `{"jsonrpc":"2.0","id":1,"method":"list_mcp_servers"`, -32700, "invalid JSON"},
		{"not JSON-RPC 2.0", `{"jsonrpc":"1.0","id":1,"method":"list_mcp_servers"}`, -32600, `"jsonrpc" must be "2.0"`},
		{"bad id type", `{"jsonrpc":"2.0","id":[1],"method":"list_mcp_servers"}`, -32600, "id must be"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p.send(tc.line)
			m, line := p.read()
			e, _ := m["error"].(map[string]any)
			if e == nil || e["code"] != tc.code || !strings.Contains(fmt.Sprint(e["message"]), tc.want) {
				t.Errorf("answer %s, want code %v with %q", line, tc.code, tc.want)
			}
		})
	}
	t.Run("100 MiB line", func(t *testing.T) {
		// Written while the answers are read: the line is discarded as
		// it comes, never held whole, and the next request is answered.
		go func() {
			chunk := strings.Repeat("x", 1<<20)
			_, _ = io.WriteString(p.in, `{"jsonrpc":"2.0","id":1,"method":"get_mcp_server","params":{"id":"`)
			for i := 0; i < 100; i++ {
				if _, err := io.WriteString(p.in, chunk); err != nil {
					return
				}
			}
			_, _ = io.WriteString(p.in, "\"}}\n"+`{"jsonrpc":"2.0","id":"after","method":"get_mcp_server","params":{"id":"demo"}}`+"\n")
		}()
		m, line := p.read()
		if e, _ := m["error"].(map[string]any); e == nil || e["code"] != float64(-32600) || !strings.Contains(fmt.Sprint(e["message"]), "limit of 4194304 bytes") {
			t.Fatalf("answer to the 100 MiB line: %s", line)
		}
		m, line = p.read()
		if m["id"] != "after" || m["result"].(map[string]any)["id"] != "demo" {
			t.Fatalf("answer after the long line: %s", line)
		}
	})
}

func TestRPCClientDisconnectsMidCall(t *testing.T) {
	command, args, env := mcptest.Command(mcptest.ModeBehave)
	p := startRPC(t, map[string]any{"demo": map[string]any{"command": command, "args": args, "env": env}})
	p.result("connect_mcp_server", map[string]any{"id": "demo"})
	p.send(`{"jsonrpc":"2.0","id":"slow","method":"call_mcp_tool","params":{"id":"demo","tool":"slow","arguments":{"ms":600000}}}`)
	// The slow call is in flight while another request is answered.
	p.send(`{"jsonrpc":"2.0","id":"quick","method":"get_mcp_server","params":{"id":"demo"}}`)
	if m, line := p.read(); m["id"] != "quick" {
		t.Fatalf("first answer %s, want the quick one", line)
	}
	// The client goes away: the call is cancelled and the process ends
	// cleanly, without waiting for the ten minutes.
	p.end()
	// The call was cancelled, and audited once as such.
	if calls := auditCalls(t, p.home); len(calls) != 1 || calls[0]["tool"] != "slow" || calls[0]["status"] == "completed" {
		t.Errorf("audit call records: %v, want one of slow, not completed", calls)
	}
}

func TestRPCAuthFlows(t *testing.T) {
	const secret = "client_secret_canary_rpc_0123456789"
	dev := oauthtest.New(t, &oauthtest.Options{Device: true, DeviceInterval: 1})
	web := oauthtest.New(t, &oauthtest.Options{ClientID: "voltmcp-test", ClientSecret: secret, NoRegistration: true})
	home, _ := oauthServers(t, nil, map[string]*oauthtest.Server{"dev": dev, "web": web}, map[string]map[string]any{
		"dev": {"flow": "device"},
		"web": {"flow": "browser", "clientId": "voltmcp-test", "clientSecret": "${env:CLIENT_SECRET}", "issuer": web.Issuer},
	})
	cmd := cliCommand("rpc", "--home", home, "--project", t.TempDir())
	cmd.Env = append(cmd.Env, "HOME="+home, "CLIENT_SECRET="+secret)
	p := runRPC(t, cmd)
	p.result("subscribe_mcp_events", nil)
	authState := func(id string) string {
		return fmt.Sprint(p.result("get_mcp_server", map[string]any{"id": id})["authState"])
	}
	if got := authState("dev"); got != "required" {
		t.Errorf("dev before login: authState %s, want required", got)
	}
	// A connection that needs a login no client started asks no one:
	// the server is needs_auth, and the error says how to log in.
	for _, id := range []string{"dev", "web"} {
		c := p.call("connect_mcp_server", map[string]any{"id": id})
		if e, _ := c["error"].(map[string]any); e == nil || !strings.Contains(fmt.Sprint(e["message"]), "start_mcp_server_auth") {
			t.Errorf("connect_mcp_server %s before login: %v", id, c)
		}
		if sum := p.result("get_mcp_server", map[string]any{"id": id}); sum["status"] != "needs_auth" || sum["authState"] != "required" {
			t.Errorf("%s after a connection without a login: status %v, authState %v", id, sum["status"], sum["authState"])
		}
	}

	// The device flow: the page and the code to show, then the engine
	// polls until the user approves.
	f := p.result("start_mcp_server_auth", map[string]any{"id": "dev"})
	code, _ := f["userCode"].(string)
	if f["state"] != "pending" || f["flow"] != "device" || code == "" || !strings.HasPrefix(fmt.Sprint(f["verificationUri"]), "https://") {
		t.Fatalf("start_mcp_server_auth (device): %v", f)
	}
	if got := authState("dev"); got != "pending" {
		t.Errorf("dev while the user is asked: authState %s, want pending", got)
	}
	if err := dev.ApproveDevice(code); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "the device flow to end", func() bool {
		return p.result("poll_mcp_server_auth", map[string]any{"id": "dev"})["state"] != "pending"
	})
	if f := p.result("poll_mcp_server_auth", map[string]any{"id": "dev"}); f["state"] != "authenticated" {
		t.Fatalf("poll_mcp_server_auth after approval: %v", f)
	}
	if got := authState("dev"); got != "authenticated" {
		t.Errorf("dev after login: authState %s", got)
	}

	// The browser flow: the host opens the URL and hands back the
	// redirect it reached.
	f = p.result("start_mcp_server_auth", map[string]any{"id": "web"})
	authURL, _ := f["authorizationUrl"].(string)
	if f["state"] != "pending" || f["flow"] != "browser" || authURL == "" {
		t.Fatalf("start_mcp_server_auth (browser): %v", f)
	}
	f = p.result("complete_mcp_server_auth", map[string]any{"id": "web", "callbackUrl": approve(t, authURL)})
	if f["state"] != "authenticated" {
		t.Fatalf("complete_mcp_server_auth: %v", f)
	}
	if got := authState("web"); got != "authenticated" {
		t.Errorf("web after login: authState %s", got)
	}

	// Logged out, a new flow can be cancelled.
	if lo := p.result("logout_mcp_server", map[string]any{"id": "web"}); lo["removed"] != true {
		t.Errorf("logout_mcp_server: %v", lo)
	}
	p.result("disconnect_mcp_server", map[string]any{"id": "web"})
	if f := p.result("start_mcp_server_auth", map[string]any{"id": "web"}); f["state"] != "pending" {
		t.Fatalf("start_mcp_server_auth after logout: %v", f)
	}
	if f := p.result("cancel_mcp_server_auth", map[string]any{"id": "web"}); f["state"] != "cancelled" {
		t.Errorf("cancel_mcp_server_auth: %v", f)
	}
	if got := authState("web"); got != "required" {
		t.Errorf("web after a cancelled login: authState %s, want required", got)
	}
	for _, where := range []struct{ name, text string }{{"an answer or event", p.seen.String()}, {"stderr", p.stderr.String()}} {
		if strings.Contains(where.text, secret) {
			t.Errorf("%s holds the client secret", where.name)
		}
	}
}
