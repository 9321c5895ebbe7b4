package engine

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/internal/testwait"
)

func TestGatewayDefinitionIsConstantAndSmall(t *testing.T) {
	t.Parallel()
	tool := gatewayTool()
	schema, _ := json.Marshal(tool.InputSchema)
	var v any
	if err := json.Unmarshal(schema, &v); err != nil {
		t.Fatalf("schema is not JSON: %v", err)
	}
	// About 4 bytes a token for English and JSON: the definition must stay
	// under 400 tokens.
	if n := (len(tool.Name) + len(tool.Description) + len(schema)) / 4; n >= 400 {
		t.Errorf("the mcp tool definition is about %d tokens", n)
	}
	// The definition is built from constants: nothing of a workspace's
	// servers or their state can change it.
	again := gatewayTool()
	b1, _ := json.Marshal(tool)
	b2, _ := json.Marshal(again)
	if string(b1) != string(b2) {
		t.Error("the definition is not stable")
	}
}

func gw(t *testing.T, e *Engine, in GatewayInput) GatewayResult {
	t.Helper()
	return e.Gateway(testwait.Context(t), in)
}

func TestGatewayBadInputs(t *testing.T) {
	t.Parallel()
	e := start(t, workspace(t, map[string]server{"github": stdio("behave", nil)}, nil))
	if err := e.Connect(testwait.Context(t), "github"); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		in   GatewayInput
		want string
	}{
		{GatewayInput{}, "missing action"},
		{GatewayInput{Action: "serch"}, `did you mean "search"`},
		{GatewayInput{Action: "search"}, "missing query"},
		{GatewayInput{Action: "describe", Tool: "echo"}, "missing server"},
		{GatewayInput{Action: "describe", Server: "githb", Tool: "echo"}, `did you mean "github"`},
		{GatewayInput{Action: "describe", Server: "github", Tool: "ecoh"}, "closest: echo"},
		{GatewayInput{Action: "call", Server: "github", Tool: "echo", ArgumentsJSON: "{nope"}, "argumentsJson is not a JSON object"},
		{GatewayInput{Action: "call", Server: "github", Tool: "echo", ArgumentsJSON: "{}", Arguments: map[string]any{}}, "not both"},
		{GatewayInput{Action: "call", Server: "github", Tool: "echo", ArgumentsJSON: `["a"]`}, "argumentsJson is not a JSON object: it is not an object"},
		{GatewayInput{Action: "call", Server: "github", Tool: "echo", ArgumentsJSON: `{} {}`}, "argumentsJson is not a JSON object"},
		{GatewayInput{Action: "read_cache"}, "missing cacheId"},
		{GatewayInput{Action: "read_cache", CacheID: "../../etc/passwd"}, "read_cache"},
		{GatewayInput{Action: "get_prompt", Server: "github", Prompt: "greet"}, "user-preview"},
	} {
		r := gw(t, e, tt.in)
		if !r.IsError || !strings.Contains(r.Text, tt.want) {
			t.Errorf("%+v: %q, want an error with %q", tt.in, r.Text, tt.want)
		}
	}
	var in GatewayInput
	if err := decodeGatewayInput(json.RawMessage(`{"action":"search","qeury":"x"}`), &in); err == nil || !strings.Contains(err.Error(), `"query"`) {
		t.Errorf("unknown field: %v", err)
	}
}

// TestDecodeGatewayArguments checks that arguments decoded from the
// agent's input stay the JSON they came as, that anything but an object
// is refused whatever the action, and that both ways of giving them
// reach the same map.
func TestDecodeGatewayArguments(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		input, raw, err string
	}{
		{`{"action":"call","arguments":{"b":[1,2],"a":"<x>"}}`, `{"b":[1,2],"a":"<x>"}`, ""},
		{`{"action":"call","arguments": {"n":12345678901234567890} }`, `{"n":12345678901234567890}`, ""},
		{`{"action":"call","arguments":null}`, "", ""},
		{`{"action":"call"}`, "", ""},
		{`{"action":"status","arguments":"x"}`, "", "arguments must be a JSON object"},
		{`{"action":"call","arguments":[1]}`, "", "arguments must be a JSON object"},
		{`{"action":"call","arguments":{"a":}}`, "", "invalid input"},
	} {
		var in GatewayInput
		err := decodeGatewayInput(json.RawMessage(tt.input), &in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: %v, want an error with %q", tt.input, err, tt.err)
			}
			continue
		}
		if err != nil || string(in.rawArgs) != tt.raw {
			t.Errorf("%s: raw %s, %v; want %s", tt.input, in.rawArgs, err, tt.raw)
			continue
		}
		args, raw, err := in.callArguments()
		if err != nil {
			t.Fatal(err)
		}
		if tt.raw == "" {
			if m, ok := args.(map[string]any); !ok || len(m) != 0 || string(raw) != "{}" {
				t.Errorf("%s: no arguments gave %#v and %s", tt.input, args, raw)
			}
			continue
		}
		if r, ok := args.(json.RawMessage); !ok || string(r) != tt.raw || string(raw) != tt.raw {
			t.Errorf("%s: arguments %#v and %s, want the raw JSON", tt.input, args, raw)
		}
		fromRaw, err := in.arguments()
		if err != nil {
			t.Fatal(err)
		}
		fromString, err := GatewayInput{ArgumentsJSON: tt.raw}.arguments()
		if err != nil || !reflect.DeepEqual(fromRaw, fromString) {
			t.Errorf("%s: %v from the input, %v (%v) from argumentsJson", tt.input, fromRaw, fromString, err)
		}
	}
}

func TestGatewaySearchDescribeCallAndSidecar(t *testing.T) {
	t.Parallel()
	opts := workspace(t, map[string]server{
		"hidden": stdio("behave", server{"excludeTools": []string{"echo"}}),
	}, map[string]any{"maxOutputBytes": 4096, "maxOutputLines": 100})
	// echo is read by its readOnlyHint alone, which counts when a user
	// layer trusts the server's hints.
	userServers(t, opts, map[string]server{"tools": stdio("behave", server{"trustToolHints": true})})
	e := start(t, opts)
	ctx := testwait.Context(t)
	for _, id := range []string{"tools", "hidden"} {
		if err := e.Connect(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	r := gw(t, e, GatewayInput{Action: "search", Query: "echo the text back"})
	matches := r.Data.(map[string]any)["matches"].([]SearchMatch)
	if r.IsError || len(matches) == 0 || matches[0].Tool != "echo" || matches[0].Server != "tools" {
		t.Fatalf("search: %s", r.Text)
	}
	for _, m := range matches {
		if m.Server == "hidden" && m.Tool == "echo" {
			t.Error("an excluded tool is in search results")
		}
	}
	if !strings.Contains(matches[0].Call, `"action":"call"`) || matches[0].Risk != RiskRead {
		t.Errorf("match: %+v", matches[0])
	}
	d := gw(t, e, GatewayInput{Action: "describe", Server: "tools", Tool: "echo"})
	dr := d.Data.(DescribeResult)
	if d.IsError || !strings.HasPrefix(dr.MetadataHash, "sha256:") || len(dr.InputSchema) == 0 {
		t.Fatalf("describe: %s", d.Text)
	}
	if r := gw(t, e, GatewayInput{Action: "call", Server: "hidden", Tool: "echo", Arguments: map[string]any{"text": "x"}}); !r.IsError || !strings.Contains(r.Text, "excluded") {
		t.Errorf("excluded tool called: %s", r.Text)
	}
	c := gw(t, e, GatewayInput{Action: "call", Server: "tools", Tool: "echo", ArgumentsJSON: `{"text":"hello"}`})
	if c.IsError || c.Data.(CallResult).Content != "hello" {
		t.Fatalf("call: %s", c.Text)
	}
	f := gw(t, e, GatewayInput{Action: "call", Server: "tools", Tool: "fail"})
	if !f.IsError || f.Data.(CallResult).Status != "failed" {
		t.Errorf("a tool error is not an error result: %s", f.Text)
	}
	big := gw(t, e, GatewayInput{Action: "call", Server: "tools", Tool: "big", Arguments: map[string]any{"bytes": 100000}})
	br := big.Data.(CallResult)
	if big.IsError || br.Truncation == nil || br.Cache == nil || len(br.Content) > 4096 || !strings.HasPrefix(br.Cache.ID, "mcpout_") {
		t.Fatalf("big output: %+v", br.Truncation)
	}
	if strings.Contains(big.Text, opts.Home) || strings.Contains(jsonText(big.Data), opts.Home) {
		t.Error("a host path reached the model")
	}
	page := gw(t, e, GatewayInput{Action: "read_cache", CacheID: br.Cache.ID, Offset: 4096})
	if page.IsError || page.Data.(map[string]any)["totalBytes"].(int64) < 100000 {
		t.Fatalf("read_cache: %s", page.Text)
	}
	// An engine of another workspace cannot read it, even with the same
	// agent dir.
	e.Close()
	otherOpts := workspace(t, map[string]server{"x": stdio("behave", nil)}, nil)
	otherOpts.AgentDir = opts.AgentDir
	other := start(t, otherOpts)
	if r := gw(t, other, GatewayInput{Action: "read_cache", CacheID: br.Cache.ID}); !r.IsError {
		t.Error("another workspace read the output")
	}
}

func TestGatewaySearchNeverStartsAServer(t *testing.T) {
	t.Parallel()
	opts := workspace(t, map[string]server{"s": stdio("behave", nil)}, nil)
	e := start(t, opts)
	if err := e.Refresh(testwait.Context(t), "s"); err != nil {
		t.Fatal(err)
	}
	e.Close()
	e2 := start(t, opts)
	r := gw(t, e2, GatewayInput{Action: "search", Query: "add two numbers"})
	if r.IsError || !strings.Contains(r.Text, `"tool":"add"`) {
		t.Fatalf("search on a cold server: %s", r.Text)
	}
	if len(children(opts.Project, opts.Home)) != 0 {
		t.Error("search started a server")
	}
	st := gw(t, e2, GatewayInput{Action: "list_servers"})
	if !strings.Contains(st.Text, `"status":"cold"`) {
		t.Errorf("list_servers: %s", st.Text)
	}
}

func TestServeStdioAndHTTP(t *testing.T) {
	t.Parallel()
	e := start(t, workspace(t, map[string]server{"s": stdio("behave", nil)}, nil))
	ctx := testwait.Context(t)

	// stdio, through pipes, with the SDK's client.
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- e.ServeStdio(ctx, sr, sw) }()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: cr, Writer: cw}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != "mcp" {
		t.Fatalf("tools: %v %v", tools, err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp", Arguments: map[string]any{"action": "call", "server": "s", "tool": "echo", "arguments": map[string]any{"text": "via serve"}}})
	if err != nil || res.IsError || text(res) != "via serve" {
		t.Fatalf("call through serve: %v %v", text(res), err)
	}
	bad, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp", Arguments: map[string]any{"action": "nope"}})
	if err != nil || !bad.IsError {
		t.Errorf("bad action: %v %v", bad, err)
	}
	cs.Close()
	cw.Close()
	<-done

	// Streamable HTTP on loopback.
	hs := httptest.NewServer(e.HTTPHandler(testToken))
	defer hs.Close()
	hcs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: bearerClient(testToken)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := hcs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp", Arguments: map[string]any{"action": "status"}}); err != nil || res.IsError {
		t.Errorf("status over HTTP: %v", err)
	}
	hcs.Close()
	// DNS rebinding: another Host is refused.
	req, _ := http.NewRequest(http.MethodPost, hs.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Host = "evil.example:80"
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("foreign Host: %d", resp.StatusCode)
	}
}
