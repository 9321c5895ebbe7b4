package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/engine/internal/turn"
	"github.com/voltmcp/voltmcp/policies"
	"github.com/voltmcp/voltmcp/redact"
	"github.com/voltmcp/voltmcp/wasm"
)

// guard holds what the engine decides with for one config: the Rego
// policies, the WebAssembly classifier and shaper chain, and the caches
// of their answers. newGuard starts preparing the policies and the
// plugins in the background (prepare.go), so that no call, on a
// connection's reader or elsewhere, loads Rego or compiles a module: a
// user of either waits until it is ready. A reload starts a new guard.
type guard struct {
	e   *Engine
	cfg *cue.Config
	// gen numbers this guard among the engine's: what was derived from
	// one guard (a redaction) is not taken for another's.
	gen uint64

	// custom is true when user or project policy files are configured:
	// only then are tools decisions made in Rego. The built-in bundle
	// decides exactly as defaultDecide does (a test keeps the two equal),
	// and Go answers in nanoseconds where Rego takes hundreds of
	// microseconds.
	custom bool

	// stop ends the preparation early, when the guard closes. polReady
	// is closed once pol and polErr are set, plugReady once host, chain
	// and plugErr are (after polReady): until then nothing reads them.
	stop      context.CancelFunc
	polReady  chan struct{}
	plugReady chan struct{}
	// warm, closed by warmPlugins, has the preparation compile the
	// chain's modules; prepared is closed when the preparation is over,
	// compiling included.
	warm     chan struct{}
	warmOnce sync.Once
	prepared chan struct{}

	// pol is the policy set every decision is made with, read from any
	// goroutine (a call's, the audit log writer's for the redactor). It
	// is an atomic pointer so that a set put in its place while the guard
	// runs (the tests of policy failures swap a failing set for a
	// healthy one) is seen by the next decision without a data race.
	pol    atomic.Pointer[policies.Policies]
	polErr error

	// red is the redact decision once the policies made it. Until they
	// do, redactor answers with the built-in spec (redFallback) and asks
	// the policies again after redactRetry: a redact policy that failed
	// once, say past its deadline under load, is not given up on.
	red         atomic.Pointer[policies.Redactor]
	redMu       sync.Mutex
	redFallback *policies.Redactor
	redRetry    time.Time

	decMu sync.Mutex
	decs  map[decKey]ToolDecision

	host  *wasm.Host
	chain *wasm.Chain
	// plugErr is why a configured classifier could not load; while it
	// is set every tool is rated unknown rather than by a chain that
	// lacks the team's own rules.
	plugErr error
	// plugFP fingerprints the classifiers of chain, in order: each
	// module's sha256 and configured limits. Set with chain; part of
	// ratingKey.
	plugFP string
	// riskRetry holds, for a rating that a classifier fault shaped (a
	// deadline missed under load, say), when to classify again: such a
	// rating is kept for riskRetryAfter, not for the guard's life. It is
	// guarded by riskMu, as risks is.
	riskRetry map[string]time.Time

	riskMu sync.Mutex
	risks  map[string]riskEntry

	// secrets knows the secret values of every server of cfg (see
	// configScrubber): every reason the policies give and every risk
	// reason a classifier gives is scrubbed with it.
	secrets *redact.Scrubber

	// trustHints holds the servers whose config trusts their tool hints
	// (trustToolHints, honoured from user layers only): the one place
	// that lets a server's annotations lower the risk of its tools.
	trustHints map[string]bool

	// use is held (read-locked) by each user of the plugin chain while
	// it runs a module, so that close, which takes it to release the
	// wasm host, waits for the calls in flight of a reload's old guard;
	// closed is set once it is released.
	use    sync.RWMutex
	closed bool
}

// riskRetryAfter is how long a rating shaped by a classifier fault is
// kept.
const riskRetryAfter = 30 * time.Second

// decKey identifies a tools decision input; the tool's hash stands for
// its metadata.
type decKey struct {
	server, tool, hash string
	risk               Risk
	pin                PinState
	quarantined        bool
	surface            cue.Surface
}

type riskEntry struct {
	risk   Risk
	reason string
}

// maxDecisions bounds the decision cache; past it the cache starts over.
const maxDecisions = 1 << 16

func newGuard(e *Engine, cfg *cue.Config) *guard {
	g := &guard{e: e, cfg: cfg, gen: e.guards.Add(1), decs: map[decKey]ToolDecision{}, risks: map[string]riskEntry{}, riskRetry: map[string]time.Time{}}
	g.custom = len(e.opts.PolicyDirs) > 0 || len(cfg.Policies) > 0
	g.secrets = configScrubber(cfg.Servers, e.lookup)
	for _, s := range cfg.Servers {
		if s.TrustToolHints {
			if g.trustHints == nil {
				g.trustHints = map[string]bool{}
			}
			g.trustHints[s.ID] = true
		}
	}
	g.polReady, g.plugReady = make(chan struct{}), make(chan struct{})
	g.warm, g.prepared = make(chan struct{}), make(chan struct{})
	ctx, stop := context.WithCancel(context.Background())
	g.stop = stop
	go g.prepare(ctx)
	return g
}

// policies returns the loaded policy set, once the guard's preparation
// has loaded it. A set that failed to load still answers, failing
// closed; the error is also kept for status.
func (g *guard) policies() *policies.Policies {
	<-g.polReady
	return g.pol.Load()
}

// decide makes a tools decision: Options.Decide when set, else the Rego
// policies when any are configured, else the built-in rule.
func (g *guard) decide(in ToolInput) ToolDecision {
	if g.e.opts.Decide != nil {
		return g.e.opts.Decide(in)
	}
	if !g.custom && g.e.opts.Policies == nil {
		return defaultDecide(in)
	}
	k := decKey{in.Server.ID, in.Tool.Name, in.Tool.Hash, in.Risk, in.Pin, in.Quarantined, in.Surface}
	g.decMu.Lock()
	d, ok := g.decs[k]
	g.decMu.Unlock()
	if ok {
		return d
	}
	pd := g.policies().Tools(context.Background(), policyToolInput(in))
	d = ToolDecision{Exposed: pd.Exposed, Allowed: pd.Allowed, Pending: pd.Pending}
	for _, r := range pd.Reasons {
		d.Reasons = append(d.Reasons, r.String())
	}
	// A decision the policies could not make (a load or evaluation
	// error, a timeout) denies this evaluation only: the next one tries
	// again, so a deadline missed under load does not stick.
	if pd.Err != nil {
		g.e.recordPolicyError(context.Background(), policies.AreaTools, pd.Err, map[string]any{"server": in.Server.ID, "tool": in.Tool.Name})
	} else {
		g.decMu.Lock()
		if len(g.decs) >= maxDecisions {
			clear(g.decs)
		}
		g.decs[k] = d
		g.decMu.Unlock()
	}
	return d
}

// policyToolInput is the Rego input document of a tools decision.
func policyToolInput(in ToolInput) policies.ToolInput {
	scope := "user"
	if in.Server.Layer.IsProject() {
		scope = "project"
	}
	return policies.ToolInput{
		Server: policies.Server{ID: in.Server.ID, Scope: scope, Transport: in.Server.Transport,
			Command: in.Server.Command, Args: in.Server.Args, URL: cue.RedactURL(in.Server.URL)},
		Tool:         policies.Tool{Name: in.Tool.Name, Title: in.Tool.Title, Annotations: in.Tool.Annotations},
		Risk:         string(in.Risk),
		RiskReason:   in.RiskReason,
		IncludeTools: in.Server.IncludeTools,
		ExcludeTools: in.Server.ExcludeTools,
		Pin:          policies.Pin{State: in.Pin.State, Change: in.Pin.Change},
		Quarantined:  in.Quarantined,
		Surface:      string(in.Surface),
	}
}

// redactor returns the compiled voltmcp.redact decision: secrets by key
// name, value pattern, and the values of the env vars the config names.
func (g *guard) redactor() *policies.Redactor {
	if red := g.red.Load(); red != nil {
		return red
	}
	g.redMu.Lock()
	defer g.redMu.Unlock()
	if red := g.red.Load(); red != nil {
		return red
	}
	if g.redFallback != nil && time.Now().Before(g.redRetry) {
		return g.redFallback
	}
	var names []string
	for _, s := range g.cfg.Servers {
		for k := range s.Env {
			names = append(names, k)
		}
		names = append(names, s.EnvAllowlist...)
		for _, v := range s.Env {
			names = append(names, cue.EnvRefs(v)...)
		}
		for _, v := range s.Headers {
			names = append(names, cue.EnvRefs(v)...)
		}
	}
	slices.Sort(names)
	red, err := g.policies().Redactor(context.Background(), policies.RedactInput{EnvNames: slices.Compact(names), LookupEnv: g.e.lookup,
		Values: literalSecrets(g.cfg.Servers)})
	if err == nil {
		g.red.Store(red)
		return red
	}
	if g.redFallback == nil {
		g.e.log.Error("redact policy failed; using the built-in patterns until it answers", "err", err)
	}
	// The audit log's writer asks for the redactor: the record goes to
	// it from another goroutine, which may wait for it. It fails at most
	// once each redactRetry.
	go g.e.recordPolicyError(context.Background(), policies.AreaRedact, err, nil)
	g.redFallback, g.redRetry = red, time.Now().Add(redactRetry)
	return red
}

// literalSecrets are the credentials the servers' definitions hold as
// literals, which no env name leads the redact decision to: env and
// header values lint calls secret, credentials in the arguments, and an
// auth token or client secret written out. The engine's scrubber removes
// them from errors; the audit log's redactor must know them too.
func literalSecrets(servers []cue.Server) []string {
	var out []string
	for _, s := range servers {
		for _, m := range []map[string]string{s.Env, s.Headers} {
			for name, v := range m {
				if !cue.HasEnvRef(v) && redact.IsLiteralSecret(name, v) {
					out = append(out, v)
				}
			}
		}
		out = append(out, redact.ArgSecrets(s.Args)...)
		if a := s.Auth; a != nil {
			for _, v := range []string{a.Token, a.ClientSecret} {
				if v != "" && !cue.HasEnvRef(v) {
					out = append(out, v)
				}
			}
		}
	}
	return out
}

// redactRetry is how long a redact decision that failed is stood in for
// by the built-in patterns before the policies are asked again.
const redactRetry = time.Second

// plugins returns the chain of configured modules once the guard's
// preparation has set it up. Until then it lets ctx's connection reader
// go (yieldReader) and waits; when ctx ends first, it returns an empty
// chain, which rates every tool unknown and shapes by the hard cap alone.
func (g *guard) plugins(ctx context.Context) *wasm.Chain {
	select {
	case <-g.plugReady:
		return g.chain
	default:
	}
	turn.Yield(ctx) // a module may take seconds to compile
	select {
	case <-g.plugReady:
		return g.chain
	case <-ctx.Done():
		return &wasm.Chain{}
	}
}

// risk classifies a tool once per metadata hash (see rate).
func (g *guard) risk(ctx context.Context, server string, t Tool) (Risk, string) {
	r, _ := g.rate(ctx, server, t)
	return r.risk, r.reason
}

// rate classifies a tool once per metadata hash, and reports whether
// the rating may be stored with the listing: one the classifiers made
// without a fault, with no classifier missing, and not cut short. A
// rating stored with the server's cached listing under the current
// ratingKey is taken instead of asking the classifiers (see
// storedRating). A rating that a classifier fault shaped is kept for
// riskRetryAfter only. The classifiers run under ctx: once it ends (the
// caller gave up, the engine closes), rate answers unknown at once, and
// that answer is not kept, so the next caller asks the classifiers
// again.
func (g *guard) rate(ctx context.Context, server string, t Tool) (riskEntry, bool) {
	if g.e.opts.Classify != nil {
		risk, why := g.e.opts.Classify(server, t)
		return riskEntry{risk, why}, false
	}
	key := server + "\x00" + t.Name + "\x00" + t.Hash
	g.riskMu.Lock()
	r, ok := g.risks[key]
	retry, faulted := g.riskRetry[key]
	g.riskMu.Unlock()
	if ok && (!faulted || time.Now().Before(retry)) {
		return r, !faulted && g.plugErr == nil
	}
	cancelled := func() (riskEntry, bool) {
		return riskEntry{RiskUnknown, "classification cancelled: " + ctx.Err().Error()}, false
	}
	if ctx.Err() != nil {
		return cancelled()
	}
	faulted = false
	chain := g.plugins(ctx)
	if ctx.Err() != nil {
		return cancelled()
	}
	if g.plugErr != nil {
		r = riskEntry{RiskUnknown, g.secrets.Text("classifier unavailable: " + g.plugErr.Error())}
	} else if stored, ok := g.storedRating(server, t); ok {
		r = stored
	} else {
		// Annotations are the server's own claim about itself: unless the
		// server's config trusts them, they may raise a tool's risk but
		// never lower it, and the risk reason says what they claimed.
		if !g.acquire() {
			// A reload replaced and closed this guard: the current one
			// rates.
			if next := g.e.guard.Load(); next != g {
				return next.rate(ctx, server, t)
			}
			return riskEntry{RiskUnknown, "classification cancelled: the engine is closed"}, false
		}
		c := chain.Classify(ctx, wasm.ClassifyInput{Server: server, Tool: t.Name, Title: t.Title, Description: t.Description,
			InputSchema: t.InputSchema, Annotations: t.Annotations, TrustToolHints: g.trustHints[server]})
		g.release()
		// What a plugin says passes the scrubber like what a server says.
		r = riskEntry{Risk(c.Risk), g.secrets.Text(c.Reason)}
		if !validRisk(r.risk) {
			r = riskEntry{RiskUnknown, "classifier answered " + c.Risk}
		}
		faulted = c.Faulted
		if ctx.Err() != nil {
			// Cut short by the caller, not rated: nothing is kept.
			return cancelled()
		}
	}
	g.riskMu.Lock()
	g.risks[key] = r
	if faulted {
		g.riskRetry[key] = time.Now().Add(riskRetryAfter)
	} else {
		delete(g.riskRetry, key)
	}
	g.riskMu.Unlock()
	return r, !faulted && g.plugErr == nil
}

// validRisk reports whether r is one of the four risks.
func validRisk(r Risk) bool {
	switch r {
	case RiskRead, RiskWrite, RiskDestructive, RiskUnknown:
		return true
	}
	return false
}

// ratingRules versions how the engine turns a classifier's answer into
// a rating (the checks and the scrubbing in rate, what ClassifyInput
// holds): a change there must change it, so that ratings stored by an
// engine that rated otherwise are made again.
const ratingRules = "voltmcp-rating-1"

// ratingKey is the fingerprint stored ratings of server's tools must
// carry to be used (Ratings.Classifier): ratingRules, the chain's
// fingerprint (plugFP), the server and whether its config trusts its
// tool hints. It is "" when nothing may be stored: the Classify hook
// rates, a classifier did not load, or the chain is not ready.
func (g *guard) ratingKey(server string) string {
	if g.e.opts.Classify != nil {
		return ""
	}
	select {
	case <-g.plugReady:
	default:
		return ""
	}
	if g.plugErr != nil || g.plugFP == "" {
		return ""
	}
	h := sha256.New()
	for _, f := range []string{ratingRules, g.plugFP, server, strconv.FormatBool(g.trustHints[server])} {
		fmt.Fprintf(h, "%d:%s\n", len(f), f)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// storedRating is the rating of t stored with server's cached listing,
// when the listing's ratings carry the current ratingKey and one for
// t's hash. Its reason passes the scrubber, as a classifier's does.
func (g *guard) storedRating(server string, t Tool) (riskEntry, bool) {
	s, err := g.e.supervisor(server)
	if err != nil {
		return riskEntry{}, false
	}
	s.mu.Lock()
	m := s.meta
	s.mu.Unlock()
	if m == nil || m.Ratings == nil || t.Hash == "" {
		return riskEntry{}, false
	}
	r, ok := m.Ratings.Tools[t.Hash]
	if !ok || !validRisk(r.Risk) || m.Ratings.Classifier != g.ratingKey(server) {
		return riskEntry{}, false
	}
	return riskEntry{r.Risk, g.secrets.Text(r.Reason)}, true
}

// rateListing rates every tool of m, the held ones too, and returns the
// ratings to store with it: those rate may keep, under server's
// ratingKey. It is nil when nothing may be stored. Tools rated before
// (by hash, in memory or in the cached listing) are not rated again.
func (g *guard) rateListing(ctx context.Context, server string, m *Metadata) *Ratings {
	if g.e.opts.Classify != nil {
		return nil
	}
	g.plugins(ctx)
	key := g.ratingKey(server)
	if key == "" {
		return nil
	}
	out := &Ratings{Classifier: key, Tools: make(map[string]Rating, len(m.Tools)+len(m.Held))}
	for _, list := range [][]Tool{m.Tools, m.Held} {
		for _, t := range list {
			if r, keep := g.rate(ctx, server, t); keep && t.Hash != "" {
				out.Tools[t.Hash] = Rating{Risk: r.risk, Reason: r.reason}
			}
		}
	}
	return out
}

// acquire holds the guard's plugin chain for a use, and reports false
// when the guard is closed; a true answer is followed by release.
func (g *guard) acquire() bool {
	g.use.RLock()
	if g.closed {
		g.use.RUnlock()
		return false
	}
	return true
}

// release ends a use that acquire began.
func (g *guard) release() { g.use.RUnlock() }

// heldGuard returns the current guard, held for a use of its plugin
// chain (see [guard.acquire]), with the function that ends the use; it
// is nil once the Engine closed.
func (e *Engine) heldGuard() (*guard, func()) {
	for {
		g := e.guard.Load()
		if g.acquire() {
			return g, g.release
		}
		if e.guard.Load() == g {
			return nil, func() {}
		}
	}
}

// close ends the guard's preparation, waits for it (a module being
// compiled finishes first) and for the uses of its plugin chain in
// flight (a reload's calls of servers it keeps), and releases the wasm
// host.
func (g *guard) close() {
	g.stop()
	<-g.prepared
	g.use.Lock()
	g.closed = true
	g.use.Unlock()
	if g.host != nil {
		_ = g.host.Close(context.Background())
	}
}

// hookDecide asks Options.Decide, and reports false when the hook
// panics, for callers on the engine's own goroutines (discovery), which
// a library user's bug must not take down. The stack is logged; the
// panic's value, which may hold what the hook was deciding about, is
// not.
func (e *Engine) hookDecide(in ToolInput) (d ToolDecision, ok bool) {
	defer func() {
		if v := recover(); v != nil {
			e.log.Error("the Decide hook panicked", "server", in.Server.ID, "tool", in.Tool.Name, "stack", string(debug.Stack()))
			d, ok = ToolDecision{}, false
		}
	}()
	return e.opts.Decide(in), true
}
