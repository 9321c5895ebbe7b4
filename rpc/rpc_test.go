package rpc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/engine"
	"github.com/voltmcp/voltmcp/internal/mcptest"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

func TestMain(m *testing.M) {
	mcptest.RunIfChild()
	os.Exit(m.Run())
}

// newEngine starts an engine over a project whose one server, "demo", is
// mcptest's well-behaved server.
func newEngine(t *testing.T) *engine.Engine {
	t.Helper()
	command, args, env := mcptest.Command(mcptest.ModeBehave)
	return newEngineWith(t, map[string]any{"demo": map[string]any{"command": command, "args": args, "env": env}})
}

// newEngineWith starts an engine over a project with these servers.
func newEngineWith(t *testing.T, servers map[string]any) *engine.Engine {
	t.Helper()
	root := t.TempDir()
	doc := map[string]any{"version": 1, "servers": servers}
	data, _ := json.Marshal(doc)
	if err := os.MkdirAll(filepath.Join(root, ".volt"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".volt", "mcp.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "home")
	eng, err := engine.New(context.Background(), &engine.Options{Home: home, Project: root, Approve: true,
		StopGrace: 300 * time.Millisecond, PluginCacheDir: filepath.Join(os.TempDir(), "voltmcp-rpc-test-wasm"),
		LookupEnv: func(k string) (string, bool) {
			if k == "HOME" {
				return home, true
			}
			return os.LookupEnv(k)
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return eng
}

// client is a test client over one connection: it writes lines and
// reads the answers as maps.
type client struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
	done chan error
}

func dial(t *testing.T, srv *Server) *client {
	t.Helper()
	a, b := net.Pipe()
	c := &client{t: t, conn: a, r: bufio.NewReaderSize(a, 1<<20), done: make(chan error, 1)}
	go func() { c.done <- srv.Serve(context.Background(), b) }()
	t.Cleanup(func() { a.Close(); <-c.done })
	return c
}

func (c *client) send(line string) {
	c.t.Helper()
	if _, err := c.conn.Write([]byte(line + "\n")); err != nil {
		c.t.Fatal(err)
	}
}

// read reads the next message that is not an event.
func (c *client) read() map[string]any {
	c.t.Helper()
	for {
		line, err := c.r.ReadBytes('\n')
		if err != nil {
			c.t.Fatalf("read: %v", err)
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			c.t.Fatalf("answer %q: %v", line, err)
		}
		if m["method"] == "mcp_event" {
			continue
		}
		return m
	}
}

// callRaw sends a request and returns the whole answer.
func (c *client) callRaw(method string, params any) map[string]any {
	c.t.Helper()
	p, _ := json.Marshal(params)
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":%q,"params":%s}`, method, p))
	return c.read()
}

// call sends a request and returns its result, failing on an error.
func (c *client) call(method string, params any) map[string]any {
	c.t.Helper()
	m := c.callRaw(method, params)
	if m["error"] != nil {
		c.t.Fatalf("%s: %v", method, m["error"])
	}
	res, _ := m["result"].(map[string]any)
	return res
}

func TestBadRequests(t *testing.T) {
	srv := NewServer(newEngine(t), nil)
	c := dial(t, srv)
	for _, tc := range []struct {
		name, line string
		code       float64
		want       string
	}{
		{"unknown field", `{"jsonrpc":"2.0","id":1,"method":"get_mcp_server","params":{"id":"demo","verbose":true}}`, CodeInvalidParams, `unknown field "params.verbose"`},
		{"duplicate key", `{"jsonrpc":"2.0","id":1,"method":"set_mcp_server_enabled","params":{"id":"demo","enabled":true,"enabled":false}}`, CodeInvalidParams, `duplicate key "params.enabled"`},
		{"wrong case", `{"jsonrpc":"2.0","id":1,"method":"get_mcp_server","params":{"ID":"demo"}}`, CodeInvalidParams, `key "params.ID" is in the wrong case`},
		{"wrong type", `{"jsonrpc":"2.0","id":1,"method":"set_mcp_server_enabled","params":{"id":"demo","enabled":"no"}}`, CodeInvalidParams, `field "params.enabled": want a boolean, got a string`},
		{"wrong type nested", `{"jsonrpc":"2.0","id":1,"method":"approve_mcp_server","params":{"id":"demo","tools":[1]}}`, CodeInvalidParams, `field "params.tools[0]": want a string`},
		{"duplicate in arguments", `{"jsonrpc":"2.0","id":1,"method":"call_mcp_tool","params":{"id":"demo","tool":"echo","arguments":{"text":"a","text":"b"}}}`, CodeInvalidParams, `duplicate key "params.arguments.text"`},
		{"missing field", `{"jsonrpc":"2.0","id":1,"method":"get_mcp_server","params":{}}`, CodeInvalidParams, `missing field "params.id"`},
		{"positional params", `{"jsonrpc":"2.0","id":1,"method":"get_mcp_server","params":["demo"]}`, CodeInvalidParams, "params must be an object"},
		{"trailing data", `{"jsonrpc":"2.0","id":1,"method":"list_mcp_servers"} {"x":1}`, CodeInvalidParams, "trailing data after the request object"},
		{"unknown method", `{"jsonrpc":"2.0","id":1,"method":"list_mcp_server"}`, CodeMethodNotFound, `unknown method "list_mcp_server"`},
		{"invalid JSON", `{"jsonrpc":"2.0","id":1,"method":`, CodeParseError, "invalid JSON"},
		{"not JSON", `hello`, CodeParseError, "invalid JSON"},
		{"no version", `{"id":1,"method":"list_mcp_servers"}`, CodeInvalidRequest, `"jsonrpc" must be "2.0"`},
		{"version 1", `{"jsonrpc":"1.0","id":1,"method":"list_mcp_servers"}`, CodeInvalidRequest, `"jsonrpc" must be "2.0"`},
		{"bad id type", `{"jsonrpc":"2.0","id":{"a":1},"method":"list_mcp_servers"}`, CodeInvalidRequest, "id must be a string, a number or null"},
		{"envelope wrong case", `{"jsonrpc":"2.0","id":1,"Method":"list_mcp_servers"}`, CodeInvalidRequest, `key "Method" is in the wrong case`},
		{"envelope duplicate", `{"jsonrpc":"2.0","id":1,"method":"list_mcp_servers","method":"get_mcp_server"}`, CodeInvalidRequest, `duplicate key "method"`},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"list_mcp_servers"}]`, CodeInvalidRequest, "batch requests are not supported"},
		{"unknown server", `{"jsonrpc":"2.0","id":1,"method":"get_mcp_server","params":{"id":"nosuch"}}`, CodeUnknownServer, "nosuch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.send(tc.line)
			m := c.read()
			e, _ := m["error"].(map[string]any)
			if e == nil || e["code"] != tc.code || !strings.Contains(e["message"].(string), tc.want) {
				t.Errorf("answer %v, want code %v with %q", m, tc.code, tc.want)
			}
		})
	}
	// A notification (no id) runs without an answer: the next answer is
	// the next request's.
	c.send(`{"jsonrpc":"2.0","method":"get_mcp_server","params":{"id":"demo"}}`)
	c.send(`{"jsonrpc":"2.0","id":"next","method":"get_mcp_server","params":{"id":"demo"}}`)
	if m := c.read(); m["id"] != "next" {
		t.Errorf("answer after a notification: %v", m)
	}
	// The connection still works.
	if res := c.call("list_mcp_servers", nil); len(res["servers"].([]any)) != 1 {
		t.Errorf("list_mcp_servers after the bad requests: %v", res)
	}
}

func TestLongLineIsDiscarded(t *testing.T) {
	srv := NewServer(newEngine(t), &Options{MaxLineBytes: 1 << 20})
	c := dial(t, srv)
	go func() {
		// 3 MiB in one line, written while the answers are read.
		_, _ = c.conn.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"get_mcp_server","params":{"id":"` + strings.Repeat("x", 3<<20) + "\"}}\n" +
			`{"jsonrpc":"2.0","id":2,"method":"get_mcp_server","params":{"id":"demo"}}` + "\n"))
	}()
	m := c.read()
	e, _ := m["error"].(map[string]any)
	if e == nil || e["code"] != float64(CodeInvalidRequest) || !strings.Contains(e["message"].(string), "over the limit of 1048576 bytes") || m["id"] != nil {
		t.Fatalf("answer to the long line: %v", m)
	}
	if m := c.read(); m["id"] != float64(2) || m["result"].(map[string]any)["id"] != "demo" {
		t.Fatalf("answer after the long line: %v", m)
	}
}

func TestMethodsOverRealServer(t *testing.T) {
	ctx := testwait.Context(t)
	_ = ctx
	srv := NewServer(newEngine(t), nil)
	c := dial(t, srv)
	caps := c.call("get_mcp_capabilities", nil)
	if fs := fmt.Sprint(caps["features"]); !strings.Contains(fs, "mcp_management.v1") {
		t.Errorf("features %s", fs)
	}
	sum := c.call("connect_mcp_server", map[string]any{"id": "demo"})
	if sum["status"] != "ready" || sum["activeInSession"] != true || sum["transport"] != "stdio" {
		t.Errorf("after connect: %v", sum)
	}
	tools := c.call("list_mcp_tools", map[string]any{"id": "demo"})
	if !strings.Contains(fmt.Sprint(tools["tools"]), "echo") {
		t.Errorf("tools: %v", tools)
	}
	tool := c.call("get_mcp_tool", map[string]any{"id": "demo", "name": "echo"})
	if r := tool["risk"]; r != "read" && r != "unknown" || tool["inputSchema"] == nil {
		t.Errorf("get_mcp_tool: %v", tool)
	}
	res := c.call("call_mcp_tool", map[string]any{"id": "demo", "tool": "echo", "arguments": map[string]any{"text": "hi there"}})
	if res["status"] != "completed" || !strings.Contains(res["content"].(string), "hi there") {
		t.Errorf("call: %v", res)
	}
	rs := c.call("list_mcp_resources", map[string]any{"id": "demo"})
	if !strings.Contains(fmt.Sprint(rs["resources"]), "mcptest://readme") {
		t.Errorf("resources: %v", rs)
	}
	rd := c.call("read_mcp_resource", map[string]any{"id": "demo", "uri": "mcptest://readme"})
	if rd["content"] == "" {
		t.Errorf("read: %v", rd)
	}
	ps := c.call("list_mcp_prompts", map[string]any{"id": "demo"})
	if !strings.Contains(fmt.Sprint(ps["prompts"]), "greet") {
		t.Errorf("prompts: %v", ps)
	}
	// Prompts are user-preview by default: a model surface may not
	// fetch them, and the RPC's host is served as one.
	c.send(`{"jsonrpc":"2.0","id":9,"method":"get_mcp_prompt","params":{"id":"demo","name":"greet","arguments":{"name":"Ada"}}}`)
	if m := c.read(); m["error"] == nil && !strings.Contains(fmt.Sprint(m["result"]), "Ada") {
		t.Errorf("get_mcp_prompt: %v", m)
	}
	sum = c.call("disconnect_mcp_server", map[string]any{"id": "demo"})
	if sum["status"] != "disconnected" || sum["activeInSession"] != false {
		t.Errorf("after disconnect: %v", sum)
	}
	pins := c.call("list_mcp_pins", map[string]any{"id": "demo"})
	if !strings.Contains(fmt.Sprint(pins["pins"]), "echo") {
		t.Errorf("pins: %v", pins)
	}
}

func TestSlowCallDoesNotHoldOthers(t *testing.T) {
	srv := NewServer(newEngine(t), nil)
	c := dial(t, srv)
	c.call("connect_mcp_server", map[string]any{"id": "demo"})
	c.send(`{"jsonrpc":"2.0","id":"slow","method":"call_mcp_tool","params":{"id":"demo","tool":"slow","arguments":{"ms":600000}}}`)
	c.send(`{"jsonrpc":"2.0","id":"quick","method":"get_mcp_server","params":{"id":"demo"}}`)
	if m := c.read(); m["id"] != "quick" {
		t.Fatalf("first answer %v, want the quick one", m)
	}
}

func TestClientThatNeverReadsIsDropped(t *testing.T) {
	eng := newEngine(t)
	srv := NewServer(eng, &Options{WriteTimeout: 100 * time.Millisecond, MaxInFlight: 2})
	a, b := net.Pipe()
	defer a.Close()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background(), b) }()
	// Requests written, answers never read: net.Pipe has no buffer.
	go func() {
		for i := 0; i < 10; i++ {
			if _, err := a.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"list_mcp_servers"}` + "\n")); err != nil {
				return
			}
		}
	}()
	if err := <-done; !errors.Is(err, ErrWriteTimeout) {
		t.Fatalf("Serve: %v, want ErrWriteTimeout", err)
	}
	// Another client of the same server is answered.
	c := dial(t, srv)
	if res := c.call("list_mcp_servers", nil); len(res["servers"].([]any)) != 1 {
		t.Errorf("other client: %v", res)
	}
}

func TestEventsAreNotifications(t *testing.T) {
	srv := NewServer(newEngine(t), nil)
	c := dial(t, srv)
	c.call("subscribe_mcp_events", nil)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"connect_mcp_server","params":{"id":"demo"}}`)
	// The answer and the events come in either order.
	answered := false
	for {
		line, err := c.r.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatal(err)
		}
		if m["method"] != "mcp_event" {
			answered = answered || m["id"] == float64(1)
			continue
		}
		p := m["params"].(map[string]any)
		if p["schema"] != "mcp_events.v1" || p["type"] == nil {
			t.Fatalf("event %v", p)
		}
		if _, err := time.Parse(time.RFC3339Nano, p["at"].(string)); err != nil {
			t.Fatalf("event at: %v", err)
		}
		if _, ok := p["seq"].(float64); !ok {
			t.Fatalf("event without seq: %v", p)
		}
		if p["type"] == "mcp_server_status_changed" && p["status"] == "ready" {
			break
		}
	}
	for !answered {
		answered = c.read()["id"] == float64(1)
	}
	if res := c.call("unsubscribe_mcp_events", nil); res["unsubscribed"] != true {
		t.Errorf("unsubscribe: %v", res)
	}
	// Back with sinceSeq 1: the events after the first are replayed,
	// from seq 2. Far ahead of the engine: one gap.
	c.call("subscribe_mcp_events", map[string]any{"sinceSeq": 1})
	if ev := c.event(); ev["seq"] != float64(2) {
		t.Errorf("first replayed event %v, want seq 2", ev)
	}
	c.call("subscribe_mcp_events", map[string]any{"sinceSeq": 1 << 40})
	if ev := c.event(); ev["type"] != "gap" || ev["missed"] == nil {
		t.Errorf("event after a sinceSeq ahead of the engine: %v, want a gap", ev)
	}
}

// event reads up to the next event and returns its params.
func (c *client) event() map[string]any {
	c.t.Helper()
	for {
		line, err := c.r.ReadBytes('\n')
		if err != nil {
			c.t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			c.t.Fatal(err)
		}
		if m["method"] == "mcp_event" {
			return m["params"].(map[string]any)
		}
	}
}

func TestSubscriberThatNeverReadsSlowsNoCall(t *testing.T) {
	eng := newEngine(t)
	srv := NewServer(eng, &Options{WriteTimeout: 200 * time.Millisecond, EventBuffer: 1})
	a, b := net.Pipe()
	defer a.Close()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background(), b) }()
	if _, err := a.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"subscribe_mcp_events"}` + "\n")); err != nil {
		t.Fatal(err)
	}
	// The subscriber reads nothing, not even its answer. Another client
	// calls, each call publishing events the subscriber never takes.
	c := dial(t, srv)
	for i := 0; i < 20; i++ {
		res := c.call("call_mcp_tool", map[string]any{"id": "demo", "tool": "echo", "arguments": map[string]any{"text": fmt.Sprint(i)}})
		if res["status"] != "completed" {
			t.Fatalf("call %d: %v", i, res)
		}
	}
	if err := <-done; !errors.Is(err, ErrWriteTimeout) {
		t.Fatalf("the subscriber's Serve: %v, want ErrWriteTimeout", err)
	}
}

// FuzzDecode feeds the request decoder lines around every method's
// example: it never panics, and a line it accepts names a method and
// has params that are an object or absent.
func FuzzDecode(f *testing.F) {
	for _, line := range exampleRequests() {
		f.Add([]byte(line))
	}
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":{"b":[1,{"c":2,"c":3}]}}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		req, err := decodeRequest(line)
		if err != nil {
			if err.Code == 0 || err.Message == "" {
				t.Fatalf("error without code or message: %+v", err)
			}
			return
		}
		if req.Method == "" {
			t.Fatal("accepted a request without a method")
		}
		for _, dst := range paramTypes() {
			perr := decodeParams(req.Params, dst)
			if perr != nil {
				if perr.Code == 0 || perr.Message == "" {
					t.Fatalf("params error without code or message: %+v", perr)
				}
				continue
			}
			// Accepted params have each top-level key once, spelled
			// as a field of dst, and encoding/json reads them alike.
			checkAccepted(t, req.Params, dst)
		}
	})
}

// checkAccepted checks params that decodeParams accepted into dst, by
// other means than its own: no top-level key twice, each one a json name
// of dst's fields, exactly.
func checkAccepted(t *testing.T, raw json.RawMessage, dst any) {
	t.Helper()
	if len(raw) == 0 || string(raw) == "null" {
		return
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		t.Fatalf("accepted params %s that encoding/json refuses: %v", raw, err)
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	_, _ = dec.Token()
	keys := 0
	for dec.More() {
		k, _ := dec.Token()
		keys++
		if _, ok := fieldsOf(reflect.TypeOf(dst).Elem()).types[k.(string)]; !ok {
			t.Fatalf("accepted params %s with key %q, no field of %T", raw, k, dst)
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	if keys != len(members) {
		t.Fatalf("accepted params %s with a duplicate key", raw)
	}
}

// paramTypes are a fresh value of every params type.
func paramTypes() []any {
	return []any{&noParams{}, &serverParams{}, &enabledParams{}, &toolParams{}, &pageParams{}, &readResourceParams{},
		&promptParams{}, &callParams{}, &recentParams{}, &completeAuthParams{}, &approveParams{}, &subscribeParams{}, &logParams{}}
}

// exampleRequests is one request of each method, as docs/rpc.md shows.
func exampleRequests() []string {
	return []string{
		`{"jsonrpc":"2.0","id":1,"method":"get_mcp_capabilities"}`,
		`{"jsonrpc":"2.0","id":2,"method":"list_mcp_servers","params":{}}`,
		`{"jsonrpc":"2.0","id":3,"method":"get_mcp_server","params":{"id":"github"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"set_mcp_server_enabled","params":{"id":"github","enabled":false}}`,
		`{"jsonrpc":"2.0","id":5,"method":"connect_mcp_server","params":{"id":"github"}}`,
		`{"jsonrpc":"2.0","id":6,"method":"disconnect_mcp_server","params":{"id":"github"}}`,
		`{"jsonrpc":"2.0","id":7,"method":"refresh_mcp_server","params":{"id":"github"}}`,
		`{"jsonrpc":"2.0","id":8,"method":"list_mcp_tools","params":{"id":"github"}}`,
		`{"jsonrpc":"2.0","id":9,"method":"get_mcp_tool","params":{"id":"github","name":"search_issues"}}`,
		`{"jsonrpc":"2.0","id":10,"method":"list_mcp_resources","params":{"id":"github","cursor":"x"}}`,
		`{"jsonrpc":"2.0","id":11,"method":"read_mcp_resource","params":{"id":"github","uri":"repo://a/b"}}`,
		`{"jsonrpc":"2.0","id":12,"method":"list_mcp_prompts","params":{"id":"github"}}`,
		`{"jsonrpc":"2.0","id":13,"method":"get_mcp_prompt","params":{"id":"github","name":"triage","arguments":{"repo":"a/b"}}}`,
		`{"jsonrpc":"2.0","id":14,"method":"list_mcp_recent_calls","params":{"id":"github"}}`,
		`{"jsonrpc":"2.0","id":15,"method":"start_mcp_server_auth","params":{"id":"linear"}}`,
		`{"jsonrpc":"2.0","id":16,"method":"poll_mcp_server_auth","params":{"id":"linear"}}`,
		`{"jsonrpc":"2.0","id":17,"method":"cancel_mcp_server_auth","params":{"id":"linear"}}`,
		`{"jsonrpc":"2.0","id":18,"method":"complete_mcp_server_auth","params":{"id":"linear","callbackUrl":"http://127.0.0.1:1/callback?code=c&state=s"}}`,
		`{"jsonrpc":"2.0","id":19,"method":"logout_mcp_server","params":{"id":"linear"}}`,
		`{"jsonrpc":"2.0","id":20,"method":"subscribe_mcp_events","params":{"sinceSeq":41}}`,
		`{"jsonrpc":"2.0","id":21,"method":"unsubscribe_mcp_events"}`,
		`{"jsonrpc":"2.0","id":22,"method":"call_mcp_tool","params":{"id":"github","tool":"search_issues","arguments":{"q":"bug"}}}`,
		`{"jsonrpc":"2.0","id":23,"method":"list_mcp_pins","params":{"id":"github"}}`,
		`{"jsonrpc":"2.0","id":24,"method":"approve_mcp_server","params":{"id":"github","tools":["search_issues"]}}`,
		`{"jsonrpc":"2.0","id":25,"method":"read_mcp_server_log","params":{"id":"github","limit":50}}`,
	}
}

// endless is a reader of n bytes of 'x', then tail.
type endless struct {
	n    int
	tail string
}

func (e *endless) Read(p []byte) (int, error) {
	if e.n == 0 {
		if e.tail == "" {
			return 0, io.EOF
		}
		k := copy(p, e.tail)
		e.tail = e.tail[k:]
		return k, nil
	}
	k := min(len(p), e.n)
	for i := range p[:k] {
		p[i] = 'x'
	}
	e.n -= k
	return k, nil
}

// TestReadLineDiscardsWithoutHolding reads a 256 MiB line: it is
// discarded as it comes, the bytes allocated stay within a bound of the
// 4 MiB limit, and the next line is read whole.
func TestReadLineDiscardsWithoutHolding(t *testing.T) {
	const size = 256 << 20
	r := bufio.NewReaderSize(&endless{n: size, tail: "\n{\"a\":1}\n"}, 64<<10)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	line, over, err := readLine(r, DefaultMaxLineBytes)
	runtime.ReadMemStats(&after)
	if line != nil || over != size+1 || err != nil {
		t.Fatalf("readLine of the long line: %d bytes, over %d, %v", len(line), over, err)
	}
	// What is kept of the line grows to the limit, and stops: the bytes
	// allocated are a bound of the limit, not of the line (a 256 MiB line
	// held whole would allocate more than 256 MiB).
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8*DefaultMaxLineBytes {
		t.Errorf("reading a %d-byte line allocated %d bytes, more than eight times the limit", size, alloc)
	}
	if line, _, _ := readLine(r, DefaultMaxLineBytes); string(line) != "{\"a\":1}\n" {
		t.Errorf("the line after: %q", line)
	}
}

// FuzzEnvelopeScan checks that the envelope of a request read in one
// pass (objectMembers) decodes as encoding/json reads it: the same
// request, or the same error.
func FuzzEnvelopeScan(f *testing.F) {
	for _, line := range exampleRequests() {
		f.Add([]byte(line))
	}
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"gateway","params":{"action":"call","arguments":{"t":"a\"}b,"}}}`,
		`{ "jsonrpc" : "2.0" , "id" : "x" , "method" : "m" , "params" : [ 1 , { } ] }`,
		`{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}`,
		`{"jsonrpc":"2.0","ID":1,"method":"m"}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","extra":true}`,
		`{"jsonrpc":"2.0","i\u0064":1,"method":"m"}`,
		`{"jsonrpc":"2.0","id":true,"method":"m"}`,
		`{"jsonrpc":"2.0","id":-1.5e3,"method":"m","params":null}`,
		`{}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":"\\"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if !json.Valid(line) {
			return
		}
		raw := trimSpace(line)
		fast, ferr := decodeEnvelopeScan(raw, true)
		slow, serr := decodeEnvelopeScan(raw, false)
		if !reflect.DeepEqual(fast, slow) || !reflect.DeepEqual(ferr, serr) {
			t.Fatalf("%q: scanned %+v %+v; encoding/json %+v %+v", line, fast, ferr, slow, serr)
		}
	})
}
