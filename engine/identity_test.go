package engine

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/engine/internal/oauth"
	"github.com/voltmcp/voltmcp/engine/internal/pin"
	"github.com/voltmcp/voltmcp/internal/mcptest"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// quarantineAll is a tools policy that holds every new server.
const quarantineAll = "package voltmcp.tools\n\nquarantine_new_servers if true\n"

// sharedHome returns opts with the agent directory (the home) of home.
func sharedHome(opts Options, home string) Options {
	opts.Home = home
	opts.LookupEnv = func(k string) (string, bool) {
		if k == "HOME" {
			return home, true
		}
		return os.LookupEnv(k)
	}
	return opts
}

// withArgs returns a stdio entry of mode whose arguments have extra
// appended: another program, as far as voltmcp can tell.
func withArgs(mode string, extra ...string) server {
	s := stdio(mode, nil)
	s["args"] = append(s["args"].([]string), extra...)
	return s
}

// TestProjectsSharingAnAgentDirKeepTheirOwnState runs the review's
// case: two trusted projects share one agent directory, and each
// defines a server "tools". Approving the first project's does not make
// the second's callable, whether the two run another program or the
// very same one; nor does the second see the first's pins.
func TestProjectsSharingAnAgentDirKeepTheirOwnState(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		second server
	}{
		{"another program", withArgs(mcptest.ModeBehave, "-test.count=1")},
		{"the same program", stdio(mcptest.ModeBehave, nil)},
	} {
		t.Run(c.name, func(t *testing.T) {
			policy := writePolicy(t, "quarantine.rego", quarantineAll)
			a := workspace(t, map[string]server{"tools": stdio(mcptest.ModeBehave, nil)}, nil)
			a.PolicyDirs = []string{policy}
			b := sharedHome(workspace(t, map[string]server{"tools": c.second}, nil), a.Home)
			b.PolicyDirs = []string{policy}
			echo := GatewayInput{Action: "call", Server: "tools", Tool: "echo", Arguments: map[string]any{"text": "hi"}}
			ctx := testwait.Context(t)

			ea := start(t, a)
			if r := gw(t, ea, echo); !r.IsError || !strings.Contains(r.Text, "quarantined") {
				t.Fatalf("the first project's server is not held: %s", r.Text)
			}
			if err := ea.Approve(ctx, "tools"); err != nil {
				t.Fatal(err)
			}
			if r := gw(t, ea, echo); r.IsError {
				t.Fatalf("the approved server: %s", r.Text)
			}
			ea.Close()

			eb := start(t, b)
			if pins, err := eb.Pins(ctx, "tools"); err != nil || len(pins) != 0 {
				t.Errorf("the second project's server has the first's pins before its first sight: %+v, %v", pins, err)
			}
			if r := gw(t, eb, echo); !r.IsError || !strings.Contains(r.Text, "quarantined") || !strings.Contains(r.Text, "voltmcp approve tools") {
				t.Errorf("the second project's server is callable on the first's approval: %s", r.Text)
			}
			if sum, _ := eb.Server("tools"); !sum.Quarantined {
				t.Errorf("the second project's server is not shown quarantined: %+v", sum)
			}
			eb.Close()

			// And the first's approval stands.
			ea = start(t, a)
			if r := gw(t, ea, echo); r.IsError {
				t.Errorf("the first project's server after the second's first sight: %s", r.Text)
			}
		})
	}
}

// TestChangedIdentityIsANewServer edits a server's definition in place,
// each field of what it runs in turn: the server under the old name is
// new, held by quarantine, and neither compared with nor shown the old
// definition's pins.
func TestChangedIdentityIsANewServer(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(server) server
	}{
		{"arguments", func(s server) server { s["args"] = append(s["args"].([]string), "-test.count=1"); return s }},
		{"an env name", func(s server) server { s["env"].(map[string]string)["EXTRA"] = "1"; return s }},
		{"working directory", func(s server) server { s["cwd"] = os.TempDir(); return s }},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := workspace(t, map[string]server{"srv": stdio(mcptest.ModeBehave, nil)}, nil)
			opts.PolicyDirs = []string{writePolicy(t, "quarantine.rego", quarantineAll)}
			ctx := testwait.Context(t)
			e := start(t, opts)
			if err := e.Approve(ctx, "srv"); err != nil {
				t.Fatal(err)
			}
			if err := e.Connect(ctx, "srv"); err != nil {
				t.Fatal(err)
			}
			e.Close()

			// The same name runs another program now.
			next := c.edit(stdio(mcptest.ModeRugPull, nil))
			data, _ := json.Marshal(map[string]any{"version": 1, "servers": map[string]any{"srv": next}})
			if err := os.WriteFile(filepath.Join(opts.Project, ".volt", "mcp.json"), data, 0o644); err != nil {
				t.Fatal(err)
			}
			e = start(t, opts)
			r := gw(t, e, GatewayInput{Action: "call", Server: "srv", Tool: mcptest.RugPullTool, Arguments: map[string]any{"city": "x"}})
			if !r.IsError || !strings.Contains(r.Text, "quarantined") {
				t.Errorf("the other program is callable on the old one's approval: %s", r.Text)
			}
			pins, err := e.Pins(ctx, "srv")
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range pins {
				if p.Tool == "echo" || p.Pending != nil || p.State != PinPinned {
					t.Errorf("pins of the other program: %+v", p)
				}
			}
		})
	}
}

// TestForgetDeletesWhatBelongedToTheServer checks Forget on each store,
// an OAuth token included, and that it leaves another server's pins,
// cache and outputs alone.
func TestForgetDeletesWhatBelongedToTheServer(t *testing.T) {
	t.Parallel()
	opts := workspace(t, map[string]server{"gone": stdio(mcptest.ModeBehave, nil), "kept": stdio(mcptest.ModeBehave, nil)}, nil)
	ctx := testwait.Context(t)
	e := start(t, opts)
	for _, id := range []string{"gone", "kept"} {
		if err := e.Connect(ctx, id); err != nil {
			t.Fatal(err)
		}
		if r := gw(t, e, GatewayInput{Action: "call", Server: id, Tool: "big", Arguments: map[string]any{"bytes": 200000}}); r.IsError || !strings.Contains(r.Text, "mcpout_") {
			t.Fatalf("big output of %s: %s", id, clip(r.Text, 300))
		}
	}
	gone := e.servers["gone"].cfg
	e.Close()
	agent := filepath.Join(opts.Home, ".volt", "agent")
	f, err := Forget(ctx, agent, gone)
	if err != nil || !f.Pins || !f.Cache || f.Outputs != 1 || f.Token {
		t.Errorf("Forget: %+v, %v", f, err)
	}
	e = start(t, opts)
	if pins, _ := e.Pins(ctx, "gone"); len(pins) != 0 {
		t.Errorf("pins of the forgotten server: %+v", pins)
	}
	if pins, _ := e.Pins(ctx, "kept"); len(pins) == 0 {
		t.Error("Forget took another server's pins")
	}
	if m, _ := e.Metadata("kept"); m == nil {
		t.Error("Forget took another server's cached metadata")
	}
	if outputs, _ := filepath.Glob(filepath.Join(agent, "mcp", "outputs", "*", "mcpout_*")); len(outputs) != 1 {
		t.Errorf("outputs after Forget: %v, want kept's one", outputs)
	}
	e.Close()

	// Forget deletes the token of a server that logs in with OAuth.
	oauthGone := gone
	oauthGone.Auth = &cue.Auth{Type: "oauth"}
	path := oauth.Path(agent, "gone")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(`{"format":1,"server":"gone"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if f, err := Forget(ctx, agent, oauthGone); err != nil || !f.Token {
		t.Errorf("Forget of the server's token: %+v, %v", f, err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the token file stays: %v", err)
	}
}

// TestPinsFromBeforeIdentitiesAreNotUsed writes pin files as versions
// before identities did, under the server's name: such a file cannot be
// shown to be the server's, so its approval grants nothing (quarantine
// still holds the server), its pins are not compared with the server's
// tools, and they are not shown as the server's.
func TestPinsFromBeforeIdentitiesAreNotUsed(t *testing.T) {
	t.Parallel()
	echo := pin.Meta{Name: "echo", Description: "Another echo.", Risk: "destructive"}
	ghost := pin.Meta{Name: "ghost", Description: "A tool of the old program.", Risk: "read"}
	for _, c := range []struct {
		name       string
		quarantine bool
		legacy     func(t *testing.T, store *pin.Store)
		held       bool
	}{
		{"approved ahead, with quarantine", true, func(t *testing.T, store *pin.Store) {
			if _, _, err := store.ApproveAll("srv"); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"approved with pins, with quarantine", true, func(t *testing.T, store *pin.Store) {
			if _, err := store.Observe("srv", []pin.Meta{echo, ghost}, nil); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"pins of other tools, without quarantine", false, func(t *testing.T, store *pin.Store) {
			if _, err := store.Observe("srv", []pin.Meta{echo, ghost}, nil); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := workspace(t, map[string]server{"srv": stdio(mcptest.ModeBehave, nil)}, nil)
			if c.quarantine {
				opts.PolicyDirs = []string{writePolicy(t, "quarantine.rego", quarantineAll)}
			}
			store, err := pin.OpenStore(filepath.Join(opts.Home, ".volt", "agent", "mcp", "pins"))
			if err != nil {
				t.Fatal(err)
			}
			c.legacy(t, store)
			e := start(t, opts)
			ctx := testwait.Context(t)
			r := gw(t, e, GatewayInput{Action: "call", Server: "srv", Tool: "echo", Arguments: map[string]any{"text": "hi"}})
			if held := r.IsError && strings.Contains(r.Text, "quarantined"); held != c.held || (!c.held && r.IsError) {
				t.Errorf("held = %v, want %v: %s", held, c.held, r.Text)
			}
			if strings.Contains(r.Text, "changed since") {
				t.Errorf("the server is compared with the pins kept under its name: %s", r.Text)
			}
			pins, err := e.Pins(ctx, "srv")
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range pins {
				if p.Tool == "ghost" || p.Pending != nil {
					t.Errorf("pins shows the file kept under the name: %+v", p)
				}
			}
		})
	}
}
