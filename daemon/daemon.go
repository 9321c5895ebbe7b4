package daemon

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/devices"
	"github.com/voltmcp/voltmcp/engine"
	"github.com/voltmcp/voltmcp/rpc"
	"github.com/voltmcp/voltmcp/safefile"
)

// The daemon's files, in [Dir] of the agent directory.
const (
	DirName    = "daemon"
	SocketName = "daemon.sock"
	// LockName is the file the running daemon holds an exclusive flock
	// on, for its whole life, and writes its pid in: two daemons never
	// race for the socket.
	LockName = "daemon.pid"
	// LogName is where a daemon started in the background ([Start])
	// writes its stderr.
	LogName = "daemon.log"
	// DevicesName is the paired-device store (package devices): each
	// device's name, id and token hash, 0600.
	DevicesName = "devices.json"
)

// The daemon's own methods, answered before a connection is handed to a
// workspace's [rpc.Server]: each only as a connection's first request.
const (
	// AttachMethod chooses the connection's workspace: params
	// {"project": "/abs/path"}, or {} (or no params) for the user-level
	// workspace. The answer is an [Attached].
	AttachMethod = "attach_workspace"
	// StatusMethod answers a [Status]; the connection then ends.
	StatusMethod = "daemon_status"
	// StopMethod stops the daemon (its engines are closed, their audit
	// written); the answer comes first, then the connection ends.
	StopMethod = "daemon_stop"
)

// The defaults of [Options].
const (
	DefaultMaxConns      = 512
	DefaultMaxWorkspaces = 64
	// firstLineTimeout bounds how long a new connection may take to send
	// its first request, which holds a connection slot meanwhile.
	firstLineTimeout = 30 * time.Second
	// maxFirstLine bounds the first request, read before a workspace's
	// rpc.Server (with its own bound) takes the connection.
	maxFirstLine = 64 << 10
)

// CodeBusy is the error code of an answer the daemon gives a connection
// over [Options.MaxConns] before it closes it, and of an attach it cannot
// serve: a workspace past [Options.MaxWorkspaces], one whose engine did
// not start (the message says why), or a daemon that is stopping.
const CodeBusy = -32000

// Dir is the daemon's directory in agentDir.
func Dir(agentDir string) string { return filepath.Join(agentDir, DirName) }

// SocketPath is the daemon's socket in agentDir.
func SocketPath(agentDir string) string { return filepath.Join(Dir(agentDir), SocketName) }

// LockPath is the daemon's pid and lock file in agentDir.
func LockPath(agentDir string) string { return filepath.Join(Dir(agentDir), LockName) }

// DevicesPath is the paired-device store of agentDir.
func DevicesPath(agentDir string) string { return filepath.Join(Dir(agentDir), DevicesName) }

// LogPath is the log of a daemon started by [Start] in agentDir.
func LogPath(agentDir string) string { return filepath.Join(Dir(agentDir), LogName) }

// Options configure [Run].
type Options struct {
	// AgentDir is the agent directory the daemon serves in, and its
	// engines keep their state in (pins, audit, tokens, caches).
	// Required.
	AgentDir string
	// Engine returns the options of a workspace's engine, as `voltmcp
	// serve` builds them, for project (an absolute, canonical directory,
	// or "" for the user-level workspace). Run sets Surface
	// (cue.SurfaceDaemon), Project, Authorize and DeviceAuthorize (the
	// workspace's [rpc.Auth]); for the user-level workspace it sets
	// NoApprove, and Project to [Dir] (where no project config is).
	// Required.
	Engine func(project string) engine.Options
	// RPC are the options of each workspace's [rpc.Server]; Auth is set
	// per workspace.
	RPC rpc.Options
	// MaxConns bounds the connections served at once; one more is
	// answered a CodeBusy error and closed. Zero: [DefaultMaxConns].
	MaxConns int
	// MaxWorkspaces bounds the workspaces (engines) the daemon holds; an
	// attach_workspace past it is answered CodeBusy. Zero:
	// [DefaultMaxWorkspaces].
	MaxWorkspaces int
	// Logger receives the daemon's diagnostics. Zero: discard.
	Logger *slog.Logger
	// Ready, when set, is called once the socket (and the HTTP
	// listener, with HTTPAddr) listens.
	Ready func()
	// HTTPAddr, when set, is a loopback address (127.0.0.1, ::1 or
	// localhost, with a port; 0 picks one) where the daemon also serves
	// paired devices over HTTP (see [CheckLoopback] and docs/rpc.md):
	// each request needs a device token of Devices, and the
	// voltmcp.remote policy decides each command. Any other address is
	// refused.
	HTTPAddr string
	// Devices is the paired-device store the HTTP listener checks each
	// request's token against. Required with HTTPAddr.
	Devices *devices.Store
	// MaxHTTPConns bounds the HTTP listener's connections at once; one
	// more is closed. Zero: [DefaultMaxHTTPConns].
	MaxHTTPConns int
}

// Attached is the answer of [AttachMethod].
type Attached struct {
	// Project is the workspace's canonical project directory; empty for
	// the user-level workspace.
	Project string `json:"project"`
	PID     int    `json:"pid"`
}

// Status is the answer of [StatusMethod].
type Status struct {
	PID         int             `json:"pid"`
	Socket      string          `json:"socket"`
	AgentDir    string          `json:"agentDir"`
	Started     string          `json:"started"`
	Connections int             `json:"connections"`
	Workspaces  []WorkspaceInfo `json:"workspaces"`
	// HTTP is the address of the listener for paired devices, when the
	// daemon runs one (--http).
	HTTP string `json:"http,omitempty"`
}

// WorkspaceInfo is one workspace of a [Status].
type WorkspaceInfo struct {
	// Project is empty for the user-level workspace.
	Project     string `json:"project"`
	Connections int    `json:"connections"`
	Servers     int    `json:"servers"`
	Error       string `json:"error,omitempty"`
}

// RunningError is [Run]'s error when a daemon already runs in the agent
// directory.
type RunningError struct {
	PID  int
	Lock string
}

func (e *RunningError) Error() string {
	pid := "unknown pid"
	if e.PID > 0 {
		pid = "pid " + strconv.Itoa(e.PID)
	}
	return fmt.Sprintf("a daemon is already running (%s; lock %s): 'voltmcp daemon stop' stops it", pid, e.Lock)
}

// daemon is one running daemon.
type daemon struct {
	opts    Options
	log     *slog.Logger
	ctx     context.Context // the engines' and connections' context
	stop    context.CancelFunc
	socket  string
	started time.Time

	httpAddr string // the HTTP listener's address, when it runs

	mu         sync.Mutex
	workspaces map[string]*workspace
	conns      int
	stopping   bool // no HTTP request is counted into handlers from here
	handlers   sync.WaitGroup
}

// workspace is one engine and its rpc.Server, made on first use.
type workspace struct {
	project string
	ready   chan struct{} // closed once eng or err is set
	eng     *engine.Engine
	srv     *rpc.Server
	// remote is the workspace's server for paired devices (the HTTP
	// listener): rpc.Options.Remote, the same engine and Auth.
	remote *rpc.Server
	err    error
	conns  int
}

// Run runs the daemon until ctx ends or a client asks it to stop, then
// closes its engines (their audit backlogs are written) and removes its
// socket. It fails at once, naming the path, when the daemon directory
// or socket is not this user's alone, when something other than a
// socket is at the socket's path, and with a *[RunningError] when a
// daemon already runs there.
func Run(ctx context.Context, opts *Options) error {
	if opts == nil || opts.AgentDir == "" || opts.Engine == nil {
		return errors.New("daemon: Options.AgentDir and Options.Engine are required")
	}
	d := &daemon{opts: *opts, log: opts.Logger, workspaces: map[string]*workspace{}, started: time.Now()}
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	if d.opts.MaxConns <= 0 {
		d.opts.MaxConns = DefaultMaxConns
	}
	if d.opts.MaxWorkspaces <= 0 {
		d.opts.MaxWorkspaces = DefaultMaxWorkspaces
	}
	dir := Dir(opts.AgentDir)
	if err := privateDir(dir); err != nil {
		return err
	}
	unlock, err := lock(ctx, LockPath(opts.AgentDir))
	if err != nil {
		return err
	}
	defer unlock()
	d.socket = SocketPath(opts.AgentDir)
	ln, err := ListenSocket(d.socket)
	if err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	d.ctx, d.stop = context.WithCancel(ctx)
	defer d.stop()
	waitHTTP := func() {}
	if opts.HTTPAddr != "" {
		if waitHTTP, err = d.listenHTTP(); err != nil {
			ln.Close()
			os.Remove(d.socket)
			return err
		}
	}
	d.log.Info("voltmcp daemon: listening", "socket", d.socket, "pid", os.Getpid())
	if opts.Ready != nil {
		opts.Ready()
	}
	go func() {
		<-d.ctx.Done()
		ln.Close()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			if d.ctx.Err() == nil {
				d.log.Error("voltmcp daemon: accept", "err", err)
				time.Sleep(10 * time.Millisecond) // e.g. out of file descriptors: let a connection end
				continue
			}
			break
		}
		d.mu.Lock()
		busy := d.conns >= d.opts.MaxConns
		if !busy {
			d.conns++
			d.handlers.Add(1)
		}
		d.mu.Unlock()
		if busy {
			go refuse(c, fmt.Sprintf("voltmcp daemon: %d connections are open, the limit; try again when one ends", d.opts.MaxConns))
			continue
		}
		go func() {
			defer d.handlers.Done()
			d.serve(c)
			d.mu.Lock()
			d.conns--
			d.mu.Unlock()
		}()
	}
	// Stopping: no connection is served from here, then the engines
	// close, their audit written, before the lock is let go.
	os.Remove(d.socket)
	d.mu.Lock()
	d.stopping = true
	d.mu.Unlock()
	waitHTTP()
	d.handlers.Wait()
	d.mu.Lock()
	ws := d.workspaces
	d.workspaces = nil
	d.mu.Unlock()
	var errs []error
	for _, w := range ws {
		<-w.ready
		if w.eng != nil {
			if err := w.eng.Close(); err != nil {
				errs = append(errs, fmt.Errorf("workspace %s: %w", w.name(), err))
			}
		}
	}
	d.log.Info("voltmcp daemon: stopped", "pid", os.Getpid())
	return errors.Join(errs...)
}

// name is the workspace's name in messages.
func (w *workspace) name() string {
	if w.project == "" {
		return "(user)"
	}
	return w.project
}

// privateDir makes dir 0700 when missing and refuses it, naming it,
// when it is not this user's alone.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	if err := CheckPrivateDir(dir); err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	if fi, err := os.Lstat(dir); err == nil && fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("daemon: directory %s has mode %04o: others could enter it and reach the socket; use a directory only you can enter (chmod 700)", dir, fi.Mode().Perm())
	}
	return nil
}

// lock takes the daemon's lock file, without waiting: a daemon that
// holds it is a *RunningError with the pid it wrote. The unlock it
// returns empties the pid and lets the lock go.
func lock(ctx context.Context, path string) (unlock func(), err error) {
	f, fi, err := safefile.OpenAppend(path, 0o600)
	if err != nil {
		return nil, fmt.Errorf("daemon: lock file %s: %w", path, err)
	}
	if err := checkOwner(fi); err != nil {
		f.Close()
		return nil, fmt.Errorf("daemon: lock file %s %w", path, err)
	}
	try, cancel := context.WithCancel(ctx)
	err = safefile.LockFile(try, f, cancel) // held: cancel, and no wait
	cancel()
	if err != nil {
		f.Close()
		if ctx.Err() == nil && errors.Is(err, context.Canceled) {
			return nil, &RunningError{PID: readPID(path), Lock: path}
		}
		return nil, fmt.Errorf("daemon: lock file %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = fmt.Fprintf(f, "%d\n", os.Getpid())
	}
	return func() {
		_ = f.Truncate(0)
		safefile.UnlockFile(f)
		f.Close()
	}, nil
}

// readPID reads the pid a daemon wrote in its lock file; 0 when none.
func readPID(path string) int {
	b, err := safefile.ReadFile(path, &safefile.ReadOptions{NoFollow: true, MaxSize: 64})
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// refuse answers c one error and closes it.
func refuse(c net.Conn, msg string) {
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = c.Write(errorLine(nil, CodeBusy, msg))
	c.Close()
}

// errorLine is one JSON-RPC error answer.
func errorLine(id json.RawMessage, code int, msg string) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   rpc.Error       `json:"error"`
	}{"2.0", id, rpc.Error{Code: code, Message: msg}})
	return append(b, '\n')
}

// resultLine is one JSON-RPC answer.
func resultLine(id json.RawMessage, result any) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result"`
	}{"2.0", id, result})
	if err != nil {
		return errorLine(id, rpc.CodeInternalError, err.Error())
	}
	return append(b, '\n')
}

// firstRequest is the part of a connection's first line the daemon
// reads.
type firstRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// serve reads c's first request: the daemon's own methods are answered
// here; any other request goes, with the rest of the connection, to the
// user-level workspace's rpc.Server.
func (d *daemon) serve(c net.Conn) {
	r := bufio.NewReaderSize(c, maxFirstLine)
	_ = c.SetReadDeadline(time.Now().Add(firstLineTimeout))
	// A daemon that stops does not wait for a first request.
	stopWaiting := context.AfterFunc(d.ctx, func() { c.Close() })
	line, err := r.ReadSlice('\n')
	if !stopWaiting() {
		c.Close()
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		refuse(c, fmt.Sprintf("voltmcp daemon: the first request is over %d bytes", maxFirstLine))
		return
	case err != nil && len(bytes.TrimSpace(line)) == 0:
		c.Close()
		return
	}
	line = bytes.Clone(line)
	var req firstRequest
	_ = json.Unmarshal(line, &req)
	project, handOn := "", true
	switch req.Method {
	case AttachMethod:
		p, perr := decodeAttach(req.Params)
		if perr != nil {
			refuseID(c, req.ID, rpc.CodeInvalidParams, perr.Error())
			return
		}
		project, handOn = p, false
	case StatusMethod:
		_, _ = c.Write(resultLine(req.ID, d.status()))
		c.Close()
		return
	case StopMethod:
		d.log.Info("voltmcp daemon: stopping, as a client asked")
		_, _ = c.Write(resultLine(req.ID, map[string]any{"stopping": true, "pid": os.Getpid()}))
		c.Close()
		d.stop()
		return
	}
	w, err := d.workspace(project)
	if err != nil {
		// The workspace's engine did not start (its config, its
		// policies), or too many are open, or the daemon is stopping.
		refuseID(c, req.ID, CodeBusy, err.Error())
		return
	}
	defer d.detach(w)
	conn := &bufConn{Conn: c, r: r}
	if handOn {
		conn.first = line
	} else if _, err := c.Write(resultLine(req.ID, Attached{Project: w.project, PID: os.Getpid()})); err != nil {
		c.Close()
		return
	}
	if err := w.srv.Serve(d.ctx, conn); err != nil {
		d.log.Warn("voltmcp daemon: connection ended", "workspace", w.name(), "err", err)
	}
}

// refuseID answers c's request id an error and closes c.
func refuseID(c net.Conn, id json.RawMessage, code int, msg string) {
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = c.Write(errorLine(id, code, msg))
	c.Close()
}

// decodeAttach decodes attach_workspace's params strictly and returns
// the workspace's canonical project directory ("" for the user level).
func decodeAttach(raw json.RawMessage) (string, error) {
	var p struct {
		Project *string `json:"project"`
	}
	if len(bytes.TrimSpace(raw)) > 0 && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			return "", fmt.Errorf("%s params: %v; want {\"project\": \"/abs/path\"}", AttachMethod, strings.TrimPrefix(err.Error(), "json: "))
		}
		if dec.More() {
			return "", fmt.Errorf("%s params: trailing data", AttachMethod)
		}
	}
	if p.Project == nil || *p.Project == "" {
		return "", nil
	}
	return CanonicalProject(*p.Project)
}

// CanonicalProject is the workspace key of a project directory: dir
// must be absolute and an existing directory; the answer is its path
// with symlinks resolved and cleaned, so that two spellings of one
// directory are one workspace.
func CanonicalProject(dir string) (string, error) {
	if !filepath.IsAbs(dir) {
		return "", fmt.Errorf("project %q: want an absolute path", dir)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("project %s: %w", dir, safefile.Pathless(err))
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("project %s: %w", dir, safefile.Pathless(err))
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("project %s: not a directory", dir)
	}
	return filepath.Clean(real), nil
}

// busyError is a workspace refused past MaxWorkspaces.
type busyError struct{ msg string }

func (e *busyError) Error() string { return e.msg }

// workspace returns project's workspace, making its engine on first use
// (others asking meanwhile wait for it), and counts one connection in
// it; detach counts it out.
func (d *daemon) workspace(project string) (*workspace, error) {
	d.mu.Lock()
	if d.workspaces == nil {
		d.mu.Unlock()
		return nil, errors.New("voltmcp daemon: stopping")
	}
	w, ok := d.workspaces[project]
	if !ok {
		if len(d.workspaces) >= d.opts.MaxWorkspaces {
			d.mu.Unlock()
			return nil, &busyError{fmt.Sprintf("voltmcp daemon: %d workspaces are open, the limit; restart the daemon to let go of the others", d.opts.MaxWorkspaces)}
		}
		w = &workspace{project: project, ready: make(chan struct{})}
		d.workspaces[project] = w
	}
	w.conns++
	d.mu.Unlock()
	if !ok {
		d.open(w)
	}
	select {
	case <-w.ready:
	case <-d.ctx.Done():
		d.detach(w)
		return nil, errors.New("voltmcp daemon: stopping")
	}
	if w.err != nil {
		d.detach(w)
		return nil, w.err
	}
	return w, nil
}

// open makes w's engine and server.
func (d *daemon) open(w *workspace) {
	defer close(w.ready)
	o := d.opts.Engine(w.project)
	o.Surface = cue.SurfaceDaemon
	if w.project == "" {
		o.Project, o.Approve, o.NoApprove = Dir(d.opts.AgentDir), false, true
	} else {
		o.Project = w.project
	}
	auth := rpc.NewAuth()
	o.Authorize, o.DeviceAuthorize = auth.Authorize, auth.DeviceAuthorize
	eng, err := engine.New(d.ctx, &o)
	if err != nil {
		w.err = fmt.Errorf("workspace %s: %w", w.name(), err)
		d.log.Error("voltmcp daemon: workspace", "workspace", w.name(), "err", err)
		d.mu.Lock()
		if d.workspaces != nil && d.workspaces[w.project] == w {
			delete(d.workspaces, w.project) // the next attach tries again
		}
		d.mu.Unlock()
		return
	}
	for _, diag := range eng.Diagnostics() {
		if diag.Severity != cue.SeverityInfo {
			d.log.Warn("voltmcp daemon: config", "workspace", w.name(), "diagnostic", diag.String())
		}
	}
	if off := eng.TurnedOff(); off != "" {
		d.log.Warn("voltmcp daemon: turned off", "workspace", w.name(), "why", off)
	}
	ro := d.opts.RPC
	ro.Auth = auth
	w.eng, w.srv = eng, rpc.NewServer(eng, &ro)
	ro.Remote = true
	w.remote = rpc.NewServer(eng, &ro)
	// Servers never listed are listed once in the background, as serve
	// does, so that an agent's first search finds their tools.
	eng.ListUnlisted(d.ctx)
	// Config changes apply while the daemon runs (engine.Engine.Watch,
	// which ends when the engine closes).
	go func() {
		if err := eng.Watch(d.ctx, nil); err != nil {
			d.log.Warn("voltmcp daemon: config watch", "workspace", w.name(), "err", err)
		}
	}()
	d.log.Info("voltmcp daemon: workspace opened", "workspace", w.name())
}

// detach counts a connection out of w.
func (d *daemon) detach(w *workspace) {
	d.mu.Lock()
	w.conns--
	d.mu.Unlock()
}

// status is the daemon's Status; the connection that asks is not counted.
func (d *daemon) status() Status {
	d.mu.Lock()
	defer d.mu.Unlock()
	st := Status{PID: os.Getpid(), Socket: d.socket, AgentDir: d.opts.AgentDir, Started: d.started.UTC().Format(time.RFC3339), Connections: d.conns - 1, Workspaces: []WorkspaceInfo{}, HTTP: d.httpAddr}
	for _, w := range d.workspaces {
		wi := WorkspaceInfo{Project: w.project, Connections: w.conns}
		select {
		case <-w.ready:
			if w.eng != nil {
				wi.Servers = len(w.eng.Servers())
			} else if w.err != nil {
				wi.Error = w.err.Error()
			}
		default:
		}
		st.Workspaces = append(st.Workspaces, wi)
	}
	sort.Slice(st.Workspaces, func(i, j int) bool { return st.Workspaces[i].Project < st.Workspaces[j].Project })
	return st
}

// bufConn is a connection whose reads come first from first (a request
// the daemon read and hands on), then from r (which may hold more).
type bufConn struct {
	net.Conn
	r     *bufio.Reader
	first []byte
}

func (b *bufConn) Read(p []byte) (int, error) {
	if len(b.first) > 0 {
		n := copy(p, b.first)
		b.first = b.first[n:]
		return n, nil
	}
	return b.r.Read(p)
}

// SyscallConn is the connection's, so that the RPC server may write to
// it without waiting (see package rpc).
func (b *bufConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := b.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errors.ErrUnsupported
}

var _ io.ReadWriteCloser = (*bufConn)(nil)
