package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/internal/mcptest"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// TestLeanHTTPUpstreamMatchesSDK makes the same calls to a Streamable
// HTTP server on the lean path (transport.Caller) and through the SDK's
// client (an engine that answers elicitation, which keeps its calls on
// the SDK), and compares the gateway's answers.
func TestLeanHTTPUpstreamMatchesSDK(t *testing.T) {
	t.Parallel()
	url := mcptest.ServeStreamableOnly(t, mcptest.ModeBehave)
	servers := map[string]server{"h": {"url": url, "transport": "streamable-http"}}
	lean := start(t, workspace(t, servers, nil))
	viaSDK := workspace(t, servers, nil)
	viaSDK.Elicit = func(context.Context, string, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	sdk := start(t, viaSDK)
	ctx := testwait.Context(t)
	inputs := []GatewayInput{
		{Action: "call", Server: "h", Tool: "echo", Arguments: map[string]any{"text": "same"}},
		{Action: "call", Server: "h", Tool: "add", ArgumentsJSON: `{"a": 2, "b": 3}`},
		{Action: "call", Server: "h", Tool: "fail"},
		{Action: "call", Server: "h", Tool: "big", ArgumentsJSON: `{"bytes": 200000}`},
		{Action: "call", Server: "h", Tool: "add", ArgumentsJSON: `{"a": "x"}`},
		{Action: "call", Server: "h", Tool: "slow", ArgumentsJSON: `{"ms": 10}`},
	}
	made := 0
	for _, in := range inputs {
		// A shaper that reaches its deadline on a loaded machine leaves
		// its output unshaped, so the two answers differ by design: the
		// case runs again (three times at most).
		var ja, jb []byte
		for try := 0; try < 3; try++ {
			a, b := lean.Gateway(ctx, in), sdk.Gateway(ctx, in)
			made++
			ja, _ = json.Marshal(normalizeCall(a))
			jb, _ = json.Marshal(normalizeCall(b))
			if !bytes.Contains(ja, []byte("shaper builtin deadline")) && !bytes.Contains(jb, []byte("shaper builtin deadline")) {
				break
			}
		}
		if !reflect.DeepEqual(ja, jb) {
			t.Errorf("%+v:\nlean %.2000s\nSDK  %.2000s", in, ja, jb)
		}
	}
	s, err := lean.supervisor("h")
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	h := s.hcall
	s.mu.Unlock()
	if h == nil || h.Made() != uint64(made) {
		t.Errorf("the lean path made %v calls of %d", h, made)
	}
	s, _ = sdk.supervisor("h")
	s.mu.Lock()
	if s.hcall != nil {
		t.Error("an engine that answers elicitation calls on the lean path")
	}
	s.mu.Unlock()
}

// normalizeCall drops what differs between two runs of the same call:
// the sidecar's id (and the text, which names it).
func normalizeCall(r GatewayResult) GatewayResult {
	if d, ok := r.Data.(CallResult); ok {
		if d.Cache != nil {
			c := *d.Cache
			c.ID, c.Read = "", ""
			d.Cache = &c
		}
		r.Data = d
		r.Text = ""
	}
	return r
}

// TestLeanHTTPWire speaks raw Streamable HTTP to the lean path: a call
// on a session the SDK does not know goes to the SDK (404); a call on an
// initialized session is answered as one event of an event stream; a
// cancelled call gets no answer, and its cancellation a 202.
func TestLeanHTTPWire(t *testing.T) {
	t.Parallel()
	e := start(t, workspace(t, map[string]server{"s": stdio("behave", nil)}, nil))
	ctx := testwait.Context(t)
	lean := newLeanServe(ctx, e)
	hs := httptest.NewServer(e.httpHandler(testToken, lean))
	defer hs.Close()
	client := bearerClient(testToken)
	post := func(session string, msg map[string]any) (*http.Response, string) {
		t.Helper()
		msg["jsonrpc"] = "2.0"
		body, _ := json.Marshal(msg)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp, string(data)
	}
	echo := map[string]any{"action": "call", "server": "s", "tool": "echo", "arguments": map[string]any{"text": "wire"}}

	if resp, _ := post("no-such-session", gatewayCallMsg(1, echo, nil)); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown session: HTTP %d, want 404", resp.StatusCode)
	}
	resp, _ := post("", map[string]any{"id": 0, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "wire", "version": "1"}}})
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: HTTP %d, session %q", resp.StatusCode, sid)
	}
	defer func() {
		// The session ends with the test.
		req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, hs.URL, nil)
		req.Header.Set("Mcp-Session-Id", sid)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	if resp, _ := post(sid, map[string]any{"method": "notifications/initialized"}); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("initialized: HTTP %d", resp.StatusCode)
	}
	resp, body := post(sid, gatewayCallMsg(2, echo, nil))
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" ||
		!strings.HasPrefix(body, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":") || !strings.Contains(body, "wire") {
		t.Errorf("call: HTTP %d %q\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	if n := lean.answered.Load(); n != 1 {
		t.Errorf("the lean path answered %d calls, want 1", n)
	}

	// A slow call, cancelled: the cancellation is accepted, and the
	// call's stream ends without an answer.
	slow := map[string]any{"action": "call", "server": "s", "tool": "slow", "arguments": map[string]any{"ms": 20000}}
	ended := make(chan string, 1)
	go func() {
		_, body := post(sid, gatewayCallMsg(3, slow, nil))
		ended <- body
	}()
	time.Sleep(300 * time.Millisecond)
	if resp, _ := post(sid, map[string]any{"method": "notifications/cancelled", "params": map[string]any{"requestId": 3, "reason": "test"}}); resp.StatusCode != http.StatusAccepted {
		t.Errorf("cancel: HTTP %d", resp.StatusCode)
	}
	select {
	case body := <-ended:
		if body != "" {
			t.Errorf("the cancelled call was answered: %q", body)
		}
	case <-time.After(testwait.Patience):
		t.Fatal("the cancelled call's stream did not end")
	}
	if n := lean.answered.Load(); n != 1 {
		t.Errorf("the lean path answered %d calls, want 1", n)
	}
}
