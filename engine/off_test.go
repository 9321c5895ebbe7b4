package engine

import (
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/internal/testwait"
)

// TestEnabledFalseTurnsTheGatewayOff checks settings.enabled: false: the
// reason names the file, no eager server starts, every action but status
// is refused with the reason, status says the gateway is off, and a
// served client sees no tool and the reason in the instructions.
func TestEnabledFalseTurnsTheGatewayOff(t *testing.T) {
	t.Parallel()
	opts := workspace(t, map[string]server{"up": stdio("behave", server{"lifecycle": "eager"})}, map[string]any{"enabled": false})
	e := start(t, opts)
	file := filepath.Join(opts.Project, ".volt", "mcp.json")
	off := e.TurnedOff()
	if !strings.Contains(off, "settings.enabled: false in "+file+" (the project layer, line ") || !strings.Contains(off, "set it to true") {
		t.Fatalf("TurnedOff = %q", off)
	}
	ctx := testwait.Context(t)
	for _, in := range []GatewayInput{
		{Action: "search", Query: "echo"},
		{Action: "call", Server: "up", Tool: "echo", ArgumentsJSON: `{"text":"x"}`},
		{Action: "list_servers"},
	} {
		if r := e.Gateway(ctx, in); !r.IsError || !strings.Contains(r.Text, off) {
			t.Errorf("%s: %+v, want refused with %q", in.Action, r, off)
		}
	}
	r := e.Gateway(ctx, GatewayInput{Action: "status"})
	data, _ := r.Data.(map[string]any)
	if r.IsError || data["enabled"] != false || !strings.Contains(r.Text, off) {
		t.Errorf("status: %+v", r)
	}

	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- e.ServeStdio(ctx, sr, sw) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, &mcp.IOTransport{Reader: cr, Writer: cw}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cs.Close(); cw.Close(); <-done }()
	if ins := cs.InitializeResult().Instructions; !strings.Contains(ins, off) {
		t.Errorf("instructions = %q", ins)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 0 {
		t.Errorf("tools = %v, %v; want none", tools, err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: GatewayToolName, Arguments: map[string]any{"action": "search", "query": "echo"}})
	if err == nil && !res.IsError {
		t.Errorf("a call of the mcp tool was answered: %+v", res)
	}
	// The eager server never started.
	if s, _ := e.Server("up"); s.Status != StatusCold || len(children(opts.Project, opts.Home)) != 0 {
		t.Errorf("eager server: %s, children %v", s.Status, children(opts.Project, opts.Home))
	}
}
