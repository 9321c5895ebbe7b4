//go:build linux

package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/voltmcp/voltmcp/daemon"
	"github.com/voltmcp/voltmcp/internal/testwait"
	"github.com/voltmcp/voltmcp/ui"
)

// TestStatusLineAndUIUseTheDaemon checks that status --line and the UI's
// connection ask the running daemon, not an engine of their own: a server
// the daemon connected counts as connected, which an own engine (that
// starts no server) would not say.
func TestStatusLineAndUIUseTheDaemon(t *testing.T) {
	home := daemonHome(t, "a", "b")
	startDaemonProcess(t, home)
	project := t.TempDir()
	ctx := testwait.Context(t)
	agentDir := filepath.Join(home, ".volt", "agent")
	c, _, err := daemon.Attach(ctx, agentDir, mustCanonical(t, project), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A server the daemon connected counts as connected: an own engine
	// starts none, and would say 0. (The daemon lists its servers at the
	// start and stops them again, so the connect is made until it holds.)
	var r cliResult
	testwait.For(t, "status --line to count the daemon's connected server", func() bool {
		if err := c.Call(ctx, "connect_mcp_server", map[string]string{"id": "a"}, nil); err != nil {
			t.Fatal(err)
		}
		r = runCLI(t, nil, "status", "--line", "--home", home, "--project", project)
		if r.code != exitOK || !strings.HasPrefix(r.stdout, "MCP 2 configured / ") {
			t.Fatalf("status --line against the daemon:\n%s", r)
		}
		return !strings.Contains(r.stdout, "/ 0 connected")
	})

	e := &env{getenv: fakeEnv(t, nil)}
	e.g.home, e.g.project = home, project
	if err := e.g.resolve(e.getenv); err != nil {
		t.Fatal(err)
	}
	conn, err := openRPC(ctx, e, false, ui.NewEvents().Notify)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	servers, err := ui.ListServers(ctx, conn.client)
	if err != nil {
		t.Fatal(err)
	}
	if line := ui.StatusLine(servers); conn.via != "daemon" || !strings.HasPrefix(line, "MCP 2 configured / ") {
		t.Errorf("the UI's connection is via %q and says %q; want the daemon's", conn.via, line)
	}
}
