package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/engine/internal/bound"
	"github.com/voltmcp/voltmcp/engine/internal/line"
	"github.com/voltmcp/voltmcp/engine/internal/oauth"
	"github.com/voltmcp/voltmcp/engine/internal/output"
	"github.com/voltmcp/voltmcp/engine/internal/tasks"
	"github.com/voltmcp/voltmcp/engine/internal/transport"
	"github.com/voltmcp/voltmcp/engine/internal/turn"
	"github.com/voltmcp/voltmcp/engine/serverlog"
)

// Process and connection bounds.
const (
	stderrKeep    = 64 << 10 // bytes of stderr kept per server
	stderrShow    = 4 << 10  // bytes of it shown in a summary
	maxBackoff    = time.Minute
	stableAfter   = time.Minute // a connection this old resets the backoff
	maxLineLength = 16 << 20    // largest JSON-RPC message from a stdio server
)

// supervisor runs one server: it connects on demand or at start, lists
// and caches its metadata, reconnects a keep-alive server after a crash,
// disconnects an idle one, and stops it with its whole process group.
type supervisor struct {
	e   *Engine
	cfg cue.Server
	// ident is cfg's identity (cue.Server.Identity), which keys every
	// piece of state kept about the server: its pins and approval, its
	// cached metadata, its stored outputs.
	ident string
	log   *slog.Logger
	// num numbers this supervisor among the engine's (a reload that
	// changes a server's definition makes a new one).
	num uint64

	ctx    context.Context // ends when the supervisor closes
	cancel context.CancelFunc
	wg     sync.WaitGroup // background work: watchers, refreshes, reconnects

	mu     sync.Mutex
	status Status
	// retired is set once a reload replaced or removed the supervisor:
	// the server's status is then another's (or none), and this one's
	// last moves, as it stops, are not published.
	retired         bool
	lastErr         string
	lastConnectedAt time.Time
	session         *mcp.ClientSession
	conn            *line.Conn        // the session's connection when it is stdio, for calls on the lean path
	tasks           *tasks.Listings   // the task support read off the session's listings (taskTap, HeaderTransport.Listings)
	hcall           *transport.Caller // the lean caller of the Streamable HTTP session hcallOf
	hcallOf         *mcp.ClientSession
	proc            *transport.Process         // the last stdio child started, for its exit status (explain)
	httpT           *transport.HeaderTransport // the last HTTP transport made, for its last status (explain)
	endSession      context.CancelFunc         // ends the context the session was opened with
	transport       string                     // the transport in use
	gen             uint64                     // bumps with each session; callbacks of old ones are ignored
	connecting      chan struct{}
	meta            *Metadata
	listings        uint64 // discoveries that set meta (listing)
	cacheErr        string
	inflight        int
	calls           map[string]string // call id → tool, of calls in flight
	idle            *time.Timer       // the idle timer (touch), armed for session idleGen
	idleGen         uint64
	lastUse         time.Time // when a call last ended, for the idle timer
	// atStart is the listing ListUnlisted queued for this server, until
	// it ends (listed, failed or skipped); uses counts the actions on the
	// server (use), for it.
	atStart      *startListing
	uses         uint64
	attempts     int // connection failures in a row, for the backoff
	refreshing   bool
	refreshAgain bool // asked for while refreshing: refresh once more after
	stderr       *transport.Ring
	serverLog    *serverlog.Writer // the server's log (serverlog)
	scrub        transport.Scrubber
	oauth        oauth.State // for auth type oauth (oauth.go)
	pins         pinCache    // what is known of the server's pins (pins.go)

	// discovery is the listing in flight, or nil: who needs the
	// metadata while it runs waits for it (refresh).
	discovery *discovery

	// lim are the server's bounds and limNotes what was wrong with the
	// environment's; callTimeout is callTimeoutMs, or
	// VOLTMCP_REQUEST_TIMEOUT when an operator set it lower.
	lim         bound.Limits
	limNotes    []string
	callTimeout time.Duration

	// oversized counts HTTP responses cut short at maxMessageBytes: the
	// SDK reports such a call as ended without a response, and the count
	// lets the error say why.
	oversized atomic.Int64
	// progressNotes counts the progress notifications the server sent.
	progressNotes atomic.Int64
}

func newSupervisor(e *Engine, cfg cue.Server) *supervisor {
	ctx, cancel := context.WithCancel(context.Background())
	s := &supervisor{e: e, cfg: cfg, ident: cfg.Identity(), num: e.supervisors.Add(1), ctx: ctx, cancel: cancel, stderr: transport.NewRing(stderrKeep),
		log: e.log.With("server", cfg.ID), status: StatusCold}
	// The config and the environment are fixed for a supervisor's life
	// (a reload makes a new one): its limits are worked out once.
	s.lim, s.limNotes = limits(cfg, e.lookup)
	// Every secret of the definition is known before anything of the
	// server is read, shown or stored: its cached metadata below, a
	// policy's reasons, its first error.
	s.scrub.Add(serverSecrets(cfg, e.lookup)...)
	s.serverLog = serverlog.New(serverlog.Path(e.opts.AgentDir, s.ident), serverlog.Options{Server: cfg.ID, Scrub: s.scrub.Text})
	s.callTimeout = ms(cfg.CallTimeoutMs)
	if env, _ := bound.FromEnv(e.lookup); env.RequestTimeout > 0 && env.RequestTimeout < s.callTimeout {
		s.callTimeout = env.RequestTimeout
	}
	if !cfg.Enabled {
		s.status = StatusDisabled
	}
	meta, err := e.cache.load(cfg)
	if meta != nil {
		l, _ := limits(cfg, e.lookup)
		reboundCached(meta, cfg.ID, l)
		scrubMetadata(meta, &s.scrub)
	}
	s.meta = meta
	if err != nil {
		s.cacheErr = err.Error()
		s.log.Warn("metadata cache", "err", err)
	}
	return s
}

// source is the server as the output store records it.
func (s *supervisor) source() output.Source {
	return output.Source{Server: s.cfg.ID, Identity: s.ident}
}

// setStatus moves to a new status if the move is legal, and publishes
// the move (mcp_server_status_changed).
func (s *supervisor) setStatus(to Status, errText string) {
	s.mu.Lock()
	from := s.status
	if from == to {
		s.mu.Unlock()
		return
	}
	if !canMove(from, to) {
		s.mu.Unlock()
		s.log.Error("refused status change", "err", &transitionError{s.cfg.ID, from, to})
		return
	}
	s.status = to
	if to == StatusError {
		s.lastErr = errText
	}
	if to == StatusReady {
		s.lastConnectedAt = time.Now()
	}
	// Published under s.mu, so that the events of a server's moves are
	// in the order of the moves (publishing never waits).
	if !s.retired {
		s.e.bus.publish(Event{Type: EventServerStatusChanged, Server: s.cfg.ID, Status: to, Previous: from, Error: errText})
	}
	s.mu.Unlock()
}

// retire marks s retired (a reload replaced or removed it) and returns
// its status then.
func (s *supervisor) retire() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.retired = true
	return s.status
}

func (s *supervisor) getStatus() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

// fail records an error: the status becomes error with the scrubbed text.
// The error goes to the server's log too, unless [supervisor.explain]
// put it there.
func (s *supervisor) fail(err error) error {
	logged := transport.Explained(err)
	err = s.scrub.Err(err)
	if !logged {
		s.serverLog.Record(serverlog.KindError, err.Error())
	}
	s.setStatus(StatusError, err.Error())
	return err
}

// ensure returns a ready session, connecting first if needed. Concurrent
// callers share one connection attempt.
func (s *supervisor) ensure(ctx context.Context) (*mcp.ClientSession, error) {
	if s.cfg.Layer.IsProject() {
		// A project server runs only while the project is trusted as it
		// was loaded: `voltmcp untrust` or an edit in another terminal
		// stops it here, within trustRecheck.
		if err := s.e.projectTrustError(ctx); err != nil {
			if s.getStatus() == StatusReady {
				s.disconnect(StatusDisconnected)
			}
			return nil, fmt.Errorf("server %s: %w", s.cfg.ID, err)
		}
	}
	for {
		s.mu.Lock()
		switch s.status {
		case StatusDisabled:
			s.mu.Unlock()
			return nil, s.disabledError()
		case StatusReady, StatusDiscovering:
			// A session whose connect is still discovering is not handed
			// out: what that discovery lists (a pin change held for
			// approval) must be in place before the session is used.
			if s.session != nil && s.connecting == nil {
				cs := s.session
				s.mu.Unlock()
				return cs, nil
			}
		}
		if s.ctx.Err() != nil {
			s.mu.Unlock()
			return nil, fmt.Errorf("server %s: engine closed", s.cfg.ID)
		}
		if ch := s.connecting; ch != nil {
			s.mu.Unlock()
			turn.Yield(ctx)
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		ch := make(chan struct{})
		s.connecting = ch
		s.mu.Unlock()
		turn.Yield(ctx) // starting a server takes a while
		err := s.connect(ctx)
		s.mu.Lock()
		s.connecting = nil
		s.mu.Unlock()
		close(ch)
		if err != nil {
			return nil, err
		}
	}
}

// connect opens a session and discovers the server's metadata.
func (s *supervisor) connect(ctx context.Context) error {
	st := s.getStatus()
	if st == StatusError || st == StatusCold || st == StatusDisconnected || st == StatusNeedsAuth {
		s.setStatus(StatusConnecting, "")
	}
	if s.getStatus() != StatusConnecting {
		return fmt.Errorf("server %s: cannot connect while %s", s.cfg.ID, s.getStatus())
	}
	if err := s.envError(); err != nil {
		// A variable its config references is not set: nothing to start
		// or contact. The error names the variable and the fix.
		s.noteFailure()
		return s.fail(err)
	}
	// The session outlives this call: some transports (SSE) tie their
	// stream to the context Connect gets. So connect under a context of
	// the supervisor's lifetime, cancelled early only by the connect
	// timeout or the caller giving up while connecting.
	// It carries the agent's client of the call, if any, whom a login
	// the connection needs is offered to (CanOfferURL).
	// The tools of a server started are rated and its results shaped:
	// the plugins compile while it starts.
	s.e.guard.Load().warmPlugins()
	sctx, cancelSession := context.WithCancel(withAgentOf(s.ctx, ctx))
	timer := time.AfterFunc(ms(s.cfg.ConnectTimeoutMs), cancelSession)
	stopWatch := context.AfterFunc(ctx, cancelSession)
	cs, conn, kind, status, err := s.open(oauth.WithConnectTimer(sctx, timer, ms(s.cfg.ConnectTimeoutMs)))
	expired := !timer.Stop()
	stopWatch()
	if err != nil {
		if authErr := s.takeAuthFailure(); authErr != nil {
			// The OAuth handler left the server in needs_auth, saying why.
			cancelSession()
			s.noteFailure()
			return authErr
		}
	}
	if err != nil && transport.Unauthorized(status) && ctx.Err() == nil {
		cancelSession()
		s.noteFailure()
		s.mu.Lock()
		s.lastErr = fmt.Sprintf("the server requires authorization (HTTP %d)", status)
		s.mu.Unlock()
		s.serverLog.Record(serverlog.KindError, fmt.Sprintf("the server requires authorization (HTTP %d)", status))
		s.setStatus(StatusNeedsAuth, "")
		return fmt.Errorf("server %s requires authorization (HTTP %d): set its headers or auth", s.cfg.ID, status)
	}
	if err != nil {
		cancelSession()
		if expired && ctx.Err() == nil {
			err = fmt.Errorf("connect timed out after %s", ms(s.cfg.ConnectTimeoutMs))
		} else if ctx.Err() != nil {
			err = ctx.Err()
		}
		s.noteFailure()
		if explained := s.explain("initialize", err); explained != err {
			return s.fail(explained)
		}
		return s.fail(s.withStderr(err))
	}
	if expired {
		// Connected just as the timer fired: the context is gone.
		cancelSession()
		_ = cs.Close()
		s.noteFailure()
		return s.fail(fmt.Errorf("connect timed out after %s", ms(s.cfg.ConnectTimeoutMs)))
	}
	s.mu.Lock()
	if s.ctx.Err() != nil {
		// The supervisor closed while this connection was being made.
		s.mu.Unlock()
		_ = cs.Close()
		cancelSession()
		return fmt.Errorf("server %s: engine closed", s.cfg.ID)
	}
	s.gen++
	gen := s.gen
	s.session, s.conn, s.transport, s.endSession = cs, conn, kind, cancelSession
	s.mu.Unlock()
	s.setStatus(StatusConnected, "")
	s.wg.Add(1)
	go s.watch(cs, gen)
	if err := s.discover(ctx, cs); err != nil {
		s.closeSession(gen)
		return err
	}
	s.touch()
	return nil
}

// open starts the transport and initializes the session. For a stdio
// server it also returns the session's connection, for the engine's own
// calls; for an HTTP server, the status of the last POST, which tells
// an authorization failure from others.
func (s *supervisor) open(ctx context.Context) (*mcp.ClientSession, *line.Conn, string, int32, error) {
	copts := &mcp.ClientOptions{
		ToolListChangedHandler:      func(context.Context, *mcp.ToolListChangedRequest) { s.refreshAsync("tools/list_changed") },
		ResourceListChangedHandler:  func(context.Context, *mcp.ResourceListChangedRequest) { s.refreshAsync("resources/list_changed") },
		PromptListChangedHandler:    func(context.Context, *mcp.PromptListChangedRequest) { s.refreshAsync("prompts/list_changed") },
		ProgressNotificationHandler: s.progress,
	}
	// The server's requests the client answers: the others (sampling,
	// elicitation without a surface that asks, anything else) are
	// refused before they are decoded (line.PeerRequests).
	peerMethods := []string{"ping", "roots/list"}
	if elicit := s.e.opts.Elicit; elicit != nil {
		// Declared only when a surface can ask the user; otherwise the
		// client has no elicitation capability and servers must not ask.
		copts.ElicitationHandler = func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return elicit(ctx, s.cfg.ID, req)
		}
		peerMethods = append(peerMethods, "elicitation/create")
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "voltmcp", Version: s.e.version}, copts)
	if s.cfg.IsStdio() {
		t, err := s.stdioTransport()
		if err != nil {
			return nil, nil, "", 0, err
		}
		t.PeerMethods = peerMethods
		listings := &tasks.Listings{}
		t.Tap = taskTap{listings}
		s.mu.Lock()
		s.tasks = listings
		s.mu.Unlock()
		cs, err := client.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: upstreamProtocol})
		proc := t.Process()
		s.mu.Lock()
		s.proc = proc
		s.mu.Unlock()
		return cs, t.Conn(), cue.TransportStdio, 0, err
	}
	endpoint, err := resolveURL(s.cfg, s.e.lookup, &s.scrub)
	if err != nil {
		return nil, nil, "", 0, err
	}
	ht := &transport.HeaderTransport{Base: s.e.httpBase, Server: s.cfg.ID, Self: s.e.instance, SelfTokens: s.e.opts.GatewayTokens, ViaKey: s.e.viaKey, ViaSent: &s.e.viaSent, SetHeaders: setHeaders(s.cfg, s.e.lookup, &s.scrub),
		MaxMessage: messageCap(s.lim), TooLarge: line.ErrMessageTooLarge, PeerMethods: peerMethods, Trips: &s.oversized, Listings: &tasks.Listings{}}
	s.mu.Lock()
	s.httpT, s.tasks = ht, ht.Listings
	s.mu.Unlock()
	var oauth auth.OAuthHandler
	if s.cfg.Auth != nil && s.cfg.Auth.Type == "oauth" {
		h, err := s.newOAuthHandler(endpoint)
		if err != nil {
			return nil, nil, "", 0, err
		}
		oauth = h
	}
	cs, kind, err := connectHTTP(ctx, client, s.cfg, endpoint, ht, oauth, &mcp.ClientSessionOptions{ProtocolVersion: upstreamProtocol})
	if self, ok := errors.AsType[*transport.SelfError](err); ok {
		self.File = s.cfg.File
	}
	if err == nil && kind == cue.TransportStreamableHTTP && oauth == nil && s.e.opts.Elicit == nil {
		// The engine's calls on this session may take the lean path
		// (leanHTTPCall); the SDK's client runs OAuth and elicitation.
		if ir := cs.InitializeResult(); ir != nil && ir.ProtocolVersion < protocol20260728 {
			h := &transport.Caller{Client: transport.HTTPClient(ht), Endpoint: endpoint, Session: cs.ID(), Protocol: ir.ProtocolVersion,
				Max: messageCap(s.lim), TooLarge: line.ErrMessageTooLarge}
			s.mu.Lock()
			s.hcall, s.hcallOf = h, cs
			s.mu.Unlock()
		}
	}
	return cs, nil, kind, ht.LastPOST(), err
}

// stdioTransport prepares the child process of a stdio server.
func (s *supervisor) stdioTransport() (*transport.Stdio, error) {
	// The scrubber knows the secrets of the env and the arguments since
	// newSupervisor (serverSecrets).
	env, err := childEnv(s.cfg, s.e.lookup)
	if err != nil {
		return nil, err
	}
	args := make([]string, len(s.cfg.Args))
	for i, a := range s.cfg.Args {
		if args[i], err = cue.ExpandEnv(a, s.e.lookup); err != nil {
			return nil, fmt.Errorf("args[%d]: %w", i, err)
		}
	}
	path, dir, err := commandPath(s.cfg, s.e.lookup, env)
	if err != nil {
		return nil, err
	}
	return &transport.Stdio{Command: transport.Command{Path: path, Args: args, Dir: dir, Env: env, Stderr: io.MultiWriter(s.stderr, s.serverLog),
		Grace: s.e.grace, Mark: s.e.runs.Mark()}, MaxLine: messageCap(s.lim), Check: s.e.readerCheck.Load()}, nil
}

// withStderr adds the last line the server wrote to stderr to an error,
// which is usually the reason it failed.
func (s *supervisor) withStderr(err error) error {
	if line := s.stderr.LastLine(); line != "" {
		return fmt.Errorf("%w (stderr: %s)", err, line)
	}
	return err
}

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
