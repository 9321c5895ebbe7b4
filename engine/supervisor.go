package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
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
	"github.com/voltmcp/voltmcp/engine/internal/transport"
	"github.com/voltmcp/voltmcp/engine/internal/turn"
	"github.com/voltmcp/voltmcp/redact"
)

// Discovery bounds: a server that pages forever is cut off.
const (
	maxPages      = 100
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
	log *slog.Logger
	// num numbers this supervisor among the engine's (a reload that
	// changes a server's definition makes a new one).
	num uint64

	ctx    context.Context // ends when the supervisor closes
	cancel context.CancelFunc
	wg     sync.WaitGroup // background work: watchers, refreshes, reconnects

	mu              sync.Mutex
	status          Status
	lastErr         string
	lastConnectedAt time.Time
	session         *mcp.ClientSession
	conn            *line.Conn        // the session's connection when it is stdio, for calls on the lean path
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
	attempts        int       // connection failures in a row, for the backoff
	refreshing      bool
	refreshAgain    bool // asked for while refreshing: refresh once more after
	stderr          *transport.Ring
	scrub           transport.Scrubber
	oauth           oauth.State // for auth type oauth (oauth.go)
	pins            pinCache    // what is known of the server's pins (pins.go)

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
	s := &supervisor{e: e, cfg: cfg, num: e.supervisors.Add(1), ctx: ctx, cancel: cancel, stderr: transport.NewRing(stderrKeep),
		log: e.log.With("server", cfg.ID), status: StatusCold}
	// The config and the environment are fixed for a supervisor's life
	// (a reload makes a new one): its limits are worked out once.
	s.lim, s.limNotes = limits(cfg, e.lookup)
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
	}
	s.meta = meta
	if err != nil {
		s.cacheErr = err.Error()
		s.log.Warn("metadata cache", "err", err)
	}
	return s
}

// setStatus moves to a new status if the move is legal, and publishes it.
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
	s.mu.Unlock()
	s.e.bus.publish(Event{Type: EventServerStatusChanged, Server: s.cfg.ID, Status: to, Previous: from, Error: errText})
}

func (s *supervisor) getStatus() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

// fail records an error: the status becomes error with the scrubbed text.
func (s *supervisor) fail(err error) error {
	err = s.scrub.Err(err)
	s.setStatus(StatusError, err.Error())
	return err
}

// ensure returns a ready session, connecting first if needed. Concurrent
// callers share one connection attempt.
func (s *supervisor) ensure(ctx context.Context) (*mcp.ClientSession, error) {
	for {
		s.mu.Lock()
		switch s.status {
		case StatusDisabled:
			s.mu.Unlock()
			if s.cfg.Invalid {
				return nil, fmt.Errorf("server %s is disabled: its config has errors (run voltmcp vet)", s.cfg.ID)
			}
			return nil, fmt.Errorf("server %s is disabled", s.cfg.ID)
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
	// The session outlives this call: some transports (SSE) tie their
	// stream to the context Connect gets. So connect under a context of
	// the supervisor's lifetime, cancelled early only by the connect
	// timeout or the caller giving up while connecting.
	sctx, cancelSession := context.WithCancel(s.ctx)
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
	if elicit := s.e.opts.Elicit; elicit != nil {
		// Declared only when a surface can ask the user; otherwise the
		// client has no elicitation capability and servers must not ask.
		copts.ElicitationHandler = func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return elicit(ctx, s.cfg.ID, req)
		}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "voltmcp", Version: s.e.version}, copts)
	if s.cfg.IsStdio() {
		t, err := s.stdioTransport()
		if err != nil {
			return nil, nil, "", 0, err
		}
		cs, err := client.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: upstreamProtocol})
		proc := t.process()
		s.mu.Lock()
		s.proc = proc
		s.mu.Unlock()
		return cs, t.lineConn(), cue.TransportStdio, 0, err
	}
	endpoint, err := resolveURL(s.cfg, s.e.lookup, &s.scrub)
	if err != nil {
		return nil, nil, "", 0, err
	}
	ht := &transport.HeaderTransport{Base: s.e.httpBase, Server: s.cfg.ID, SetHeaders: setHeaders(s.cfg, s.e.lookup, &s.scrub),
		MaxMessage: messageCap(s.lim), TooLarge: line.ErrMessageTooLarge, Trips: &s.oversized}
	s.mu.Lock()
	s.httpT = ht
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
func (s *supervisor) stdioTransport() (*stdioTransport, error) {
	env, secrets, err := childEnv(s.cfg, s.e.lookup)
	if err != nil {
		return nil, err
	}
	s.scrub.Add(secrets...)
	// Literal credentials in the arguments (--token V, a URL's query):
	// a child that echoes its command line must not show them.
	s.scrub.Add(redact.ArgSecrets(s.cfg.Args)...)
	args := make([]string, len(s.cfg.Args))
	for i, a := range s.cfg.Args {
		if args[i], err = cue.ExpandEnv(a, s.e.lookup); err != nil {
			return nil, fmt.Errorf("args[%d]: %w", i, err)
		}
		if cue.HasEnvRef(a) {
			s.scrub.Add(args[i])
		}
	}
	cwd, err := cue.ExpandEnv(s.cfg.Cwd, s.e.lookup)
	if err != nil {
		return nil, fmt.Errorf("cwd: %w", err)
	}
	dir := s.cfg.WorkDir(cwd)
	command, err := cue.ExpandEnv(s.cfg.Command, s.e.lookup)
	if err != nil {
		return nil, fmt.Errorf("command: %w", err)
	}
	path, err := transport.ResolveCommand(command, dir, env)
	if err != nil {
		return nil, err
	}
	return &stdioTransport{cmd: transport.Command{Path: path, Args: args, Dir: dir, Env: env, Stderr: s.stderr,
		Grace: s.e.grace, Mark: s.e.runs.Mark()}, maxLine: messageCap(s.lim), check: s.e.readerCheck.Load()}, nil
}

// discovery is one listing of a server's metadata in flight; done
// closes when it ends, err then saying how.
type discovery struct {
	done chan struct{}
	err  error
}

// wait waits for the discovery to end, or for ctx, and returns its
// error. It lets ctx's reader go first: a discovery takes a while.
func (d *discovery) wait(ctx context.Context) error {
	select {
	case <-d.done:
		return d.err
	default:
	}
	turn.Yield(ctx)
	select {
	case <-d.done:
		return d.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// discover lists the server's tools, resources, resource templates and
// prompts, following cursors within bounds, and caches the result.
// While it runs, s.discovery is it, for others to wait for.
func (s *supervisor) discover(ctx context.Context, cs *mcp.ClientSession) (err error) {
	d := &discovery{done: make(chan struct{})}
	s.mu.Lock()
	s.discovery = d
	s.mu.Unlock()
	defer func() {
		d.err = err
		s.mu.Lock()
		if s.discovery == d {
			s.discovery = nil
		}
		s.mu.Unlock()
		close(d.done)
	}()
	s.setStatus(StatusDiscovering, "")
	dctx, cancel := context.WithTimeout(ctx, ms(s.cfg.DiscoveryTimeoutMs))
	defer cancel()
	m, err := s.list(dctx, cs)
	if err != nil {
		if dctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
			err = fmt.Errorf("discovery timed out after %s", ms(s.cfg.DiscoveryTimeoutMs))
		}
		return s.fail(fmt.Errorf("discover: %w", err))
	}
	// The tools are rated until the caller gives up or the engine
	// closes, whichever comes first: a classifier that takes its whole
	// deadline for each tool holds neither up for every tool in turn.
	rctx, stopRating := context.WithCancel(ctx)
	defer stopRating()
	defer context.AfterFunc(s.ctx, stopRating)()
	pinEvents, err := s.observePins(rctx, m)
	if err != nil {
		return s.fail(fmt.Errorf("discover: %w", err))
	}
	if err := s.e.cache.save(m); err != nil {
		s.log.Warn("metadata cache", "err", err)
	}
	s.mu.Lock()
	s.meta, s.cacheErr = m, ""
	s.listings++
	s.mu.Unlock()
	s.setStatus(StatusReady, "")
	if sum := boundsSummary(m); sum != "" {
		s.e.bus.publish(Event{Type: EventMetadataBounded, Server: s.cfg.ID, Message: sum})
	}
	for _, ev := range pinEvents {
		s.e.bus.publish(ev)
	}
	s.e.bus.publish(Event{Type: EventServersChanged, Server: s.cfg.ID})
	return nil
}

// list lists the server's metadata and bounds it (see bounder): nothing
// of it is kept unbounded, not even between pages.
func (s *supervisor) list(ctx context.Context, cs *mcp.ClientSession) (*Metadata, error) {
	l, limitNotes := s.lim, s.limNotes
	b := newBounder(s.cfg.ID, l)
	init := cs.InitializeResult()
	m := &Metadata{Format: cacheFormat, Server: s.cfg.ID, ConfigHash: configHash(s.cfg), FetchedAt: time.Now().UTC(), Tools: []Tool{}}
	s.mu.Lock()
	m.Transport = s.transport
	s.mu.Unlock()
	var caps *mcp.ServerCapabilities
	if init != nil {
		caps = init.Capabilities
		// What the server says of itself is untrusted text like its
		// tools' metadata: cleaned, and capped like a title.
		m.ProtocolVersion = output.CleanText(init.ProtocolVersion, serverInfoMaxChars)
		if init.ServerInfo != nil {
			m.Name = output.CleanText(init.ServerInfo.Name, serverInfoMaxChars)
			m.Title = output.CleanText(init.ServerInfo.Title, l.MaxTitleChars)
			m.Version = output.CleanText(init.ServerInfo.Version, serverInfoMaxChars)
		}
		m.Capabilities, _ = json.Marshal(caps)
	}
	if caps == nil || caps.Tools != nil {
		err := pages(ctx, "tools", &m.Notes, func(cursor string) (string, error) {
			r, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
			if err != nil {
				return "", s.explain("tools/list", err)
			}
			page := make([]Tool, 0, len(r.Tools))
			for _, t := range r.Tools {
				if t == nil {
					continue
				}
				page = append(page, rawToolOf(t))
			}
			b.addTools(page)
			return r.NextCursor, nil
		})
		if err != nil {
			return nil, err
		}
	}
	if caps != nil && caps.Resources != nil {
		err := pages(ctx, "resources", &m.Notes, func(cursor string) (string, error) {
			r, err := cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
			if err != nil {
				return "", s.explain("resources/list", err)
			}
			for _, x := range r.Resources {
				if x != nil {
					m.Resources = append(m.Resources, Resource{URI: x.URI, Name: x.Name, Title: x.Title, Description: x.Description, MIMEType: x.MIMEType, Size: x.Size})
				}
			}
			return r.NextCursor, nil
		})
		if err != nil {
			return nil, err
		}
		err = pages(ctx, "resource templates", &m.Notes, func(cursor string) (string, error) {
			r, err := cs.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursor})
			if err != nil {
				return "", s.explain("resources/templates/list", err)
			}
			for _, x := range r.ResourceTemplates {
				if x != nil {
					m.ResourceTemplates = append(m.ResourceTemplates, ResourceTemplate{URITemplate: x.URITemplate, Name: x.Name, Title: x.Title, Description: x.Description, MIMEType: x.MIMEType})
				}
			}
			return r.NextCursor, nil
		})
		if err != nil {
			m.Notes = append(m.Notes, "resource templates: "+s.scrub.Err(err).Error())
		}
	}
	if caps != nil && caps.Prompts != nil {
		err := pages(ctx, "prompts", &m.Notes, func(cursor string) (string, error) {
			r, err := cs.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursor})
			if err != nil {
				return "", s.explain("prompts/list", err)
			}
			for _, x := range r.Prompts {
				if x == nil {
					continue
				}
				p := Prompt{Name: x.Name, Title: x.Title, Description: x.Description}
				for _, a := range x.Arguments {
					if a != nil {
						p.Arguments = append(p.Arguments, PromptArgument{Name: a.Name, Description: a.Description, Required: a.Required})
					}
				}
				m.Prompts = append(m.Prompts, p)
			}
			return r.NextCursor, nil
		})
		if err != nil {
			return nil, err
		}
	}
	b.finish(m)
	m.Notes = append(m.Notes, limitNotes...)
	m.Limits = limitsKey(l)
	return m, nil
}

// pages calls page with each cursor until there is none, at most
// maxPages times, and stops early at a cursor it has seen before.
func pages(ctx context.Context, what string, notes *[]string, page func(cursor string) (string, error)) error {
	seen := map[string]bool{}
	cursor := ""
	for i := 0; ; i++ {
		if i == maxPages {
			*notes = append(*notes, fmt.Sprintf("%s: stopped after %d pages", what, maxPages))
			return nil
		}
		next, err := page(cursor)
		if err != nil {
			return fmt.Errorf("list %s: %w", what, err)
		}
		if next == "" {
			return nil
		}
		if seen[next] {
			*notes = append(*notes, fmt.Sprintf("%s: the server repeated a cursor; stopped after %d pages", what, i+1))
			return nil
		}
		seen[next] = true
		cursor = next
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// toolOf converts a listed tool, as is, and hashes it.
func toolOf(t *mcp.Tool) Tool {
	out := rawToolOf(t)
	out.Hash = toolHash(out)
	return out
}

// rawToolOf converts a listed tool, as is, without its hash: the bounder
// hashes what it keeps.
func rawToolOf(t *mcp.Tool) Tool {
	out := Tool{Name: t.Name, Title: t.Title, Description: t.Description}
	if t.InputSchema != nil {
		out.InputSchema, _ = json.Marshal(t.InputSchema)
	}
	if t.OutputSchema != nil {
		out.OutputSchema, _ = json.Marshal(t.OutputSchema)
	}
	if t.Annotations != nil {
		out.Annotations, _ = json.Marshal(t.Annotations)
	}
	return out
}

// watch waits for a session to end. An end the supervisor did not ask for
// is a crash: the status becomes error, and a keep-alive server is
// reconnected after a backoff.
func (s *supervisor) watch(cs *mcp.ClientSession, gen uint64) {
	defer s.wg.Done()
	_ = cs.Wait()
	// Close even a session the server ended: it releases what the SDK
	// holds for it (the subscription stream, the process).
	_ = cs.Close()
	s.mu.Lock()
	current := s.gen == gen && s.session == cs
	if current {
		s.session, s.conn = nil, nil
		if s.endSession != nil {
			s.endSession()
			s.endSession = nil
		}
	}
	status := s.status
	s.mu.Unlock()
	if !current || status == StatusDisconnecting || s.ctx.Err() != nil {
		return
	}
	s.noteFailure()
	ended := errors.New("the server closed the connection")
	if s.cfg.IsStdio() {
		// Its exit status and stderr tail say why.
		_ = s.fail(s.explain("", fmt.Errorf("%w: %w", ended, io.EOF)))
	} else {
		_ = s.fail(s.withStderr(ended))
	}
	if s.cfg.Lifecycle == "keep-alive" {
		s.reconnectLater()
	}
}

// noteFailure counts a failure for the backoff, forgetting old ones once
// a connection has been stable.
func (s *supervisor) noteFailure() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.lastConnectedAt.IsZero() && time.Since(s.lastConnectedAt) > stableAfter {
		s.attempts = 0
	}
	s.attempts++
}

// backoff is the wait before reconnect attempt n: 0.5 s doubling, capped.
func backoff(n int) time.Duration {
	d := 500 * time.Millisecond
	for i := 1; i < n && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
}

// reconnectLater reconnects a keep-alive server after the backoff, and
// keeps trying until it succeeds or the supervisor closes.
func (s *supervisor) reconnectLater() {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			s.mu.Lock()
			wait := backoff(s.attempts)
			s.mu.Unlock()
			select {
			case <-s.ctx.Done():
				return
			case <-time.After(wait):
			}
			if st := s.getStatus(); st != StatusError {
				return // someone else connected, disconnected or disabled it
			}
			if _, err := s.ensure(s.ctx); err == nil || s.ctx.Err() != nil {
				return
			}
		}
	}()
}

// refreshAsync refreshes the metadata in the background, once at a time,
// when the server says a list changed. A change announced during a
// refresh is not lost: the refresh runs once more.
func (s *supervisor) refreshAsync(why string) {
	s.mu.Lock()
	if s.session == nil || s.ctx.Err() != nil {
		s.mu.Unlock()
		return
	}
	if s.refreshing {
		// The refresh running may have listed before the change that
		// asks for this one: it runs once more when it ends.
		s.refreshAgain = true
		s.mu.Unlock()
		return
	}
	s.refreshing = true
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		for {
			s.log.Debug("refreshing metadata", "why", why)
			ctx, cancel := context.WithTimeout(s.ctx, ms(s.cfg.DiscoveryTimeoutMs))
			_ = s.refresh(ctx)
			cancel()
			s.mu.Lock()
			again := s.refreshAgain && s.session != nil && s.ctx.Err() == nil
			s.refreshAgain = false
			if !again {
				s.refreshing = false
				s.mu.Unlock()
				return
			}
			s.mu.Unlock()
			why = "changed while refreshing"
		}
	}()
}

// refresh lists the metadata again on the current session, connecting
// first if needed; a connection made for it lists once, not twice (a
// server that changes its list between two listings would otherwise be
// seen changing by one refresh).
//
// A refresh asked for while a discovery runs (the first one of a
// connection, or another refresh) waits for that discovery and returns
// its result, bounded by the discovery's own timeout and by ctx: many
// first calls to a server that was never listed all wait for the one
// listing, rather than find no metadata yet.
func (s *supervisor) refresh(ctx context.Context) error {
	for {
		s.mu.Lock()
		// A session still connecting is not connected yet: its
		// discovery lists what this refresh would.
		d, connected := s.discovery, s.session != nil && s.connecting == nil
		s.mu.Unlock()
		if d == nil {
			cs, err := s.ensure(ctx)
			if err != nil {
				return err
			}
			s.mu.Lock()
			d = s.discovery // one that began while ensure ran
			s.mu.Unlock()
			if d == nil {
				if !connected {
					return nil // connecting discovered it just now
				}
				if s.getStatus() != StatusReady {
					return nil // the session ended meanwhile: the next use connects
				}
				turn.Yield(ctx)
				return s.discover(ctx, cs)
			}
		}
		err := d.wait(ctx)
		if err != nil && ctx.Err() == nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
			// The discovery ran under the context of a caller who gave
			// up on it; this one has not: try again.
			continue
		}
		return err
	}
}

// stale reports whether the metadata is missing or older than
// metadataRefreshMs.
func (s *supervisor) stale() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.staleLocked()
}

// staleLocked is stale with s.mu held.
func (s *supervisor) staleLocked() bool {
	return s.meta == nil || s.meta.Stale(ms(s.cfg.MetadataRefreshMs), time.Now())
}

// anyListing is the listing of a call no decision gates.
const anyListing = ^uint64(0)

// errListedMeanwhile is why a call was not sent: the server's tools were
// listed again between the call's decision and its dispatch.
var errListedMeanwhile = errors.New("the server's tools were listed again while the call was being decided")

// listing is what a decision about one of the server's tools is made on:
// its metadata, the number of the discovery that listed it (0 for the
// cache a previous run wrote) and whether a session is open and done
// connecting (its discovery listed meta).
type listing struct {
	meta      *Metadata
	num       uint64
	connected bool
}

// currentListing returns the server's current listing.
func (s *supervisor) currentListing() listing {
	s.mu.Lock()
	defer s.mu.Unlock()
	return listing{meta: s.meta, num: s.listings, connected: s.session != nil && s.connecting == nil}
}

// listedOrAwait returns the server's current listing, as currentListing
// does; when the server was never listed and a listing of it is in
// flight (a discovery, or a connect, whose discovery follows), it first
// waits for that listing to end, so that who needs the metadata while
// the first listing runs finds it rather than "not listed yet". It never
// starts a listing. The wait is bounded by ctx, by within when within is
// positive, and by the listing's own timeouts (connectTimeoutMs,
// discoveryTimeoutMs): past them the listing found so far is returned.
func (s *supervisor) listedOrAwait(ctx context.Context, within time.Duration) listing {
	// The usual case, a server with metadata, is one lock, as
	// currentListing is.
	s.mu.Lock()
	inFlight := s.firstListingLocked()
	if inFlight == nil {
		l := listing{meta: s.meta, num: s.listings, connected: s.session != nil && s.connecting == nil}
		s.mu.Unlock()
		return l
	}
	s.mu.Unlock()
	if within <= 0 {
		within = ms(s.cfg.ConnectTimeoutMs) + ms(s.cfg.DiscoveryTimeoutMs)
	}
	timer := time.NewTimer(within)
	defer timer.Stop()
	turn.Yield(ctx) // a listing takes a while
	for inFlight != nil {
		select {
		case <-inFlight:
		case <-timer.C:
			return s.currentListing()
		case <-ctx.Done():
			return s.currentListing()
		}
		s.mu.Lock()
		inFlight = s.firstListingLocked()
		s.mu.Unlock()
	}
	return s.currentListing()
}

// firstListingLocked returns, with s.mu held, what closes when the
// first listing in flight ends, or nil when the server has metadata or
// nothing lists it now.
func (s *supervisor) firstListingLocked() <-chan struct{} {
	switch {
	case s.meta != nil:
		return nil
	case s.discovery != nil:
		return s.discovery.done
	case s.connecting != nil:
		return s.connecting
	}
	return nil
}

// maxProgressMessage bounds the text of a progress event: it comes from
// the server and is shown to people.
const maxProgressMessage = 200

// progress turns a server's progress notification for a call in flight
// into an mcp_call_update event.
func (s *supervisor) progress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	if req == nil || req.Params == nil {
		return
	}
	s.progressNotes.Add(1)
	id := fmt.Sprint(req.Params.ProgressToken)
	s.mu.Lock()
	tool, ok := s.calls[id]
	s.mu.Unlock()
	if !ok {
		return // not a call of ours, or already over
	}
	msg := strings.ToValidUTF8(req.Params.Message, "?")
	if len(msg) > maxProgressMessage {
		msg = msg[:maxProgressMessage]
	}
	s.e.bus.publish(Event{Type: EventCallUpdate, Server: s.cfg.ID, Tool: tool, CallID: id, CallStatus: "running",
		Progress: req.Params.Progress, Total: req.Params.Total, Message: s.scrub.Text(output.CleanText(msg, progressMaxChars))})
}

// call runs one tool call on the server. callID doubles as the progress
// token, so progress notifications map back to the call. then gets the
// result once: on this goroutine, or, when the call takes the lean path,
// on the connection's reader once the server answers (see reply; yield
// lets that reader go).
//
// decided is the listing (see listing) the call was decided on: when a
// discovery ran since, nothing is sent and then gets errListedMeanwhile,
// since what it listed may hold the tool. anyListing skips the check, for
// calls that no decision gates (Engine.CallTool).
func (s *supervisor) call(ctx context.Context, callID, tool string, args any, decided uint64, then func(yield func(), res *mcp.CallToolResult, err error)) {
	s.mu.Lock()
	s.inflight++
	if s.calls == nil {
		s.calls = map[string]string{}
	}
	s.calls[callID] = tool
	s.mu.Unlock()
	here := turn.YieldFunc(ctx)
	end := func(yield func(), res *mcp.CallToolResult, err error) {
		s.mu.Lock()
		s.inflight--
		delete(s.calls, callID)
		s.touchLocked()
		s.mu.Unlock()
		then(yield, res, err)
	}
	cs, err := s.ensure(ctx)
	if err != nil {
		end(here, nil, err)
		return
	}
	s.mu.Lock()
	listed, stale := s.listings, s.staleLocked()
	s.mu.Unlock()
	if decided != anyListing && listed != decided {
		// Connecting (after a crash, say) listed the tools again since
		// the call was decided, and that listing may hold this tool.
		end(here, nil, fmt.Errorf("%w: nothing was sent; call again to have it decided on what the server lists now", errListedMeanwhile))
		return
	}
	if stale {
		s.refreshAsync("metadata older than metadataRefreshMs")
	}
	timeout := s.callTimeout
	cctx, cancel := s.e.deadlines.withTimeout(ctx, timeout)
	// A progress token asks the server for progress notifications, which
	// only a subscriber to the engine's events sees (as mcp_call_update);
	// without one, the server is not asked. Servers do work for a token
	// even when they send nothing: with the Go SDK, about 5% of a call.
	progress := ""
	if s.e.bus.listening() {
		progress = callID
	}
	tripsBefore := s.oversized.Load()
	done := func(yield func(), res *mcp.CallToolResult, err error) {
		if err != nil {
			if cctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
				err = fmt.Errorf("call %s timed out after %s", tool, timeout)
			} else if s.oversized.Load() != tripsBefore {
				err = fmt.Errorf("%w: %v", line.ErrMessageTooLarge, err)
			} else {
				err = s.explain("tools/call", err)
			}
			res, err = nil, s.scrub.Err(err)
		}
		cancel()
		end(yield, res, err)
	}
	viaSDK := func(yield func()) {
		// The SDK's client waits here for the server, which the
		// connection's reader must go on reading.
		yield()
		params := &mcp.CallToolParams{Name: tool, Arguments: args}
		if progress != "" {
			params.SetProgressToken(progress)
		}
		res, err := cs.CallTool(cctx, params)
		done(turn.NoYield, res, err)
	}
	lean := s.leanCall(cctx, cs, tool, args, progress, func(yield func(), res *mcp.CallToolResult, err error) {
		if errors.Is(err, errNeedsSDK) {
			viaSDK(yield)
			return
		}
		done(yield, res, err)
	})
	if !lean {
		viaSDK(here)
	}
}

// touch notes a use of the server for its idle timer, which it arms if
// it is not armed. The timer is not stopped and started again on every
// call: starting a timer may wake a thread of Go's runtime, a cost a
// call through the gateway pays on a small machine (docs/benchmarks.md).
// Instead, a timer that fires before the server has been idle for
// IdleTimeoutMs arms itself again for the rest of it (idleFired).
func (s *supervisor) touch() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.touchLocked()
}

// touchLocked is touch with s.mu held.
func (s *supervisor) touchLocked() {
	s.lastUse = time.Now()
	if !s.idles() || s.session == nil {
		return
	}
	if s.idle != nil {
		if s.idleGen == s.gen {
			return
		}
		s.stopIdleLocked() // armed for an earlier session
	}
	gen := s.gen
	s.idleGen = gen
	s.idle = time.AfterFunc(ms(s.cfg.IdleTimeoutMs), func() { s.idleFired(gen) })
}

// idles reports whether the server disconnects when idle.
func (s *supervisor) idles() bool {
	return s.cfg.IdleTimeoutMs > 0 && s.cfg.Lifecycle != "keep-alive"
}

func (s *supervisor) stopIdleLocked() {
	if s.idle != nil {
		s.idle.Stop()
		s.idle = nil
	}
}

// idleFired disconnects a server idle for IdleTimeoutMs. A server in use
// (a call in flight, or one that ended less than IdleTimeoutMs ago) or
// not ready keeps the timer, armed again; a timer of an earlier session
// goes.
func (s *supervisor) idleFired(gen uint64) {
	s.mu.Lock()
	if s.idle == nil || s.idleGen != gen {
		s.mu.Unlock()
		return // stopped, or another timer took over
	}
	if s.gen != gen || s.session == nil || !s.idles() {
		s.idle = nil
		s.mu.Unlock()
		return
	}
	idle := ms(s.cfg.IdleTimeoutMs)
	rest := idle - time.Since(s.lastUse)
	if s.inflight > 0 || s.status != StatusReady {
		rest = idle
	}
	if rest > 0 {
		s.idle.Reset(rest)
		s.mu.Unlock()
		return
	}
	s.idle = nil
	s.mu.Unlock()
	s.log.Debug("idle; disconnecting")
	s.disconnect(StatusCold)
}

// disconnect closes the session and stops the process; the status ends
// as final (cold after idling, disconnected on request, disabled).
func (s *supervisor) disconnect(final Status) {
	s.mu.Lock()
	s.stopIdleLocked()
	cs, end := s.session, s.endSession
	s.session, s.conn, s.endSession = nil, nil, nil
	s.gen++
	s.mu.Unlock()
	if cs != nil {
		s.setStatus(StatusDisconnecting, "")
		if err := cs.Close(); err != nil {
			s.log.Debug("close session", "err", s.scrub.Err(err))
		}
	}
	if end != nil {
		end()
	}
	st := s.getStatus()
	switch {
	case st == final:
	case canMove(st, final):
		s.setStatus(final, "")
	case final == StatusDisabled && canMove(st, StatusDisconnecting):
		s.setStatus(StatusDisconnecting, "")
		s.setStatus(final, "")
	}
}

// closeSession ends a session after a failed discovery; the status stays
// error.
func (s *supervisor) closeSession(gen uint64) {
	s.mu.Lock()
	cs, end := s.session, s.endSession
	if s.gen == gen {
		s.session, s.conn, s.endSession = nil, nil, nil
		s.gen++
	} else {
		cs, end = nil, nil
	}
	s.mu.Unlock()
	if cs != nil {
		_ = cs.Close()
	}
	if end != nil {
		end()
	}
}

// close stops everything the supervisor started.
func (s *supervisor) close() {
	s.cancel()
	s.disconnect(StatusDisconnected)
	s.wg.Wait()
}

// withStderr adds the last line the server wrote to stderr to an error,
// which is usually the reason it failed.
func (s *supervisor) withStderr(err error) error {
	if line := lastLine(s.stderr.Bytes()); line != "" {
		return fmt.Errorf("%w (stderr: %s)", err, line)
	}
	return err
}

func lastLine(b []byte) string {
	text := strings.TrimRight(string(b), "\r\n\t ")
	if i := strings.LastIndexByte(text, '\n'); i >= 0 {
		text = text[i+1:]
	}
	if len(text) > 300 {
		text = text[len(text)-300:]
	}
	return output.CleanText(text, 0)
}

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
