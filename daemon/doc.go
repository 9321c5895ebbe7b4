// Package daemon is voltmcp's one gateway per user: a process that
// serves the management RPC of package [rpc] on a unix socket in the
// agent directory (<agent-dir>/daemon/daemon.sock, 0600 in a 0700
// directory, each peer checked to run as this user) to every agent
// session and tool of the user, so that they share one set of upstream
// processes, OAuth sessions, caches and pins.
//
// Workspaces are kept apart inside it: the daemon holds one
// [engine.Engine] per workspace (a project directory, canonicalized, or
// the user-level workspace with no project), made on first use, each
// with its own project trust and project servers; all share one agent
// directory. A connection chooses its workspace with a first request
// attach_workspace {"project": "/abs/path"} ([AttachMethod]); a
// connection that starts with any other request is served by the
// user-level workspace. [Run] runs the daemon; [Attach] and [Client] are
// a client's end; [Start] starts a daemon in the background.
//
// With [Options.HTTPAddr] the daemon also serves paired devices (package
// devices) on a loopback HTTP address: POST /rpc answers one request,
// GET /events streams the events as Server-Sent Events, each through a
// workspace's rpc.Server made with [rpc.Options.Remote], so that the
// voltmcp.remote policy decides every command (docs/rpc.md, "Remote
// clients").
//
// The package is the top of the library: it imports the engine's public
// packages, rpc, cue, devices and safefile, and only cmd/voltmcp imports
// it.
package daemon
