package engine

import (
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/internal/mcptest"
)

func TestScratchErrors(t *testing.T) {
	t.Setenv(mcptest.EnvDeep, "call")
	url := mcptest.ServeStreamableOnly(t, mcptest.ModeDeepAnswer)
	e := start(t, workspace(t, map[string]server{
		"crash": stdio("crash-call", nil),
		"segv":  stdio(mcptest.ModeSegvCall, server{"env": map[string]string{mcptest.EnvSecret: "s3cr3tvalue"}}),
		"deeplist":  stdio(mcptest.ModeDeepAnswer, nil),
		"deepcall":  stdio(mcptest.ModeDeepAnswer, nil, mcptest.EnvDeep+"=call"),
		"httpdeep": {"url": url, "transport": "streamable-http"},
	}, nil))
	ctx := ctxT(t, 60*time.Second)
	for _, c := range [][2]string{{"crash", "crash"}, {"segv", "segv"}, {"deeplist", "deep"}, {"deepcall", mcptest.ToolDeepAnswer}, {"httpdeep", mcptest.ToolDeepAnswer}} {
		r := e.Gateway(ctx, GatewayInput{Action: "call", Server: c[0], Tool: c[1], Arguments: map[string]any{}})
		t.Logf("%s gw: %s", c[0], r.Text)
		s, _ := e.Server(c[0])
		t.Logf("%s status %s lastErr %q", c[0], s.Status, s.LastError)
	}
	_, err := e.CallTool(ctx, "crash", "crash", map[string]any{})
	t.Logf("crash calltool: %v", err)
	err = e.Connect(ctx, "deeplist")
	t.Logf("deeplist connect: %v", err)
}
