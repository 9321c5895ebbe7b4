package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/voltmcp/voltmcp/daemon"
	"github.com/voltmcp/voltmcp/engine"
	"github.com/voltmcp/voltmcp/rpc"
)

// The values of serve's --daemon.
const (
	daemonOff  = "off"  // standalone (--no-daemon, the default)
	daemonOn   = "on"   // attach, or fail saying how to start one
	daemonAuto = "auto" // attach, starting a daemon when none runs
)

// parseDaemonMode is serve's --daemon and --no-daemon as one mode.
func parseDaemonMode(flag string, set, noDaemon bool) (string, error) {
	if noDaemon {
		if set && flag != daemonOff {
			return "", fmt.Errorf("give --daemon=%s or --no-daemon, not both", flag)
		}
		return daemonOff, nil
	}
	switch flag {
	case "", daemonOff:
		return daemonOff, nil
	case daemonOn, "attach":
		return daemonOn, nil
	case daemonAuto:
		return daemonAuto, nil
	}
	return "", fmt.Errorf("--daemon %q: want auto, on (or attach) or off", flag)
}

// attachTimeout bounds attaching to the daemon, starting it included:
// the daemon's engine for a workspace is made on the first attach, and
// loads the config and the policies.
const attachTimeout = time.Minute

// daemonLink is an attached serve's connection to the daemon: made at
// the start, and made again by the call after the daemon went away.
type daemonLink struct {
	e       *env
	mode    string
	project string

	mu     sync.Mutex
	client *daemon.Client
}

// connect returns the link's client, attaching (and, under auto,
// starting a daemon) when there is none or the last one went away.
func (l *daemonLink) connect(ctx context.Context) (*daemon.Client, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.client != nil {
		select {
		case <-l.client.Done():
			l.client = nil
		default:
			return l.client, nil
		}
	}
	// A daemon that does not answer (stopped, or hung) fails the call
	// rather than hang the agent's session.
	ctx, cancel := context.WithTimeout(ctx, attachTimeout)
	defer cancel()
	c, _, err := daemon.Attach(ctx, l.e.g.agentDir, l.project, nil)
	var gone *daemon.GoneError
	if errors.As(err, &gone) {
		// A daemon killed a moment ago can still take a connection into
		// its listen queue, and reset it as it dies: look again once.
		c, _, err = daemon.Attach(ctx, l.e.g.agentDir, l.project, nil)
	}
	if errors.Is(err, daemon.ErrNotRunning) && l.mode == daemonAuto {
		if serr := l.start(ctx); serr != nil {
			return nil, serr
		}
		c, _, err = daemon.Attach(ctx, l.e.g.agentDir, l.project, nil)
	}
	if err != nil {
		return nil, err
	}
	l.client = c
	return c, nil
}

// live returns the link's client when it has one whose connection is
// up, without waiting for an attach in progress; nil otherwise.
func (l *daemonLink) live() *daemon.Client {
	if !l.mu.TryLock() {
		return nil
	}
	defer l.mu.Unlock()
	if l.client == nil {
		return nil
	}
	select {
	case <-l.client.Done():
		return nil
	default:
		return l.client
	}
}

// start starts a daemon in the background with this serve's home, agent
// directory and policies.
func (l *daemonLink) start(ctx context.Context) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("start the voltmcp daemon: %w", err)
	}
	args := []string{"--home", l.e.g.home, "--agent-dir", l.e.g.agentDir}
	for _, p := range l.e.g.policies {
		args = append(args, "--policy", p)
	}
	args = append(args, "daemon")
	return daemon.Start(ctx, l.e.g.agentDir, exe, args, os.Environ())
}

// call forwards one call of the mcp tool to the daemon and hands its
// answer to then ([engine.Forward]). It yields before it attaches, which
// may wait for a daemon to start.
func (l *daemonLink) call(ctx context.Context, yield func(), args json.RawMessage, then func(json.RawMessage, error)) {
	c := l.live()
	if c == nil {
		yield()
		var err error
		if c, err = l.connect(ctx); err != nil {
			then(nil, err)
			return
		}
	}
	c.CallRawThen(ctx, rpc.GatewayMethod, args, func(res json.RawMessage, err error) {
		var gone *daemon.GoneError
		if errors.As(err, &gone) {
			next := "the next call attaches to a daemon again, and starts one if none runs"
			if l.mode != daemonAuto {
				next = "the next call attaches again once one runs: start one with 'voltmcp daemon', or run serve with --daemon=auto"
			}
			err = fmt.Errorf("%w; %s", err, next)
		}
		then(res, err)
	})
}

// close ends the link.
func (l *daemonLink) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.client != nil {
		l.client.Close()
		l.client = nil
	}
}

// serveAttached serves the mcp tool over stdio, each call forwarded to
// the daemon: this process holds no engine, starts no server and writes
// no audit record (the daemon's engine writes each call's).
func serveAttached(ctx context.Context, e *env, mode string) error {
	project, err := workspaceOf(e)
	if err != nil {
		return usageErrorf("%v", err)
	}
	l := &daemonLink{e: e, mode: mode, project: project}
	defer l.close()
	if _, err := l.connect(ctx); err != nil {
		return failuref("serve --daemon=%s: %w", mode, err)
	}
	err = engine.ServeForward(ctx, readCloser(e.stdin), writeCloser(e.stdout), l.call)
	if err != nil && ctx.Err() == nil {
		return failuref("serve: %w", err)
	}
	return nil
}
