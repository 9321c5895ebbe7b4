package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/daemon"
	"github.com/voltmcp/voltmcp/devices"
	"github.com/voltmcp/voltmcp/engine"
	"github.com/voltmcp/voltmcp/rpc"
)

func daemonCommand() *command {
	var maxConns int
	var asJSON bool
	var httpAddr, name string
	c := &command{
		name:    "daemon",
		summary: "run one gateway for all your agents on a unix socket (status, stop, pair, devices)",
		choices: []string{"status", "stop", "pair", "devices"},
		usage: `Usage: voltmcp daemon [--max-connections N] [--http 127.0.0.1:PORT]
       voltmcp daemon status [--json]
       voltmcp daemon stop
       voltmcp daemon pair [--name NAME]
       voltmcp daemon devices [--json]
       voltmcp daemon devices revoke ID

'voltmcp daemon' runs the user's gateway in the foreground, logging to
stderr, until Ctrl-C, SIGTERM or 'voltmcp daemon stop'. It serves the
management RPC (docs/rpc.md) on the unix socket
<agent-dir>/daemon/daemon.sock: mode 0600 in a 0700 directory, and on
Linux each connection's peer must run as you (SO_PEERCRED). Agent
sessions attach to it with 'voltmcp serve --daemon=auto' (or =on) and
share one set of upstream processes, OAuth sessions, caches and pins;
'voltmcp events' watches it. Workspaces are kept apart: each project
directory an agent attaches with has its own engine (its own project
trust and project servers), made on first use; a session with no
project uses the user-level workspace. When it stops, every engine is
closed and its audit written. One daemon runs per agent directory:
another start says "a daemon is already running (pid N)". A socket left
by a daemon that died is replaced; a directory or socket that is not
yours alone is refused, and the error names it. --approve is refused:
each project's trust is its own ('voltmcp trust' in it).

--http ADDR also serves paired devices (a browser UI, a phone through a
tunnel such as 'ssh -L') over HTTP on a loopback address: 127.0.0.1,
[::1] or localhost with a port; any other host is refused. POST /rpc
takes one JSON-RPC request, GET /events streams the events (Server-Sent
Events). Each request needs 'Authorization: Bearer <device token>', and
each command is decided by the voltmcp.remote policy: by default only
the spec's remote-safe commands, on configured servers, with device-code
auth only; a stdio server's arguments, environment values and URL paths
are not shown. docs/rpc.md describes it.

'voltmcp daemon pair' pairs a device: it prints the device's token once
(the daemon keeps only its SHA-256, in <agent-dir>/daemon/devices.json,
mode 0600). 'voltmcp daemon devices' lists the paired devices and when
each was last served;
'voltmcp daemon devices revoke ID' (an id or a name) takes one back, and
a running daemon refuses its token from the next request on.

'voltmcp daemon status' says whether one runs, its pid, socket and the
workspaces attached; it exits 3 when none runs. 'voltmcp daemon stop'
asks it to stop and waits until it has closed its engines.

docs/daemon.md describes the security model and what happens when the
daemon dies.

Examples:
  voltmcp daemon
  voltmcp daemon --http 127.0.0.1:7465
  voltmcp daemon pair --name phone
  voltmcp daemon devices revoke phone
  voltmcp daemon status
  voltmcp daemon stop`,
		flags: func(fs *pflag.FlagSet) {
			fs.IntVar(&maxConns, "max-connections", daemon.DefaultMaxConns, "connections served at once; one more is refused with an error")
			fs.BoolVar(&asJSON, "json", false, "with status or devices, print JSON")
			fs.StringVar(&httpAddr, "http", "", "also serve paired devices over HTTP on this loopback address (127.0.0.1:PORT, [::1]:PORT or localhost:PORT)")
			fs.StringVar(&name, "name", "", "with pair, the device's name (default: device-DATE)")
		},
	}
	c.run = func(ctx context.Context, e *env, args []string) error {
		sub := ""
		if len(args) > 0 {
			sub = args[0]
		}
		if sub == "devices" {
			return daemonDevices(ctx, e, args[1:], asJSON)
		}
		if len(args) > 1 {
			return usageErrorf("daemon %s takes no more arguments", sub)
		}
		if httpAddr != "" && sub != "" {
			return usageErrorf("--http goes with 'voltmcp daemon' itself, not with %s", sub)
		}
		switch sub {
		case "":
			return runDaemon(ctx, e, maxConns, httpAddr)
		case "status":
			return daemonStatus(ctx, e, asJSON)
		case "stop":
			return daemonStop(ctx, e)
		case "pair":
			return daemonPair(ctx, e, name)
		}
		return usageErrorf("unknown daemon command %q: want 'voltmcp daemon', or its status, stop, pair or devices", sub)
	}
	return c
}

// deviceStore is the daemon's paired-device store.
func deviceStore(e *env) *devices.Store {
	return devices.New(daemon.DevicesPath(e.g.agentDir), nil)
}

// daemonPair pairs a device and prints its token, once.
func daemonPair(ctx context.Context, e *env, name string) error {
	if name == "" {
		name = "device-" + time.Now().Format("20060102-150405")
	}
	if err := os.MkdirAll(daemon.Dir(e.g.agentDir), 0o700); err != nil {
		return failuref("%w", err)
	}
	if err := daemon.CheckPrivateDir(daemon.Dir(e.g.agentDir)); err != nil {
		return failuref("%w", err)
	}
	d, token, err := deviceStore(e).Pair(ctx, name)
	if err != nil {
		return failuref("%w", err)
	}
	fmt.Fprintf(e.stderr, "voltmcp: paired device %q (id %s). Its token is below, shown this once: give it to the device, which sends it as\n'Authorization: Bearer <token>' to 'voltmcp daemon --http'. 'voltmcp daemon devices revoke %s' takes it back.\n", clean(d.Name), d.ID, d.ID)
	fmt.Fprintln(e.stdout, token)
	return nil
}

// daemonDevices lists the paired devices, or revokes one.
func daemonDevices(ctx context.Context, e *env, args []string, asJSON bool) error {
	store := deviceStore(e)
	switch {
	case len(args) == 0:
		list, err := store.List()
		if err != nil {
			return failuref("%w", err)
		}
		if asJSON {
			enc := json.NewEncoder(e.stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(map[string]any{"devices": list})
		}
		if len(list) == 0 {
			fmt.Fprintln(e.stdout, "no paired device ('voltmcp daemon pair' pairs one)")
			return nil
		}
		for _, d := range list {
			used := "never used"
			if !d.LastUsedAt.IsZero() {
				used = "last used " + d.LastUsedAt.Local().Format("2006-01-02 15:04")
			}
			fmt.Fprintf(e.stdout, "%s  %-20s  paired %s, %s\n", d.ID, clean(d.Name), d.PairedAt.Local().Format("2006-01-02 15:04"), used)
		}
		return nil
	case args[0] == "revoke" && len(args) == 2:
		d, err := store.Revoke(ctx, args[1])
		if err != nil {
			return failuref("%w", err)
		}
		fmt.Fprintf(e.stdout, "revoked device %q (id %s): its token is refused from now on\n", clean(d.Name), d.ID)
		return nil
	case args[0] == "revoke":
		return usageErrorf("daemon devices revoke takes one device id (or name)")
	}
	return usageErrorf("unknown daemon devices command %q: want 'voltmcp daemon devices' or 'voltmcp daemon devices revoke ID'", args[0])
}

// runDaemon runs the daemon in the foreground.
func runDaemon(ctx context.Context, e *env, maxConns int, httpAddr string) error {
	if mark := engine.UnderGateway(e.getenv); mark != "" {
		return failuref("not running a daemon: this process was started by a voltmcp gateway (%s is set)", engine.RunEnv)
	}
	if e.g.approve {
		return usageErrorf("--approve does not go with the daemon: it serves every workspace; trust a project with 'voltmcp trust' in it")
	}
	if httpAddr != "" {
		if _, err := daemon.CheckLoopback(httpAddr); err != nil {
			return usageErrorf("%v", err)
		}
	}
	stderr := &lockedWriter{w: e.stderr}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	// What opening workspaces left behind goes back to the system once idle.
	idleCtx, stopIdle := context.WithCancel(ctx)
	defer stopIdle()
	go releaseIdleMemory(idleCtx, idleCheckEvery, idleAllocs, releaseAfterAllocs, nil)
	err := daemon.Run(ctx, &daemon.Options{
		AgentDir: e.g.agentDir,
		Engine: func(string) engine.Options {
			return e.engineOptions(cue.SurfaceDaemon, log, "")
		},
		RPC:      rpc.Options{Logger: log},
		MaxConns: maxConns,
		Logger:   log,
		HTTPAddr: httpAddr,
		Devices:  deviceStore(e),
		Ready: func() {
			fmt.Fprintf(stderr, "voltmcp: daemon serving on %s (pid %d; Ctrl-C or 'voltmcp daemon stop' to stop)\n", daemon.SocketPath(e.g.agentDir), os.Getpid())
		},
	})
	if err != nil {
		return failuref("%w", err)
	}
	return nil
}

func daemonStatus(ctx context.Context, e *env, asJSON bool) error {
	st, err := daemon.AskStatus(ctx, e.g.agentDir)
	if err != nil {
		if asJSON {
			_ = json.NewEncoder(e.stdout).Encode(map[string]any{"running": false, "socket": daemon.SocketPath(e.g.agentDir)})
		}
		return failuref("%w", err)
	}
	if asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Running bool `json:"running"`
			daemon.Status
		}{true, st})
	}
	fmt.Fprintf(e.stdout, "voltmcp daemon running: pid %d, socket %s, since %s, %d connection(s)\n", st.PID, st.Socket, st.Started, st.Connections)
	if len(st.Workspaces) == 0 {
		fmt.Fprintln(e.stdout, "no workspace attached yet")
	}
	for _, w := range st.Workspaces {
		name := w.Project
		if name == "" {
			name = "(user-level, no project)"
		}
		line := fmt.Sprintf("  workspace %s: %d connection(s), %d server(s)", name, w.Connections, w.Servers)
		if w.Error != "" {
			line += ": " + clean(w.Error)
		}
		fmt.Fprintln(e.stdout, line)
	}
	return nil
}

func daemonStop(ctx context.Context, e *env) error {
	pid, err := daemon.AskStop(ctx, e.g.agentDir)
	if err != nil {
		return failuref("%w", err)
	}
	wait, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := daemon.WaitStopped(wait, e.g.agentDir); err != nil {
		return failuref("the daemon (pid %d) was asked to stop and has not yet: %w", pid, err)
	}
	fmt.Fprintf(e.stdout, "voltmcp daemon (pid %d) stopped\n", pid)
	return nil
}

func eventsCommand() *command {
	var asJSON bool
	var since uint64
	c := &command{
		name:    "events",
		summary: "print the event stream of the daemon live (calls, server status, pins)",
		usage: `Usage: voltmcp events [--json] [--since N] [--project DIR]

Connects to the user's daemon ('voltmcp daemon') and prints the events of
one workspace as they happen: a call's start and end, a server's status
changes, auth, pins, config reloads. The workspace is --project's (the
working directory by default).
Text: one line per event, its time, type, server, and the tool and status
where it has them. --json: each event's mcp_event params (schema
mcp_events.v1, docs/rpc.md) as one JSON line. Without --since it prints
the events from now on; --since N (N > 0, the seq of the last event seen)
first prints the events after N that the daemon still holds (a gap event
says how many are gone), then the live ones. Once it watches, it says so
on stderr. Ctrl-C ends it. Without a daemon it says
how to start one and exits 3.

Examples:
  voltmcp events
  voltmcp events --json | jq .
  voltmcp events --since 1041`,
		flags: func(fs *pflag.FlagSet) {
			fs.BoolVar(&asJSON, "json", false, "print each event's JSON on a line")
			fs.Uint64Var(&since, "since", 0, "first print the events after this seq that the daemon still holds (0: from now on)")
		},
	}
	c.run = func(ctx context.Context, e *env, args []string) error {
		if len(args) > 0 {
			return usageErrorf("events takes no arguments")
		}
		project, err := workspaceOf(e)
		if err != nil {
			return usageErrorf("%v", err)
		}
		events := make(chan json.RawMessage, 256)
		quit := make(chan struct{})
		client, _, err := daemon.Attach(ctx, e.g.agentDir, project, func(method string, params json.RawMessage) {
			if method == "mcp_event" {
				select {
				case events <- params:
				case <-quit:
				}
			}
		})
		if err != nil {
			return failuref("%w", err)
		}
		defer client.Close()
		defer close(quit)
		params := map[string]any{}
		if since > 0 {
			params["sinceSeq"] = since
		}
		if err := client.Call(ctx, "subscribe_mcp_events", params, nil); err != nil {
			return failuref("subscribe: %w", err)
		}
		fmt.Fprintf(e.stderr, "voltmcp: watching the events of workspace %s (Ctrl-C to stop)\n", project)
		for {
			select {
			case <-ctx.Done():
				return nil
			case ev := <-events:
				printEvent(e, ev, asJSON)
			case <-client.Done():
			drain:
				for {
					select {
					case ev := <-events:
						printEvent(e, ev, asJSON)
					default:
						break drain
					}
				}
				if ctx.Err() != nil {
					return nil
				}
				return failuref("%w", client.Err())
			}
		}
	}
	return c
}

// workspaceOf is the workspace the invocation's --project names (the
// working directory by default), as the daemon keys it.
func workspaceOf(e *env) (string, error) {
	abs, err := filepath.Abs(e.g.project)
	if err != nil {
		return "", err
	}
	return daemon.CanonicalProject(abs)
}

// printEvent prints one event's params.
func printEvent(e *env, raw json.RawMessage, asJSON bool) {
	if asJSON {
		fmt.Fprintf(e.stdout, "%s\n", strings.TrimSpace(string(raw)))
		return
	}
	var ev rpc.McpEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		return
	}
	at := ev.At
	if t, err := time.Parse(time.RFC3339Nano, ev.At); err == nil {
		at = t.Local().Format("15:04:05.000")
	}
	parts := []string{at, ev.Type}
	for _, s := range []string{ev.Server, ev.Tool} {
		if s != "" {
			parts = append(parts, clean(s))
		}
	}
	switch {
	case ev.Outcome != "":
		parts = append(parts, ev.Outcome)
	case ev.CallStatus != "":
		parts = append(parts, ev.CallStatus)
	case ev.Status != "":
		parts = append(parts, ev.Status)
	}
	if ev.DurationMs > 0 {
		parts = append(parts, fmt.Sprintf("%dms", ev.DurationMs))
	}
	if ev.Missed > 0 {
		parts = append(parts, fmt.Sprintf("(%d events missed)", ev.Missed))
	}
	if ev.Error != "" {
		parts = append(parts, "error: "+clean(ev.Error))
	}
	fmt.Fprintln(e.stdout, strings.Join(parts, " "))
}
