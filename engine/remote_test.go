package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/internal/testwait"
	"github.com/voltmcp/voltmcp/policies"
)

// TestDecideRemote decides management commands for the owner and for a
// remote client with the built-in voltmcp.remote policy and a user's deny
// rule: the owner runs every command, a remote client only the
// remote-safe ones, on a server the engine runs, with device-code auth;
// a project server whose project file changed since it was trusted is
// not in trusted config; and a policy that cannot decide refuses.
func TestDecideRemote(t *testing.T) {
	t.Parallel()
	opts := workspace(t, map[string]server{"s": stdio("behave", nil)}, nil)
	opts.Surface = cue.SurfaceDaemon // a long-lived engine watches its project's trust
	opts.PolicyDirs = []string{writePolicy(t, "remote.rego", `package voltmcp.remote

deny contains "no resources for remote clients" if {
	input.caller == "remote"
	input.command == "read_mcp_resource"
}
`)}
	e := start(t, opts)
	ctx := testwait.Context(t)
	for _, c := range []struct {
		req   RemoteRequest
		allow bool
		why   string // in a reason
	}{
		{RemoteRequest{Command: "list_mcp_servers"}, true, "local callers may run every command"},
		{RemoteRequest{Command: "add_mcp_server"}, true, "local"},
		{RemoteRequest{Command: "complete_mcp_server_auth", Server: "s"}, true, "local"},
		{RemoteRequest{Command: "list_mcp_servers", Remote: true}, true, "remote-safe"},
		{RemoteRequest{Command: "connect_mcp_server", Server: "s", Remote: true}, true, "remote-safe"},
		{RemoteRequest{Command: "set_mcp_server_enabled", Server: "s", Remote: true}, true, "remote-safe"},
		{RemoteRequest{Command: "connect_mcp_server", Server: "nope", Remote: true}, false, "not in trusted config"},
		{RemoteRequest{Command: "connect_mcp_server", Remote: true}, false, "needs a server"},
		{RemoteRequest{Command: "add_mcp_server", Remote: true}, false, "never remote-safe"},
		{RemoteRequest{Command: "call_mcp_tool", Server: "s", Remote: true}, false, "not on the remote-safe list"},
		{RemoteRequest{Command: "start_mcp_server_auth", Server: "s", AuthFlow: "browser", Remote: true}, false, "device-code"},
		{RemoteRequest{Command: "start_mcp_server_auth", Server: "s", AuthFlow: "device", Remote: true}, true, "remote-safe"},
		{RemoteRequest{Command: "complete_mcp_server_auth", Server: "s", Remote: true}, false, "only for local callers"},
		{RemoteRequest{Command: "read_mcp_resource", Server: "s", Remote: true}, false, "no resources for remote clients"},
	} {
		d := e.DecideRemote(ctx, c.req)
		if d.Allowed != c.allow || !strings.Contains(strings.Join(d.Reasons, "; "), c.why) {
			t.Errorf("%+v: allowed %v %q, want %v with %q", c.req, d.Allowed, d.Reasons, c.allow, c.why)
		}
	}

	// The project file changes: its servers are no longer in trusted
	// config until the project is trusted again.
	file := filepath.Join(opts.Project, ".volt", "mcp.json")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, append(data, ' '), 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(2 * time.Second) // testwait: a file time ahead of the last stamp, not a wait
	if err := os.Chtimes(file, later, later); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "a changed project's server to leave trusted config", func() bool {
		return !e.DecideRemote(ctx, RemoteRequest{Command: "connect_mcp_server", Server: "s", Remote: true}).Allowed
	})

	// A policy set that cannot decide in time refuses, and says so.
	slow := writePolicy(t, "slow.rego", `package voltmcp.remote

deny contains "never" if count([x | some x in numbers.range(1, 200000)]) < 0
`)
	failing, err := policies.Load(context.Background(), &policies.Options{Dirs: []string{slow}, Timeout: time.Millisecond, MemoryBudget: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	e.guard.Load().pol.Store(failing)
	if d := e.DecideRemote(ctx, RemoteRequest{Command: "list_mcp_servers"}); d.Allowed || len(d.Reasons) == 0 {
		t.Errorf("a policy past its deadline: allowed %v %q", d.Allowed, d.Reasons)
	}
}
