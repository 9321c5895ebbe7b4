package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/voltmcp/voltmcp/engine/audit"
	"github.com/voltmcp/voltmcp/engine/internal/pin"
)

// The events of bounding and pinning.
const (
	// EventPinsChanged reports a pin event of one tool (Tool): pinned on
	// first sight, changed since pinned (Message gives the severity and
	// what changed), change reverted, approved; or, with Error and no
	// Tool, that the server's pins could not be read or written, so that
	// every tool of it counts as changed until they can.
	EventPinsChanged EventType = "mcp_pins_changed"
	// EventMetadataBounded reports that a discovery dropped or cleaned
	// items of a server's metadata; Message counts them, and the server's
	// summary lists them with their reasons.
	EventMetadataBounded EventType = "mcp_metadata_bounded"
)

// The pin states of [PinState].
const (
	PinNew      = "new"
	PinPinned   = "pinned"
	PinChanged  = "changed"
	PinApproved = "approved"
)

// pinBook is the Engine's pin store, opened on first use under
// <AgentDir>/mcp/pins. The zero pinBook is ready to use.
type pinBook struct {
	once  sync.Once
	store *pin.Store
	err   error
}

// pinStore returns the pin store, opening it on first use.
func (e *Engine) pinStore() (*pin.Store, error) {
	e.pins.once.Do(func() {
		e.pins.store, e.pins.err = pin.OpenStore(e.pinDir())
	})
	return e.pins.store, e.pins.err
}

// pinDir is where the pin files are.
func (e *Engine) pinDir() string { return pinDirOf(e.opts.AgentDir) }

// The stores of state about servers under an agent directory, each keyed
// by the server's identity (see [Forget]).
func pinDirOf(agentDir string) string    { return filepath.Join(agentDir, "mcp", "pins") }
func cacheDirOf(agentDir string) string  { return filepath.Join(agentDir, "mcp", "cache") }
func outputDirOf(agentDir string) string { return filepath.Join(agentDir, "mcp", "outputs") }

// pinCache is what a supervisor knows of its server's pins. It is
// guarded by the supervisor's mu; the zero pinCache knows nothing.
type pinCache struct {
	// pins is the content of the pin file as of stamp, or err.
	valid bool
	stamp pin.Stamp
	pins  pin.Pins
	err   error
	// failure is why the last Observe failed; while it is set, every
	// tool counts as changed (escalation): pins fail closed.
	failure string
	// fresh holds the tools the last discovery pinned on first sight;
	// approved those approved through this Engine since.
	fresh    map[string]bool
	approved map[string]bool
	// checked is when the file's stamp was last compared with stamp.
	checked time.Time
}

// pinRecheck is how long a supervisor trusts its copy of the pin file
// before it looks at the file's stamp again. Changes this Engine makes
// show at once; another process's (voltmcp approve) within this time.
// A stat on every call costs tens of microseconds on a small VM.
const pinRecheck = time.Second

// currentPins returns the server's pins, read again when the file changed
// (another process may approve), and the failure of the last Observe.
func (s *supervisor) currentPins() (pin.Pins, string, error) {
	now := time.Now()
	s.mu.Lock()
	if c := &s.pins; c.valid && now.Sub(c.checked) < pinRecheck && now.After(c.checked) {
		p, failure, err := c.pins, c.failure, c.err
		s.mu.Unlock()
		return p, failure, err
	}
	s.mu.Unlock()
	stamp, err := pin.StampOf(s.e.pinDir(), s.ident)
	if err != nil {
		return pin.Pins{}, "", errors.New(s.scrub.Text(err.Error()))
	}
	s.mu.Lock()
	if c := &s.pins; c.valid && c.stamp == stamp {
		c.checked = now
		p, failure, err := c.pins, c.failure, c.err
		s.mu.Unlock()
		return p, failure, err
	}
	s.mu.Unlock()
	var p pin.Pins
	if !stamp.Exists {
		// Nothing pinned yet; the store is opened (and its directory
		// made) only when something is written.
		p = pin.Pins{Server: s.ident, Tools: map[string]pin.Pin{}, Pending: map[string]pin.Pending{},
			// Not seen yet, so not approved: whether quarantine holds it
			// is recorded on its first sight.
			Approval: &pin.Approval{}}
	} else if store, serr := s.e.pinStore(); serr != nil {
		err = serr
	} else {
		p, err = store.Get(s.ident)
	}
	if err != nil {
		err = errors.New(s.scrub.Text(err.Error()))
	}
	p = slimPins(p)
	s.mu.Lock()
	s.pins.valid, s.pins.stamp, s.pins.pins, s.pins.err, s.pins.checked = true, stamp, p, err, now
	failure := s.pins.failure
	s.mu.Unlock()
	if err == nil {
		s.swapApproved(p)
	}
	return p, failure, err
}

// slimPins returns p as the supervisor keeps it between reads of the
// pin file: of a tool without a pending change, only the pin's hash,
// time, name and risk, which pin states, swapApproved and the pins view
// read; of a tool whose change waits, the whole pinned metadata, which
// the pins view diffs. The rest of a pin (a tool's description, schema
// and annotations) is in the file, and in memory again only when a
// discovery reads the file, so that an idle gateway does not hold a
// second copy of every listed tool's metadata.
func slimPins(p pin.Pins) pin.Pins {
	if len(p.Tools) == 0 {
		return p
	}
	tools := make(map[string]pin.Pin, len(p.Tools))
	for name, pn := range p.Tools {
		if _, pending := p.Pending[name]; !pending {
			pn.Meta = pin.Meta{Name: pn.Meta.Name, Risk: pn.Meta.Risk}
		}
		tools[name] = pn
	}
	p.Tools = tools
	return p
}

// pinState returns the pin state of a tool of server, for the tools
// decision (ToolInput.Pin): "new" when the last discovery pinned it on
// first sight (or it was never pinned: metadata from before pinning),
// "pinned" when it matches its pin, "approved" when its pin is a change
// approved through this Engine, and "changed" with the change's severity
// while a change waits for approval. Pins fail closed: when they cannot
// be read or the last discovery could not write them, every tool is
// "changed" with severity "escalation", and the server's summary says
// why (PinError).
func (e *Engine) pinState(server string, t Tool) PinState {
	s, err := e.supervisor(server)
	if err != nil {
		return PinState{State: PinChanged, Change: string(pin.SeverityEscalation)}
	}
	return s.pinState(t)
}

// pinState is [Engine.pinState] for the supervisor's server.
func (s *supervisor) pinState(t Tool) PinState {
	st, _ := s.pinInput(t)
	return st
}

// pinInput returns what the pin store says for a tools decision about
// t: its pin state (see [Engine.pinState]) and whether its server waits
// for approval (ToolInput.Quarantined): it was first seen while
// quarantine applied to it, or has not been seen yet, and nobody has
// approved it since. Pins fail closed: when they cannot be read or
// written, the server also counts as waiting for approval.
func (s *supervisor) pinInput(t Tool) (PinState, bool) {
	p, failure, err := s.currentPins()
	if err != nil || failure != "" {
		return PinState{State: PinChanged, Change: string(pin.SeverityEscalation)}, true
	}
	return s.toolPinState(p, t), !p.ServerApproved()
}

// toolPinState is the pin state of t in p.
func (s *supervisor) toolPinState(p pin.Pins, t Tool) PinState {
	if pend, ok := p.Pending[t.Name]; ok {
		sev := pend.Change.Severity
		if sev == "" || sev == pin.SeverityNone {
			sev = pin.SeverityCosmetic
		}
		return PinState{State: PinChanged, Change: string(sev)}
	}
	if _, ok := p.Tools[t.Name]; !ok {
		return PinState{State: PinNew}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.pins.approved[t.Name]:
		return PinState{State: PinApproved}
	case s.pins.fresh[t.Name]:
		return PinState{State: PinNew}
	}
	return PinState{State: PinPinned}
}

// pinMeta is what a pin records of a tool: its bounded metadata and the
// risk the engine rates it, under ctx (see guard.risk).
func (e *Engine) pinMeta(ctx context.Context, server string, t Tool) pin.Meta {
	risk, _ := e.risk(ctx, server, t)
	return pin.Meta{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema,
		Annotations: t.Annotations, Risk: string(risk)}
}

// toolOfPin is the tool shown while a change waits: the pinned metadata.
// The output schema, which pins do not record, is left out.
func toolOfPin(m pin.Meta) Tool {
	t := Tool{Name: m.Name, Title: m.Title, Description: m.Description, InputSchema: m.InputSchema, Annotations: m.Annotations}
	t.Hash = toolHash(t)
	return t
}

// holds reports whether a change of severity sev is held: its tool keeps
// showing its pinned version until the change is approved. These are the
// severities the default tools policy blocks calls for.
func holds(sev pin.Severity) bool { return sev.Rank() >= pin.SeveritySchemaBreaking.Rank() }

// observePins compares the tools a discovery listed with their pins (see
// [pin.Store.Observe]): new tools are pinned; a tool whose change is held
// (schema-breaking or escalation) is shown in its pinned version, the
// listed one kept in m.Held until approved, so that neither its new text
// nor its new schema reaches a model before a person has seen them. A
// cosmetic, description or schema-compatible change is shown as listed
// and stays pending in the store for review. When the store fails, every
// tool counts as changed (fail closed) and a note says why. It returns
// the events to publish once m is in place.
//
// The tools are rated under ctx: when it ends before every tool is
// rated, nothing is pinned and observePins returns ctx's error, so that
// no pin records a rating cut short.
func (s *supervisor) observePins(ctx context.Context, m *Metadata) ([]Event, error) {
	id := s.cfg.ID
	fail := func(err error) ([]Event, error) {
		msg := s.scrub.Text(err.Error())
		s.mu.Lock()
		s.pins.failure, s.pins.valid = msg, false
		s.mu.Unlock()
		m.Notes = append(m.Notes, "pins: "+msg+"; every tool of this server counts as changed (escalation) until its pins can be written")
		return []Event{{Type: EventPinsChanged, Server: id, Error: msg}}, nil
	}
	store, err := s.e.pinStore()
	if err != nil {
		return fail(err)
	}
	metas := make([]pin.Meta, len(m.Tools))
	for i, t := range m.Tools {
		if ctx.Err() != nil {
			break
		}
		metas[i] = s.e.pinMeta(ctx, id, t)
	}
	// On the server's first sight, the tools policy says whether it is
	// held until someone approves it (quarantine_new_servers).
	quarantined := false
	if stamp, err := pin.StampOf(s.e.pinDir(), s.ident); err != nil {
		return fail(err)
	} else if !stamp.Exists {
		quarantined = s.quarantinedOnFirstSight(ctx, m.Tools)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("rating the tools: %w", err)
	}
	res, err := store.ObserveServer(s.ident, metas, nil, quarantined)
	if err != nil {
		return fail(err)
	}
	var events []Event
	if res.FirstSight && quarantined {
		msg := "first seen while new servers are held for review: its tools are listed as pending and cannot be called until someone approves the server (voltmcp approve " + id + ")"
		events = append(events, Event{Type: EventPinsChanged, Server: id, Message: msg})
		s.e.record(context.Background(), audit.Record{Kind: audit.KindPinChange, Server: id, Status: "quarantined",
			Detail: map[string]any{"details": []string{msg}}})
	}
	if len(res.Changed) > 0 {
		p, err := store.Get(s.ident)
		if err != nil {
			return fail(err)
		}
		index := make(map[string]int, len(m.Tools))
		for i, t := range m.Tools {
			index[t.Name] = i
		}
		for _, c := range res.Changed {
			msg := fmt.Sprintf("changed since it was pinned (%s): %s", c.Change.Severity, strings.Join(firstN(c.Change.Details, 3), "; "))
			if holds(c.Change.Severity) {
				i, ok := index[c.Name]
				pinned, pok := p.Tools[c.Name]
				if ok && pok {
					m.Held = append(m.Held, m.Tools[i])
					m.Tools[i] = toolOfPin(pinned.Meta)
				}
				msg += "; its pinned version is shown and calls wait for approval (voltmcp approve " + id + " " + c.Name + ")"
			}
			events = append(events, Event{Type: EventPinsChanged, Server: id, Tool: c.Name, Message: msg})
			if c.New {
				status := "changed"
				if holds(c.Change.Severity) {
					status = "held"
				}
				s.e.record(context.Background(), audit.Record{Kind: audit.KindPinChange, Server: id, Tool: c.Name, Status: status,
					Detail: map[string]any{"severity": string(c.Change.Severity), "details": c.Change.Details}})
			}
		}
		m.Hash = metadataHash(m.Tools)
	}
	for _, name := range res.New {
		events = append(events, Event{Type: EventPinsChanged, Server: id, Tool: name, Message: "pinned on first sight"})
	}
	for _, name := range res.Reverted {
		events = append(events, Event{Type: EventPinsChanged, Server: id, Tool: name, Message: "back to its pinned version; the pending change is gone"})
		s.e.record(context.Background(), audit.Record{Kind: audit.KindPinChange, Server: id, Tool: name, Status: "reverted"})
	}
	if len(res.Missing) > 0 {
		m.Notes = append(m.Notes, fmt.Sprintf("pins: %d pinned tools are no longer listed: %s", len(res.Missing), strings.Join(firstN(res.Missing, 10), ", ")))
	}
	s.mu.Lock()
	s.pins.failure, s.pins.valid = "", false
	s.pins.fresh = map[string]bool{}
	for _, name := range res.New {
		s.pins.fresh[name] = true
	}
	for _, c := range res.Changed {
		delete(s.pins.approved, c.Name)
	}
	s.mu.Unlock()
	return events, nil
}

// quarantinedOnFirstSight asks the tools policy whether the server, seen
// for the first time listing tools, must wait for approval: whether
// quarantine_new_servers holds for it while it is not approved. Each tool
// is asked (a rule may look at tools), or a stand-in when there is none,
// so that a server cannot escape by listing nothing at first. A policy
// that fails to decide holds the server (fail closed). The built-in
// policy never quarantines. With Options.Decide, the server is held when
// the hook refuses a tool of the unapproved server that it allows once
// approved.
func (s *supervisor) quarantinedOnFirstSight(ctx context.Context, tools []Tool) bool {
	e := s.e
	g := e.guard.Load()
	if e.opts.Decide == nil && !g.custom && e.opts.Policies == nil {
		return false
	}
	if len(tools) == 0 {
		tools = []Tool{{Name: "*"}}
	}
	for _, t := range tools {
		risk, why := e.risk(ctx, s.cfg.ID, t)
		in := ToolInput{Server: s.cfg, Tool: t, Risk: risk, RiskReason: why, Surface: e.opts.Surface,
			Pin: PinState{State: PinNew}, Quarantined: true}
		if e.opts.Decide != nil {
			// A hook that panics holds the server (fail closed), and
			// discovery, on the engine's own goroutine, goes on.
			held, ok := e.hookDecide(in)
			if !ok {
				return true
			}
			if !held.Allowed {
				open := in
				open.Quarantined = false
				if opened, ok := e.hookDecide(open); !ok || opened.Allowed {
					return true
				}
			}
			continue
		}
		pol := g.policies()
		d := pol.Tools(context.Background(), policyToolInput(in))
		if d.Quarantined || d.Err != nil {
			return true
		}
		for _, r := range d.Reasons {
			if r.Rule == "error" || r.Rule == "input" || r.Rule == "quarantine_new_servers" {
				return true
			}
		}
	}
	return false
}

// firstN returns the first n items of list, and "…" when there are more.
func firstN(list []string, n int) []string {
	if len(list) <= n {
		return list
	}
	return append(slices.Clone(list[:n]), "…")
}

// swapApproved shows the listed version of each held tool whose change is
// no longer pending and whose pin is now that version: approved, here or
// by another process. The cache is written again.
func (s *supervisor) swapApproved(p pin.Pins) {
	s.mu.Lock()
	m := s.meta
	s.mu.Unlock()
	if m == nil || len(m.Held) == 0 {
		return
	}
	var swap []Tool
	var keep []Tool
	for _, h := range m.Held {
		pinned, ok := p.Tools[h.Name]
		if _, pending := p.Pending[h.Name]; !pending && ok && pinned.Hash == pin.Hash(s.e.pinMeta(s.ctx, s.cfg.ID, h)) {
			swap = append(swap, h)
		} else {
			keep = append(keep, h)
		}
	}
	if len(swap) == 0 {
		return
	}
	nm := *m
	nm.Tools = slices.Clone(m.Tools)
	nm.Held = keep
	for _, h := range swap {
		for i, t := range nm.Tools {
			if t.Name == h.Name {
				nm.Tools[i] = h
			}
		}
	}
	nm.Hash = metadataHash(nm.Tools)
	s.mu.Lock()
	if s.meta != m { // a discovery replaced it meanwhile
		s.mu.Unlock()
		return
	}
	s.meta = &nm
	s.mu.Unlock()
	if err := s.e.cache.save(&nm); err != nil {
		s.log.Warn("metadata cache", "err", err)
	}
	s.e.bus.publish(Event{Type: EventServersChanged, Server: s.cfg.ID})
}

// PinView is one pinned tool of a server, with its pending change if
// any: what `voltmcp pins` shows.
type PinView struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// State is "pinned", "changed" (a change waits for approval; see
	// Pending) or "missing" (pinned, but the server's last listing did
	// not have it).
	State string `json:"state"`
	// Risk is the risk class recorded in the pin.
	Risk     string    `json:"risk,omitempty"`
	Hash     string    `json:"hash"`
	PinnedAt time.Time `json:"pinnedAt"`
	// Pending is the change waiting for approval, or nil.
	Pending *PendingChange `json:"pending,omitempty"`
	// Quarantined is true when the server itself waits for approval: it
	// was first seen while the tools policy held new servers
	// (quarantine_new_servers), and `voltmcp approve SERVER` has not
	// approved it since.
	Quarantined bool `json:"quarantined,omitempty"`
}

// PendingChange is a tool's change since it was pinned.
type PendingChange struct {
	// Severity is cosmetic, description, schema-compatible,
	// schema-breaking or escalation; the last two are held (the pinned
	// version is shown and calls wait for approval).
	Severity string `json:"severity"`
	// Held is true when the change is held.
	Held bool `json:"held"`
	// Details says what changed, one finding each.
	Details []string  `json:"details,omitempty"`
	Hash    string    `json:"hash"`
	SeenAt  time.Time `json:"seenAt"`
	// Diff is a readable line diff from the pinned version (see
	// pin.Diff): "-" lines removed, "+" lines added.
	Diff string `json:"diff"`
}

// Pins lists the pins of a server, or of every configured server when
// server is "", sorted by server and tool, with each pending change rated
// and diffed. A pin file that cannot be read is an error: nothing of
// that server is listed as if it were fine.
func (e *Engine) Pins(ctx context.Context, server string) ([]PinView, error) {
	var sups []*supervisor
	if server != "" {
		s, err := e.supervisor(server)
		if err != nil {
			return nil, err
		}
		sups = append(sups, s)
	} else {
		e.mu.Lock()
		for _, s := range e.servers {
			sups = append(sups, s)
		}
		e.mu.Unlock()
		sort.Slice(sups, func(i, j int) bool { return sups[i].cfg.ID < sups[j].cfg.ID })
	}
	out := []PinView{}
	for _, s := range sups {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p, _, err := s.currentPins()
		if err != nil {
			return nil, fmt.Errorf("pins of %s: %w", s.cfg.ID, err)
		}
		s.mu.Lock()
		m := s.meta
		s.mu.Unlock()
		listed := map[string]bool{}
		if m != nil {
			for _, t := range m.Tools {
				listed[t.Name] = true
			}
		}
		names := make([]string, 0, len(p.Tools))
		for name := range p.Tools {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			pn := p.Tools[name]
			v := PinView{Server: s.cfg.ID, Tool: name, State: PinPinned, Risk: pn.Meta.Risk, Hash: pn.Hash, PinnedAt: pn.PinnedAt,
				Quarantined: !p.ServerApproved()}
			if m != nil && !listed[name] {
				v.State = "missing"
			}
			if pend, ok := p.Pending[name]; ok {
				v.State = PinChanged
				v.Pending = &PendingChange{Severity: string(pend.Change.Severity), Held: holds(pend.Change.Severity),
					Details: pend.Change.Details, Hash: pend.Hash, SeenAt: pend.SeenAt, Diff: pin.Diff(pn.Meta, pend.Meta)}
			}
			out = append(out, v)
		}
	}
	return out, nil
}

// Approve accepts the pending changes of the named tools of a server, or
// of all its tools when none is named: each change becomes the tool's
// pin, and a held tool shows its listed version again. With no tool
// named, the server itself is approved too: a server that quarantine
// held (see quarantine_new_servers in the tools policy) becomes
// callable, and a server not seen yet will not be held when it is. Naming
// a tool without a pending change is an error, and then nothing is
// approved. Each approval is audited.
func (e *Engine) Approve(ctx context.Context, server string, tools ...string) error {
	s, err := e.supervisor(server)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	store, err := e.pinStore()
	if err != nil {
		return fmt.Errorf("approve: %w", err)
	}
	names := tools
	serverApproved := false
	if len(names) == 0 {
		names, serverApproved, err = store.ApproveAll(s.ident)
	} else {
		err = store.Approve(s.ident, names...)
	}
	if err != nil {
		return fmt.Errorf("approve %s: %w", s.cfg.ID, err)
	}
	s.mu.Lock()
	s.pins.valid = false
	if s.pins.approved == nil {
		s.pins.approved = map[string]bool{}
	}
	for _, name := range names {
		s.pins.approved[name] = true
	}
	s.mu.Unlock()
	if len(names) > 0 || serverApproved {
		e.record(ctx, audit.Record{Kind: audit.KindApprove, Server: s.cfg.ID, Status: "approved",
			Detail: map[string]any{"tools": names, "server": serverApproved}})
	}
	if _, _, err := s.currentPins(); err != nil { // swaps held tools back in
		return fmt.Errorf("approve: %w", err)
	}
	for _, name := range names {
		e.bus.publish(Event{Type: EventPinsChanged, Server: s.cfg.ID, Tool: name, Message: "change approved; the listed version is now pinned"})
	}
	if serverApproved {
		e.bus.publish(Event{Type: EventPinsChanged, Server: s.cfg.ID, Message: "server approved; quarantine no longer holds its tools"})
		e.bus.publish(Event{Type: EventServersChanged, Server: s.cfg.ID})
	}
	return nil
}

// pinSummary says how many changes wait for approval and why pins fail,
// for the server's summary.
func (s *supervisor) pinSummary() (pending int, quarantined bool, pinErr string) {
	p, failure, err := s.currentPins()
	switch {
	case err != nil:
		return 0, false, err.Error() + "; every tool of this server counts as changed (escalation)"
	case failure != "":
		return len(p.Pending), false, failure + "; every tool of this server counts as changed (escalation)"
	}
	held := p.Approval != nil && !p.Approval.Approved && p.Approval.By == pin.ByQuarantine
	return len(p.Pending), held, ""
}
