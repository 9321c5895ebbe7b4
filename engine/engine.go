// Package engine is voltmcp's runtime: one Engine per workspace owns the
// config, a supervisor per configured MCP server, the metadata cache and
// the event stream. Every surface (the CLI, `voltmcp serve`, RPC, a Go
// program embedding voltmcp) calls the same Engine methods; none keeps
// state of its own.
package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/engine/audit"
	"github.com/voltmcp/voltmcp/engine/internal/auditq"
	"github.com/voltmcp/voltmcp/engine/internal/output"
	"github.com/voltmcp/voltmcp/engine/internal/search"
	"github.com/voltmcp/voltmcp/engine/internal/transport"
	"github.com/voltmcp/voltmcp/engine/internal/turn"
	"github.com/voltmcp/voltmcp/policies"
)

// Options configure an Engine. The zero value of each field is usable and
// documented.
type Options struct {
	// Home is the root of the user config layers. Zero: the user's home
	// directory.
	Home string
	// Project is the root of the project config layers. Zero: the working
	// directory.
	Project string
	// AgentDir holds voltmcp's state (the metadata cache). Zero:
	// <Home>/.volt/agent.
	AgentDir string
	// Config, when set, is used as is instead of loading the layers under
	// Home and Project; SetEnabled then fails, as there is nothing to
	// persist to.
	Config *cue.Config
	// Surface, Approve, NoApprove and Trust are passed to cue.Load.
	// Surface also says whether [Engine.Gateway]'s caller is a user (the
	// CLI's surfaces) or a model (serve, rpc, daemon, and the zero value):
	// only a user may fetch a prompt under prompts: "user-preview".
	Surface   cue.Surface
	Approve   bool
	NoApprove bool
	Trust     func(cue.TrustInput) cue.TrustDecision
	// Logger receives diagnostics. Zero: discard.
	Logger *slog.Logger
	// LookupEnv reads the host environment, for ${env:NAME} references and
	// envAllowlist. Zero: os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// StopGrace is how long a stdio server may take to exit after its stdin
	// closes, and again after SIGTERM, before the next signal. Zero: 2 s.
	StopGrace time.Duration
	// HTTPTransport carries requests to HTTP servers. Zero: a clone of
	// http.DefaultTransport.
	HTTPTransport http.RoundTripper
	// GatewayTokens are the bearer tokens with which this user's voltmcp
	// serve --http serves. An HTTP server whose request would carry one
	// as its Authorization is that gateway (an entry a client's config
	// holds to reach it), and the engine refuses the request before it is
	// sent, as it refuses a server answering with the engine's own
	// instance id. Zero: only the instance id is checked.
	GatewayTokens []string
	// Passive leaves eager and keep-alive servers cold at New: for one-shot
	// commands that inspect or manage servers without running them all.
	// Zero: they start in the background.
	Passive bool
	// Authorize gets a user's authorization for a server with auth type
	// "oauth": it shows authURL to the user (in a browser), waits for the
	// authorization server to redirect to the redirect_uri that authURL
	// names (http://127.0.0.1:<port>/callback, a port that was free when
	// the engine chose it), and returns that redirect's full URL; the
	// engine reads code, state, iss (RFC 9207) and error from it. ctx ends
	// after the authTimeoutMs setting, or when the caller of the
	// connection gives up; calls for one server never overlap. Zero: an
	// OAuth server that needs a user's authorization goes to needs_auth,
	// with a lastError that says so, and nothing blocks; stored tokens are
	// still used and refreshed.
	Authorize func(ctx context.Context, server string, authURL string) (callbackURL string, err error)
	// CanAuthorize reports whether Authorize can ask a user for a
	// connection made under ctx, and when it cannot, why: a reason for
	// people, which the server's lastError then gives after "log in with
	// `voltmcp auth SERVER`". It runs before any request to the
	// authorization server. `voltmcp serve` sets it to [CanOfferURL]: a
	// login is offered only to an agent's client that supports URL-mode
	// elicitation. Zero: Authorize can always ask.
	CanAuthorize func(ctx context.Context) error
	// DeviceAuthorize shows a user what to do to approve a device
	// authorization (RFC 8628, the OAuth flow "device") for a server with
	// auth type "oauth": the verification page, an https URL whose host
	// the user should check, and the code to enter there. It returns once
	// they are shown; the engine then polls the authorization server
	// (honouring its interval, 5 s more on each slow_down) until the user
	// approves, refuses, the code expires or AuthTimeout ends, and stores
	// the token as the browser flow does. An error it returns ends the
	// authorization. Zero: the device flow cannot ask the user, and ends
	// in needs_auth as without Authorize.
	DeviceAuthorize func(ctx context.Context, server string, d DeviceAuthorization) error
	// AuthFlow is the OAuth flow of every authorization, in place of each
	// server's auth.flow: [AuthFlowBrowser], [AuthFlowDevice] or
	// [AuthFlowAuto] (voltmcp auth --device). Zero: each server's
	// auth.flow, where none means [AuthFlowAuto].
	AuthFlow string
	// AuthTimeout bounds a user's authorization through Authorize or
	// DeviceAuthorize, in place of the authTimeoutMs setting (voltmcp
	// auth --timeout). Zero: the setting, whose default is 5 minutes.
	AuthTimeout time.Duration
	// Elicit answers a server's request for input from the user
	// (elicitation/create) while one of its calls runs. The request's text
	// and schema come from the server: untrusted, to show as such. An
	// "accept" with fields left out gets the schema's defaults. Zero: the
	// engine declares no elicitation capability, so servers may not ask.
	Elicit func(ctx context.Context, server string, req *mcp.ElicitRequest) (*mcp.ElicitResult, error)
	// Classify rates a tool's risk instead of the plugin chain. Zero: the
	// configured wasm classifiers, then the built-in one, which rates from
	// the tool's name, title, schema and description and lets the
	// server's annotations only raise the risk, unless the server's
	// definition sets trustToolHints.
	Classify func(server string, t Tool) (Risk, string)
	// Decide says whether a tool is exposed and callable, instead of the
	// policies. Zero: the voltmcp.tools policy. A panic while a new server
	// is first seen holds that server for approval (fail closed); on a
	// call's path it is the caller's (the lean path of ServeStdio answers
	// it as an internal error).
	Decide func(in ToolInput) ToolDecision
	// PolicyDirs are Rego files or directories added to the policy
	// bundle as user policies, besides those settings.policies names
	// (the --policy flag). Zero: none.
	PolicyDirs []string
	// Policies, when set, is the policy set to decide with, instead of
	// one loaded from the config and PolicyDirs; its reasons are as its
	// loader's [policies.Options.Scrub] left them. Zero: loaded by
	// [LoadPolicies] in the background when the config is loaded (at New
	// and at each reload), with a scrubber of the config's secrets.
	Policies *policies.Policies
	// PluginCacheDir holds wazero's compilation cache, so only the first
	// run after an install compiles a plugin. Zero:
	// [DefaultPluginCacheDir] of Home (else the user's home directory) and
	// LookupEnv, voltmcp/wasm under $XDG_CACHE_HOME or ~/.cache.
	PluginCacheDir string
	// DisableAudit turns the audit log off, for embedders that audit
	// elsewhere. Zero: every call, resource read, prompt fetch, trust
	// decision and plugin fault is appended to
	// <AgentDir>/audit/audit.jsonl.
	DisableAudit bool
	// KeepDumpable leaves the process as it is. Zero: on Linux, New makes
	// the whole process non-dumpable (prctl PR_SET_DUMPABLE 0) and sets
	// its soft RLIMIT_CORE to 0, so that no server it starts (running as
	// the same user) can read the process's environment, memory or file
	// descriptors under /proc, or ptrace it, and no core file holds its
	// secrets. This lasts for the life of the process, beyond Close, and
	// also keeps a debugger of the same user from attaching; other
	// systems are left as they are. Set it in a program that must stay
	// debuggable and starts no server it does not trust.
	KeepDumpable bool
	// RecentCalls is how many of each server's latest calls the Engine
	// keeps for [Engine.RecentCalls] and [Engine.Server], and reads back
	// from the audit log for [Engine.LoggedRecentCalls]. Zero or less:
	// [DefaultRecentCalls] (50).
	RecentCalls int
	// EventBuffer is how many of the last events the Engine keeps for
	// subscribers that come back ([Engine.SubscribeSince]) or fall behind.
	// Zero or less: [DefaultEventBuffer] (1,000), the spec's minimum;
	// each kept event holds its strings (an error, a progress message).
	EventBuffer int
}

// Engine runs the MCP servers of one workspace. Its methods are safe for
// concurrent use.
type Engine struct {
	opts      Options
	deadlines callDeadlines // of tool calls (supervisor.call)
	log       *slog.Logger
	lookup    func(string) (string, bool)
	grace     time.Duration
	httpBase  http.RoundTripper
	// instance is this engine's random id: its HTTP handler answers
	// with it (transport.InstanceHeader), and its HTTP servers are
	// refused when they answer with it, being the gateway itself.
	instance string
	// viaKey is the secret of the ids the engine names itself by to
	// each HTTP server in Voltmcp-Via (transport.ViaID); viaSent holds
	// those it has sent, which a request coming back carries.
	viaKey  []byte
	viaSent transport.ViaSet
	version string
	cache   cacheStore
	bus     bus
	recent  *recentBook // each server's latest calls (recent.go)
	schema  *cue.Schema

	ixMu    sync.Mutex // guards the search index cache
	ix      *search.Index
	ixTools map[string]*Tool // into the listings the index was built from
	ixKey   string

	outOnce sync.Once
	out     *output.Store

	pins pinBook // tool pins under <AgentDir>/mcp/pins (pins.go)

	guard  atomic.Pointer[guard] // the policies and plugins of the current config
	guards atomic.Uint64         // numbers each guard (guard.gen)
	// supervisors numbers each supervisor (supervisor.num).
	supervisors atomic.Uint64
	// readerCheck, when set (by tests), checks that work on the
	// engine's stdio connections yields their reader before it blocks
	// (turn.Check); connections made after it is set use it.
	readerCheck atomic.Pointer[turn.Check]
	session     string // this Engine's id in audit records
	ws          string // the workspace: the project root, absolute

	audit   *auditq.Queue   // the audit log's queue (record.go)
	backlog *auditq.Backlog // gateway calls' records waiting to be written

	// off is why the current config turns the gateway off, nil when it
	// is on (TurnedOff); read on every call, so it is not behind mu.
	off atomic.Pointer[string]
	// ptrust watches the project trust the current config was loaded
	// under; nil when no project layer loads (trustwatch.go). Read on
	// every start or call of a project server.
	ptrust atomic.Pointer[projectTrust]

	// reloadMu keeps reloads from overlapping (Reload).
	reloadMu sync.Mutex

	mu     sync.Mutex
	closed bool
	// invalid is why the last reload was not applied, nil once one is.
	invalid *ConfigInvalidError
	cfg     *cue.Config
	load    *cue.Result // nil when Options.Config was given
	servers map[string]*supervisor
	// listCtx is the context of the first ListUnlisted: Reload lists
	// the servers it adds under it.
	listCtx context.Context

	// runs marks the stdio servers started and keeps the reaper.
	runs transport.Runs
}

// New builds the Engine for a workspace: it loads the config (unless
// Options.Config is set), reads the metadata cache, and starts in the
// background the eager and keep-alive servers and the loading of the
// policies and plugins, which a first call waits for rather than starts.
// No lazy server starts. The error
// is for a failure to set up; problems in config files are in
// Diagnostics. Close the Engine when done, even if New failed part way:
// New closes what it started before returning an error. A nil opts is
// the zero Options; New keeps its own copy, so opts may be reused.
func New(ctx context.Context, opts *Options) (*Engine, error) {
	if opts == nil {
		opts = &Options{}
	}
	return newEngine(ctx, *opts)
}

func newEngine(ctx context.Context, opts Options) (*Engine, error) {
	if !opts.KeepDumpable {
		// Before any server starts: a child could read the environ of a
		// dumpable parent from its first instruction.
		if err := hardenProcess(); err != nil {
			return nil, err
		}
	}
	e := &Engine{opts: opts, log: opts.Logger, lookup: opts.LookupEnv, grace: opts.StopGrace, httpBase: opts.HTTPTransport}
	if e.log == nil {
		e.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if e.lookup == nil {
		e.lookup = os.LookupEnv
	}
	if e.grace <= 0 {
		e.grace = transport.DefaultGrace
	}
	if e.httpBase == nil {
		e.httpBase = http.DefaultTransport.(*http.Transport).Clone()
	}
	e.bus = newBus(opts.EventBuffer)
	e.recent = newRecentBook(opts.RecentCalls)
	e.instance = rand.Text()
	e.viaKey = []byte(rand.Text())
	e.version = "(devel)"
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		e.version = info.Main.Version
	}
	if e.opts.Home == "" && e.opts.Config == nil {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, fmt.Errorf("engine: find home directory: %w", err)
		}
		e.opts.Home = home
	}
	if e.opts.Project == "" {
		e.opts.Project = "."
	}
	e.ws = workspaceOf(e.opts.Project)
	e.session = newCallID()
	if e.opts.AgentDir == "" {
		if e.opts.Home == "" {
			return nil, errors.New("engine: set Options.AgentDir or Options.Home")
		}
		e.opts.AgentDir = filepath.Join(e.opts.Home, ".volt", "agent")
	}
	e.audit = e.newAuditQueue()
	e.backlog = auditq.NewBacklog(e.audit.PushAll, &auditq.BacklogOptions{Logger: e.log})
	e.cache = cacheStore{dir: cacheDirOf(e.opts.AgentDir)}
	cfg, res, err := e.loadConfig(ctx)
	if err != nil {
		return nil, err
	}
	e.cfg, e.load = cfg, res
	e.ptrust.Store(newProjectTrust(e.opts.Surface, e.ws, res))
	e.setOff(cfg)
	e.guard.Store(newGuard(e, cfg))
	e.servers = map[string]*supervisor{}
	for _, s := range cfg.Servers {
		e.servers[s.ID] = newSupervisor(e, s)
	}
	if !opts.Passive {
		e.startEager()
	}
	return e, nil
}

func (e *Engine) loadConfig(ctx context.Context) (*cue.Config, *cue.Result, error) {
	if e.opts.Config != nil {
		return e.opts.Config, nil, nil
	}
	if e.schema == nil {
		s, err := cue.NewSchema()
		if err != nil {
			return nil, nil, fmt.Errorf("engine: %w", err)
		}
		e.schema = s
	}
	res, err := cue.Load(ctx, cue.Locations{Home: e.opts.Home, Project: e.opts.Project}, &cue.Options{
		Schema: e.schema, Surface: e.opts.Surface, Approve: e.opts.Approve, NoApprove: e.opts.NoApprove, Trust: e.trustFunc(ctx),
		TrustStore: filepath.Join(e.opts.AgentDir, cue.TrustStoreFile),
	})
	if err != nil {
		return nil, nil, fmt.Errorf("engine: load config: %w", err)
	}
	return res.Config, res, nil
}

// startEager connects eager and keep-alive servers in the background,
// unless the gateway is turned off.
func (e *Engine) startEager() {
	if e.TurnedOff() != "" {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range e.servers {
		if s.getStatus() == StatusDisabled || (s.cfg.Lifecycle != "eager" && s.cfg.Lifecycle != "keep-alive") {
			continue
		}
		s.wg.Add(1)
		go func(s *supervisor) {
			defer s.wg.Done()
			if _, err := s.ensure(s.ctx); err != nil && s.cfg.Lifecycle == "keep-alive" && s.ctx.Err() == nil {
				s.reconnectLater()
			}
		}(s)
	}
}

// Close stops every server the Engine started, with its process group,
// and ends every event subscription. It is safe to call more than once.
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	sups := make([]*supervisor, 0, len(e.servers))
	for _, s := range e.servers {
		sups = append(sups, s)
	}
	e.mu.Unlock()
	// The calls' records that wait in the backlog are written first,
	// before the servers take their time to stop.
	e.backlog.Close()
	var wg sync.WaitGroup
	for _, s := range sups {
		wg.Add(1)
		go func() { defer wg.Done(); s.close() }()
	}
	wg.Wait()
	e.runs.Close()
	if g := e.guard.Load(); g != nil {
		g.close()
	}
	e.closeAudit()
	e.bus.closeAll()
	return nil
}

// outputs returns the sidecar store, made on first use.
func (e *Engine) outputs() *output.Store {
	e.outOnce.Do(func() {
		set := e.Config().Settings
		e.out = output.NewStore(outputDirOf(e.opts.AgentDir), e.workspace(),
			&output.StoreOptions{TTL: ms(set.OutputCacheTtlMs), MaxBytes: set.OutputCacheMaxBytes, Now: time.Now})
		e.out.Sweep()
	})
	return e.out
}

// workspace identifies the Engine's workspace: sidecar ids written for one
// are not readable from another.
func (e *Engine) workspace() string { return e.ws }

// workspaceOf is the absolute project root that identifies a workspace.
func workspaceOf(project string) string {
	abs, err := filepath.Abs(project)
	if err != nil {
		return project
	}
	return abs
}

// Config returns the effective config the Engine runs with.
func (e *Engine) Config() *cue.Config {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cfg
}

// Diagnostics returns the findings of the last config load: untrusted
// project files, invalid servers, and the like.
func (e *Engine) Diagnostics() cue.Diagnostics {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.load == nil {
		return nil
	}
	return e.load.Diagnostics
}

// Subscribe is SubscribeSince(0, buffer): the events from now on.
func (e *Engine) Subscribe(buffer int) (<-chan Event, func()) {
	return e.bus.subscribe(0, buffer)
}

// SubscribeSince returns a channel of events and a function that ends
// the subscription. The channel holds buffer events (64 when buffer <=
// 0). With since 0 it gets the events published from now on. With since
// > 0 (the Seq of the last event a subscriber saw) it first gets every
// event after since that the engine still keeps (the last
// Options.EventBuffer), then the events from now on, with none missed or
// repeated between the two; when events after since are no longer kept,
// one [EventGap] counting them comes first. A since the engine has not
// reached (a subscriber of an engine that has since restarted) gets one
// gap whose Missed counts every event of this engine and whose Seq is
// the last one's, then the events from now on.
//
// A subscriber that does not read never slows the engine: when its
// channel is full, the events it has not taken wait in the engine's ring
// of the last events, and it gets them once it reads again; those that
// left the ring meanwhile are one gap. The channel closes when the
// subscription or the Engine ends, keeping the events it holds; after
// Close it closes at once.
func (e *Engine) SubscribeSince(since uint64, buffer int) (<-chan Event, func()) {
	return e.bus.subscribe(since, buffer)
}

// ErrUnknownServer is returned for a server id that is not configured.
// The error names the closest id, and every config file that did not
// read or parse. A server of an untrusted project gets [ErrNotLoaded]
// instead.
var ErrUnknownServer = errors.New("unknown server")

func (e *Engine) supervisor(id string) (*supervisor, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, errors.New("engine is closed")
	}
	s, ok := e.servers[cue.NormalizeID(id)]
	if !ok {
		// Why it is missing, when the load knows: an untrusted project,
		// a file that does not parse; else the closest id.
		return nil, e.notLoadedErrorLocked(id)
	}
	return s, nil
}

// Connect connects a server now, and lists and caches its metadata.
func (e *Engine) Connect(ctx context.Context, id string) error {
	s, err := e.use(id)
	if err != nil {
		return err
	}
	_, err = s.ensure(ctx)
	return err
}

// Disconnect closes a server's session and stops its process. It starts
// again on its next use.
func (e *Engine) Disconnect(ctx context.Context, id string) error {
	s, err := e.supervisor(id)
	if err != nil {
		return err
	}
	if s.getStatus() == StatusDisabled {
		return nil
	}
	s.disconnect(StatusDisconnected)
	return nil
}

// Refresh lists a server's metadata again, connecting if needed.
func (e *Engine) Refresh(ctx context.Context, id string) error {
	s, err := e.use(id)
	if err != nil {
		return err
	}
	return s.refresh(ctx)
}

// Metadata returns what is known of a server's tools, resources and
// prompts, from the cache or the last discovery, without connecting. It
// is nil when the server was never discovered.
func (e *Engine) Metadata(id string) (*Metadata, error) {
	s, err := e.supervisor(id)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.meta, nil
}

// FreshMetadata returns a server's metadata for a path that is about to
// use it (describe, call): from the cache when it is fresh, else after
// connecting and listing again. Start-up never does this; only use does.
func (e *Engine) FreshMetadata(ctx context.Context, id string) (*Metadata, error) {
	s, err := e.use(id)
	if err != nil {
		return nil, err
	}
	if s.stale() {
		if err := s.refreshStale(ctx); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.meta, nil
}

// callUngated calls a tool of a server, connecting first if needed,
// with none of the gateway's checks: no project trust, tool policy, pin,
// classifier, output cleaning, redaction or audit record. It is not
// exported, so that every caller outside the engine calls through
// [Engine.Gateway]'s pipeline; the engine's tests of its own plumbing
// (transports, the lean path, OAuth) use it. A tool's own failure is a
// result with IsError set; the error is for failing to reach the server
// or the call timing out.
func (e *Engine) callUngated(ctx context.Context, server, tool string, args any) (*mcp.CallToolResult, error) {
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	s, err := e.use(server)
	if err != nil {
		return nil, err
	}
	callID := newCallID()
	e.bus.publish(Event{Type: EventCallStart, Server: s.cfg.ID, Tool: tool, CallID: callID, CallStatus: "started"})
	start := time.Now()
	a := turn.Await(ctx, func(ctx context.Context, then func(func(), answer)) {
		e.callToolThen(ctx, callID, server, tool, args, anyListing, func(yield func(), res *mcp.CallToolResult, err error) { then(yield, answer{res, err}) })
	})
	status := "completed"
	switch {
	case errors.Is(a.err, context.Canceled):
		status = "cancelled"
	case a.err != nil || (a.res != nil && a.res.IsError):
		status = "failed"
	}
	e.bus.publish(Event{Type: EventCallEnd, Server: s.cfg.ID, Tool: tool, CallID: callID, CallStatus: status,
		DurationMs: time.Since(start).Milliseconds()})
	if a.res != nil {
		// Structured content is a decoded value here, as the SDK's
		// client gives it; the gateway passes it on as JSON.
		if raw, ok := a.res.StructuredContent.(json.RawMessage); ok {
			var v any
			if err := json.Unmarshal(raw, &v); err != nil {
				return nil, fmt.Errorf("decoding the structured content of %s: %w", tool, err)
			}
			a.res.StructuredContent = v
		}
	}
	return a.res, a.err
}

// callToolThen is a call that hands its result to then, once: on
// this goroutine, or on the server's connection's reader when the call
// takes the lean path (see supervisor.call). callID is the call's id,
// which its progress events carry; its callers publish its start and
// end. decided is the listing the call was decided on, or anyListing.
// Its callers have counted the use ([Engine.use]).
func (e *Engine) callToolThen(ctx context.Context, callID, server, tool string, args any, decided uint64, then func(yield func(), res *mcp.CallToolResult, err error)) {
	s, err := e.supervisor(server)
	if err != nil {
		then(turn.YieldFunc(ctx), nil, err)
		return
	}
	s.call(ctx, callID, tool, args, decided, then)
}

// SetEnabled enables or disables a server and persists the choice as an
// overlay in the voltmcp-owned file of the scope that defines the server
// (<home>/.volt/agent/mcp.json or <project>/.volt/mcp.json), atomically.
// A trusted project stays trusted: the trust record follows the content
// voltmcp wrote, when it trusted the file as it was before the write.
// A disabled server stops now; an enabled one becomes cold, or starts if
// it is eager or keep-alive. The change is audited (config_change).
func (e *Engine) SetEnabled(ctx context.Context, id string, enabled bool) error {
	s, err := e.supervisor(id)
	if err != nil {
		return err
	}
	if e.opts.Config != nil {
		return errors.New("set enabled: the engine runs a config given in Options.Config; there is no file to persist to")
	}
	layer := cue.LayerUser
	if s.cfg.Layer.IsProject() {
		layer = cue.LayerProject
	}
	loc := cue.Locations{Home: e.opts.Home, Project: e.opts.Project}
	// voltmcp's own write to a trusted project's file keeps the trust
	// the file had (cue.WriteOptions.TrustStore).
	if err := cue.SetServerEnabled(ctx, loc, layer, s.cfg.ID, enabled, &cue.WriteOptions{TrustStore: filepath.Join(e.opts.AgentDir, cue.TrustStoreFile)}); err != nil {
		return err
	}
	e.record(ctx, audit.Record{Kind: audit.KindConfigChange, Server: s.cfg.ID, Status: "ok",
		Detail: map[string]any{"change": "set_enabled", "enabled": enabled, "layer": string(layer)}})
	return e.Reload(ctx)
}

// Reload reads the config again and brings the servers in line with it:
// new servers are added, removed ones stopped (with their processes),
// and a server whose definition changed is stopped and replaced; the
// others keep running, and their calls in flight complete. The policies
// and plugins are loaded again. Once [Engine.ListUnlisted] was called,
// the servers it adds or replaces that have no metadata are listed in
// the background as ListUnlisted lists them, under the context it was
// first given.
//
// A config that does not validate is not applied: when the load finds
// an error the running config's load did not have, the running config
// stays as it is, whole, and Reload returns a [*ConfigInvalidError]
// naming each problem's file, line and field; it also publishes
// [EventConfigInvalid], logs a warning and shows the error on the
// summary of each server of that file, until a reload applies. A reload
// that applies publishes [EventServersChanged] and [EventConfigReloaded]
// with the servers added, removed and changed. Reloads never overlap:
// one waits for another to end.
func (e *Engine) Reload(ctx context.Context) error {
	e.reloadMu.Lock()
	defer e.reloadMu.Unlock()
	cfg, res, err := e.loadConfig(ctx)
	if err != nil {
		return err
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return errors.New("engine is closed")
	}
	if bad := newErrors(e.load, res); len(bad) > 0 {
		ierr := &ConfigInvalidError{Diagnostics: bad}
		e.invalid = ierr
		e.mu.Unlock()
		msg := e.guard.Load().secrets.Text(ierr.Error())
		e.log.Warn("config change not applied; the last good config keeps running", "error", msg)
		e.bus.publish(Event{Type: EventConfigInvalid, Error: msg})
		return ierr
	}
	var stop []*supervisor
	var added, removed, changed []string
	// A server whose supervisor is replaced moves from the old one's
	// status to the new one's first (disabled to cold, say), and a new
	// server from none: those moves are published here, under e.mu,
	// before anything can reach the new supervisors and move them, and
	// the old ones are retired so that their last moves as they stop are
	// not (the server's status is the new one's).
	var moves []Event
	next := map[string]*supervisor{}
	for _, c := range cfg.Servers {
		old, ok := e.servers[c.ID]
		if ok && sameDefinition(old.cfg, c) {
			next[c.ID] = old
			continue
		}
		var from Status
		if ok {
			from = old.retire()
			stop = append(stop, old)
			changed = append(changed, c.ID)
		} else {
			added = append(added, c.ID)
		}
		n := newSupervisor(e, c)
		next[c.ID] = n
		if to := n.getStatus(); to != from {
			moves = append(moves, Event{Type: EventServerStatusChanged, Server: c.ID, Status: to, Previous: from})
		}
	}
	for id, old := range e.servers {
		if _, ok := next[id]; !ok {
			old.retire()
			stop = append(stop, old)
			removed = append(removed, id)
		}
	}
	for _, ev := range moves {
		e.bus.publish(ev)
	}
	note := reloadNote(e.load, res)
	e.cfg, e.load, e.servers, e.invalid = cfg, res, next, nil
	e.recent.retain(func(id string) bool { _, ok := next[id]; return ok })
	e.ptrust.Store(newProjectTrust(e.opts.Surface, e.ws, res))
	e.setOff(cfg)
	old := e.guard.Swap(newGuard(e, cfg))
	e.mu.Unlock()
	old.close()
	for _, s := range stop {
		s.close()
	}
	if !e.opts.Passive {
		e.startEager()
	}
	if note != "" {
		e.log.Warn("config reloaded: " + note)
	}
	slices.Sort(added)
	slices.Sort(removed)
	slices.Sort(changed)
	e.bus.publish(Event{Type: EventServersChanged})
	e.bus.publish(Event{Type: EventConfigReloaded, Added: added, Removed: removed, Changed: changed, Message: note})
	e.mu.Lock()
	lc := e.listCtx
	e.mu.Unlock()
	if lc != nil && lc.Err() == nil {
		// Servers added since are listed as those at the start were.
		e.ListUnlisted(lc)
	}
	return nil
}

// newCallID returns an opaque, unguessable call id.
func newCallID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail
	return "call_" + hex.EncodeToString(b[:])
}

// sameDefinition reports whether two definitions of a server are the
// same in every field.
func sameDefinition(a, b cue.Server) bool {
	return reflect.DeepEqual(a, b)
}
