package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/engine/audit"
	"github.com/voltmcp/voltmcp/engine/internal/turn"
	"github.com/voltmcp/voltmcp/policies"
	"github.com/voltmcp/voltmcp/wasm"
)

// trustFunc returns the project trust decision for cue.Load:
// Options.Trust when set; else, when the user layers or PolicyDirs name
// policy files, the voltmcp.trust policy with them; else cue.DecideTrust,
// which the built-in policy reproduces. The decisions of serving surfaces
// are audited.
func (e *Engine) trustFunc(ctx context.Context) func(cue.TrustInput) cue.TrustDecision {
	return func(in cue.TrustInput) cue.TrustDecision {
		var d cue.TrustDecision
		switch {
		case e.opts.Trust != nil:
			d = e.opts.Trust(in)
		case len(in.UserPolicies) == 0 && len(e.opts.PolicyDirs) == 0 && e.opts.Policies == nil:
			d = cue.DecideTrust(in)
		default:
			pol := e.opts.Policies
			if pol == nil {
				// Only the user's policies decide trust: a project cannot
				// vouch for itself.
				pol, _ = policies.Load(ctx, &policies.Options{Dirs: append(slices.Clone(e.opts.PolicyDirs), in.UserPolicies...)})
			}
			d = policyTrust(ctx, pol, in)
		}
		// The surfaces that serve agents record the decision they run
		// under; a one-shot command that lists or inspects does not add a
		// line each time it starts (its calls are recorded as calls).
		switch in.Surface {
		case cue.SurfaceServe, cue.SurfaceRPC, cue.SurfaceDaemon:
			e.record(ctx, audit.Record{Kind: audit.KindTrust, Status: trustStatus(d), Decision: &audit.Decision{Allowed: d.Trusted, Reasons: []string{d.Reason}},
				Detail: map[string]any{"project": in.Project, "files": trustFiles(in.Files)}})
		}
		return d
	}
}

func trustStatus(d cue.TrustDecision) string {
	if d.Trusted {
		return "trusted"
	}
	return "untrusted"
}

func trustFiles(files []cue.FileStatus) []string {
	var out []string
	for _, f := range files {
		if f.Found {
			out = append(out, f.Path+" sha256:"+f.SHA256)
		}
	}
	return out
}

// policyTrust asks the voltmcp.trust policy.
func policyTrust(ctx context.Context, pol *policies.Policies, in cue.TrustInput) cue.TrustDecision {
	abs := func(p string) string {
		if a, err := filepath.Abs(p); err == nil {
			return a
		}
		return p
	}
	pin := policies.TrustInput{Project: abs(in.Project), Surface: string(in.Surface), DefaultProjectTrust: in.DefaultProjectTrust,
		Approve: in.Approve, NoApprove: in.NoApprove}
	for _, f := range in.Files {
		if f.Found {
			pin.Files = append(pin.Files, policies.FileHash{Path: abs(f.Path), ContentHash: f.SHA256})
		}
	}
	for _, r := range in.TrustedProjects {
		for _, f := range r.Files {
			pin.TrustedProjects = append(pin.TrustedProjects, policies.FileHash{Path: f.Path, ContentHash: f.SHA256})
		}
	}
	pd := pol.Trust(ctx, pin)
	var reasons []string
	for _, r := range pd.Reasons {
		reasons = append(reasons, r.String())
	}
	return cue.TrustDecision{Trusted: pd.Trusted, Changed: pd.NeedsTrust, Reason: strings.Join(reasons, "; ")}
}

// record appends r to the audit log with the engine's workspace, session
// and surface, redacted by the voltmcp.redact decision. The log opens on
// first use. Records are written by one goroutine in the order they are
// made, off the path of the call they record: a call does not wait for
// the disk, and a full queue (the disk fell behind) makes callers wait
// rather than lose records. (A lean call's records are built and
// written after its answer, by the audit backlog: see auditBacklog.)
// Close writes what is queued. A failure to write is logged and
// published as an event; it does not fail the call.
func (e *Engine) record(ctx context.Context, r audit.Record) {
	if e.opts.DisableAudit {
		return
	}
	r.Time = time.Now()
	if h, _ := ctx.Value(heldRecordsKey{}).(*heldRecords); h != nil && h.hold(func() audit.Record { return r }) {
		return
	}
	e.push(r)
}

// recordLater is record for a record that costs something to build:
// when ctx holds its records (withHeldRecords), build runs when they are
// released, after the call's answer is written. The record keeps the
// time of this call.
func (e *Engine) recordLater(ctx context.Context, build func() audit.Record) {
	if e.opts.DisableAudit {
		return
	}
	if h, _ := ctx.Value(heldRecordsKey{}).(*heldRecords); h != nil {
		at := time.Now()
		if h.hold(func() audit.Record { r := build(); r.Time = at; return r }) {
			return
		}
	}
	e.record(ctx, build())
}

// push opens the log on first use, adds the engine's workspace, session
// and surface to r and hands it to the log's writer.
func (e *Engine) push(r audit.Record) {
	e.pushAll([]audit.Record{r}, nil)
}

// pushAll is push for the records rs, in order. With a non-nil wait, for
// a goroutine that may append itself, it appends them itself, with one
// write, rather than waking the writer, which on a small machine costs
// more than the append (docs/benchmarks.md), and calls wait before it
// would wait for the log (audit.WithBeforeWait): the audit backlog's
// records take this way. Records still queued may then be written after
// rs; each record keeps the time it was made.
func (e *Engine) pushAll(rs []audit.Record, wait func()) {
	if wait != nil && e.audit.Load() == nil {
		wait() // opening the log takes its lock, which may be held
	}
	openErr := e.openAudit()
	for i := range rs {
		rs[i].Workspace, rs[i].Session, rs[i].Surface = e.workspace(), e.session, string(e.opts.Surface)
	}
	e.auditMu.RLock()
	defer e.auditMu.RUnlock()
	switch q := e.audit.Load(); {
	case q == nil:
		if openErr != nil {
			e.auditFailed(int64(len(rs)), openErr, false)
		}
	case wait != nil:
		q.append(audit.WithBeforeWait(context.Background(), wait), e, rs)
	default:
		for _, r := range rs {
			q.ch <- r
		}
	}
}

// auditReopenEvery is how often a log that did not open is tried again,
// at most.
const auditReopenEvery = time.Second

// openAudit opens the log and starts its writer on first use. When the
// log does not open, the failure is the audit log's (auditFailed), and
// a record made auditReopenEvery later tries again; the error is
// returned until then. After Close it opens nothing and returns nil.
// An open log costs one atomic load.
func (e *Engine) openAudit() error {
	if e.audit.Load() != nil {
		return nil
	}
	e.auditOpenMu.Lock()
	defer e.auditOpenMu.Unlock()
	if e.audit.Load() != nil || e.auditClosed {
		return nil
	}
	if e.auditOpenErr != nil && time.Since(e.auditOpenAt) < auditReopenEvery {
		return e.auditOpenErr
	}
	e.auditOpenAt = time.Now()
	// The redact decision of the current config, looked up per string:
	// the log may open before the first config is in place (for the
	// trust decision, which holds paths and hashes only), and a reload
	// brings a new one.
	memo := &redactMemo{}
	redact := func(s string) string {
		if g := e.guard.Load(); g != nil {
			if red := g.redactor(); red != nil {
				return memo.redact(red, s)
			}
		}
		return s
	}
	l, err := audit.Open(audit.DefaultPath(e.opts.AgentDir), &audit.Options{Redact: redact})
	if err != nil {
		e.auditOpenErr = err
		e.auditFailed(0, err, false)
		return err
	}
	e.auditOpenErr = nil
	for _, p := range l.Problems() {
		e.log.Warn("audit log", "problem", p.Message, "file", p.File, "line", p.Line)
	}
	q := &auditQueue{log: l, ch: make(chan audit.Record, auditQueueLen), done: make(chan struct{})}
	go q.run(e)
	e.audit.Store(q)
	return nil
}

// heldRecords holds the audit records a lean call makes until its answer
// is written (withHeldRecords), so that neither building them nor waking
// the log's writer is on the call's path. A record made after the
// release goes straight to the log.
type heldRecords struct {
	mu       sync.Mutex
	recs     []func() audit.Record
	released bool
}

type heldRecordsKey struct{}

// withHeldRecords returns a context whose records are held until release
// is called; release must be called, and may be called more than once.
// Release builds the records held and returns them, for its caller to
// write (pushAll); a record made after it goes straight to the log.
func (e *Engine) withHeldRecords(ctx context.Context) (context.Context, func() []audit.Record) {
	h := &heldRecords{}
	return context.WithValue(ctx, heldRecordsKey{}, h), func() []audit.Record {
		h.mu.Lock()
		recs := h.recs
		h.recs, h.released = nil, true
		h.mu.Unlock()
		out := make([]audit.Record, 0, len(recs))
		for _, build := range recs {
			out = append(out, build())
		}
		return out
	}
}

// hold keeps a record's builder unless the records were released.
func (h *heldRecords) hold(build func() audit.Record) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.released {
		return false
	}
	h.recs = append(h.recs, build)
	return true
}

// Bounds of a redactMemo.
const (
	// redactMemoStrings is how many strings it remembers; when full, it
	// starts over.
	redactMemoStrings = 1024
	// redactMemoMaxLen is the longest string it remembers, in bytes.
	redactMemoMaxLen = 256
)

// redactMemo remembers the short strings a redactor left unchanged, so
// that the strings every audit record repeats (kind, surface, server and
// tool names, argument descriptions, detail keys and most of their
// values) are scanned once per redactor rather than once per record.
// Redactor.Redact depends on nothing but the redactor and the string, so
// a remembered string needs no second scan; a new redactor (a reload)
// starts a new memo. Only strings the redactor left alone are kept: the
// memo holds no secret that the redactor found. It is safe for concurrent
// use.
type redactMemo struct {
	mu    sync.Mutex
	red   *policies.Redactor  // the redactor clean belongs to
	clean map[string]struct{} // strings red.Redact returns unchanged
}

// redact returns red.Redact(s).
func (m *redactMemo) redact(red *policies.Redactor, s string) string {
	if len(s) > redactMemoMaxLen {
		return red.Redact(s)
	}
	m.mu.Lock()
	if m.red != red {
		m.red, m.clean = red, nil
	}
	_, ok := m.clean[s]
	m.mu.Unlock()
	if ok {
		return s
	}
	out := red.Redact(s)
	if out != s {
		return out
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.red != red {
		return out
	}
	if m.clean == nil || len(m.clean) >= redactMemoStrings {
		m.clean = make(map[string]struct{}, redactMemoStrings)
	}
	// A copy: s may be a slice of a much larger string.
	m.clean[strings.Clone(s)] = struct{}{}
	return out
}

// Bounds of the auditBacklog.
const (
	// auditDelay is the longest a lean call's audit records wait after
	// its answer before they are written.
	auditDelay = 10 * time.Millisecond
	// auditBacklogCalls is how many calls' records may wait at once: the
	// call that would add one more writes them all itself.
	auditBacklogCalls = 64
)

// auditBacklog keeps the audit records of lean calls from their answer
// until they are written: together, at most auditDelay after the first
// of them, by a timer; at once, by the call that finds auditBacklogCalls
// waiting; and by Close. The calls' answers then return to the agent
// with no audit work behind them on the serve process's CPU, where on a
// small machine the agent, or the next call, would wait for it (see
// docs/benchmarks.md). What this costs is the window: a serve process
// killed outright (SIGKILL, the OOM killer) loses the records of the
// calls answered in its last auditDelay, where before it lost those of
// the call being answered. Close, which every orderly end of serve
// runs, writes them before it stops the servers.
type auditBacklog struct {
	// writing is held while calls taken from the backlog are written,
	// so that close returns only once they are.
	writing sync.Mutex
	mu      sync.Mutex
	calls   []func() []audit.Record // each call's release (withHeldRecords)
	timer   *time.Timer
	armed   bool // the timer is set for the calls waiting
	closed  bool // Close has written the backlog: calls write their own
	// log, when not nil, hears of a release that panicked.
	log *slog.Logger
	// sink writes the records, with one write to the log (pushAll).
	sink func(recs []audit.Record, wait func())
}

// write builds the records of the releases taken from the backlog and
// hands them to the sink together. A release that panics (a bug in
// building a record) loses its own records, not the others', and does
// not end the process from the timer's goroutine; its stack is logged,
// not the panic's value, which could hold a secret.
func (b *auditBacklog) write(calls []func() []audit.Record, wait func()) {
	var recs []audit.Record
	for _, release := range calls {
		func() {
			defer func() {
				if v := recover(); v != nil && b.log != nil {
					b.log.Error("building an audit record panicked; its records are lost", "stack", string(debug.Stack()))
				}
			}()
			recs = append(recs, release()...)
		}()
	}
	if len(recs) > 0 && b.sink != nil {
		b.sink(recs, wait)
	}
}

// add keeps a call's release for the next write of the backlog; the
// call's goroutine, when it must write the backlog itself, calls wait
// before it would wait for the log.
func (b *auditBacklog) add(release func() []audit.Record, wait func()) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		b.write([]func() []audit.Record{release}, wait)
		return
	}
	if len(b.calls) >= auditBacklogCalls {
		calls := append(b.take(), release)
		b.mu.Unlock()
		if !b.writing.TryLock() {
			wait() // the timer is writing
			b.writing.Lock()
		}
		defer b.writing.Unlock()
		b.write(calls, wait)
		return
	}
	b.calls = append(b.calls, release)
	if !b.armed {
		b.armed = true
		if b.timer == nil {
			b.timer = time.AfterFunc(auditDelay, b.flush)
		} else {
			b.timer.Reset(auditDelay)
		}
	}
	b.mu.Unlock()
}

// take empties the backlog, returning the calls it held. It runs with
// b.mu held.
func (b *auditBacklog) take() []func() []audit.Record {
	calls := b.calls
	b.calls = nil
	return calls
}

// flush writes the backlog: the timer's work.
func (b *auditBacklog) flush() {
	b.writing.Lock()
	defer b.writing.Unlock()
	b.mu.Lock()
	b.armed = false
	calls := b.take()
	b.mu.Unlock()
	b.write(calls, turn.NoYield)
}

// close writes the backlog and makes calls from now on write their own.
func (b *auditBacklog) close() {
	b.writing.Lock()
	defer b.writing.Unlock()
	b.mu.Lock()
	b.closed = true
	if b.timer != nil {
		b.timer.Stop()
	}
	calls := b.take()
	b.mu.Unlock()
	b.write(calls, turn.NoYield)
}

// auditQueueLen is how many records may wait for the disk.
const auditQueueLen = 256

// auditQueueBatch is the most records the queue's writer appends with
// one write.
const auditQueueBatch = 64

// auditQueue feeds the audit log from one goroutine.
type auditQueue struct {
	log  *audit.Log
	ch   chan audit.Record
	done chan struct{}
}

// run appends the records sent on q.ch, those that wait together, until
// the channel closes.
func (q *auditQueue) run(e *Engine) {
	defer close(q.done)
	batch := make([]audit.Record, 0, auditQueueBatch)
	for r := range q.ch {
		batch = append(batch[:0], r)
	more:
		for len(batch) < auditQueueBatch {
			select {
			case r, ok := <-q.ch:
				if !ok {
					break more
				}
				batch = append(batch, r)
			default:
				break more
			}
		}
		q.append(context.Background(), e, batch)
		clear(batch) // let go of the records' strings and details
	}
}

// append writes records, reporting a failure. While the log is failing
// (auditHealth), an audit_gap record naming the records lost so far goes
// first: when it is written, the log is healthy again.
func (q *auditQueue) append(ctx context.Context, e *Engine, rs []audit.Record) {
	gap, lost := e.auditGap()
	if lost > 0 {
		rs = append([]audit.Record{gap}, rs...)
	}
	err := q.log.AppendAll(ctx, rs)
	var we *audit.WriteError
	switch {
	case errors.As(err, &we):
		n := int64(we.Records)
		if lost > 0 {
			if we.Records == len(rs) {
				n-- // the gap record itself: its count goes back
				n += lost
			}
		}
		e.auditFailed(n, err, lost > 0)
		return
	case err != nil && !errors.Is(err, audit.ErrClosed):
		// A record that cannot be encoded: a bug, not a failing log.
		e.log.Error("audit append", "err", err)
	}
	e.auditWritten(lost)
}

// auditHealth is whether the audit log can be written. failing is read
// on every call's path (one atomic load); the rest changes only while
// the log fails, under mu.
type auditHealth struct {
	failing atomic.Bool
	mu      sync.Mutex
	lost    int64     // records lost and not yet named by an audit_gap record
	gaps    int       // audit_gap records being written
	since   time.Time // when the log started failing
	cause   string    // the first failure's error
}

// AuditState is the health of the audit log in the status action.
type AuditState struct {
	// State is "ok" or "failing".
	State string `json:"state"`
	// Since, Error and Lost are set while failing: when it started, the
	// first failure, and how many records were lost so far.
	Since *time.Time `json:"since,omitempty"`
	Error string     `json:"error,omitempty"`
	Lost  int64      `json:"lost,omitempty"`
	// OnFailure is settings.audit.onFailure.
	OnFailure string `json:"onFailure,omitempty"`
}

// auditFailed notes that n records could not be written, because of
// err; gap says the write began with an audit_gap record (auditGap),
// whose count n includes again. The first failure after a healthy time
// is logged and published once; those that follow only count.
func (e *Engine) auditFailed(n int64, err error, gap bool) {
	h := &e.auditOK
	h.mu.Lock()
	h.lost += n
	if gap {
		h.gaps--
	}
	first := !h.failing.Load()
	if first {
		h.since, h.cause = time.Now(), err.Error()
		h.failing.Store(true)
	}
	h.mu.Unlock()
	if first {
		e.log.Error("audit log cannot be written; calls of risk write, destructive or unknown are refused until it can (settings.audit.onFailure)", "err", err)
		e.bus.publish(Event{Type: EventAuditError, Error: err.Error()})
	}
}

// auditGap returns, while the log fails with records lost, the
// audit_gap record that names them, and their number; it then counts
// them as named until auditWritten or auditFailed says what became of
// the record. It returns 0 when the log is healthy.
func (e *Engine) auditGap() (audit.Record, int64) {
	h := &e.auditOK
	if !h.failing.Load() {
		return audit.Record{}, 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	lost := h.lost
	if lost == 0 {
		return audit.Record{}, 0
	}
	h.lost = 0
	h.gaps++
	r := audit.Record{Kind: audit.KindAuditGap, Time: time.Now(), Status: "resumed",
		Workspace: e.workspace(), Session: e.session, Surface: string(e.opts.Surface),
		Detail: map[string]any{"lost": lost, "since": h.since.Format(time.RFC3339Nano), "error": h.cause}}
	return r, lost
}

// auditWritten notes a write that succeeded, with an audit_gap record
// naming lost records when lost > 0: once no record is lost unnamed,
// the log is healthy again, which is logged and published once.
func (e *Engine) auditWritten(lost int64) {
	h := &e.auditOK
	if !h.failing.Load() {
		return
	}
	h.mu.Lock()
	if lost > 0 {
		h.gaps--
	}
	resumed := h.lost == 0 && h.gaps == 0
	if resumed {
		h.failing.Store(false)
		h.cause = ""
	}
	h.mu.Unlock()
	if resumed {
		e.log.Warn("audit log written again; an audit_gap record names the records lost")
		e.bus.publish(Event{Type: EventAuditResumed})
	}
}

// auditState reports the audit log's health.
func (e *Engine) auditState() AuditState {
	st := AuditState{State: "ok", OnFailure: e.Config().Settings.Audit.OnFailure}
	if e.opts.DisableAudit {
		st.State = "disabled"
		return st
	}
	h := &e.auditOK
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failing.Load() {
		since := h.since
		st.State, st.Since, st.Error, st.Lost = "failing", &since, h.cause, h.lost
	}
	return st
}

// auditFailingNote is the note of a call answered while the audit log
// cannot be written.
const auditFailingNote = "the audit log cannot be written: this call is not audited (voltmcp status says why)"

// auditRefuses reports whether a call of risk r is refused because the
// audit log cannot be written: while it fails, under
// settings.audit.onFailure "refuse-risky" (the default), every risk but
// read. The healthy case costs one atomic load.
func (e *Engine) auditRefuses(r Risk) bool {
	if !e.auditOK.failing.Load() || r == RiskRead {
		return false
	}
	return e.Config().Settings.Audit.OnFailure != "allow"
}

// closeAudit writes what is queued and closes the audit log.
func (e *Engine) closeAudit() {
	e.backlog.close()
	e.auditOpenMu.Lock()
	e.auditClosed = true // none opens after Close
	e.auditOpenMu.Unlock()
	e.auditMu.Lock()
	q := e.audit.Swap(nil)
	e.auditMu.Unlock()
	if q != nil {
		close(q.ch)
		<-q.done
		_ = q.log.Close()
	}
}

// pluginFault records a plugin's fault: the instance is gone, the call
// fell back.
func (e *Engine) pluginFault(f wasm.Fault) {
	e.log.Warn("plugin fault", "module", f.Module, "kind", f.Kind, "err", f.Err)
	e.bus.publish(Event{Type: EventPluginFault, Error: f.Module + ": " + string(f.Kind) + ": " + errText(f.Err)})
	e.record(context.Background(), audit.Record{Kind: audit.KindPluginFault, Status: string(f.Kind),
		Detail: map[string]any{"module": f.Module, "error": errText(f.Err)}})
}

// pluginLoadFailed records a configured module that did not load.
func (e *Engine) pluginLoadFailed(module string, err error) {
	e.log.Error("plugin refused", "module", module, "err", err)
	e.bus.publish(Event{Type: EventPluginFault, Error: module + ": " + err.Error()})
	e.record(context.Background(), audit.Record{Kind: audit.KindPluginFault, Status: "load_failed",
		Detail: map[string]any{"module": module, "error": err.Error()}})
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// callRecord is the audit record of a tools call. Its server, tool,
// risk and surface and its Detail are the tools input the policy decides
// on (policyToolInput) in the flat form of policies.ToolInput.Record,
// which `voltmcp policy replay` reads back with
// policies.ToolInputRecord.Input; the Detail adds the tool's hash. The
// Detail is named for the audit log (audit.Record.DetailKey) by
// guardKey, which names the guard whose redaction applies and the
// supervisor whose server definition the Detail holds, and by the rest
// of what the Detail is made of (the tool's hash covers its title and
// annotations), so that the log encodes it once per tool rather than
// once per call; an empty guardKey leaves it unnamed.
func callRecord(in ToolInput, d ToolDecision, args json.RawMessage, guardKey string) audit.Record {
	ti := policyToolInput(in).Record()
	ti.Detail["tool_hash"] = in.Tool.Hash
	r := audit.Record{Kind: audit.KindCall, Server: ti.Server, Tool: ti.Tool, Risk: ti.Risk, Surface: ti.Surface,
		Args: audit.SummarizeArgs(args), Decision: &audit.Decision{Allowed: d.Allowed, Reasons: d.Reasons}, Detail: ti.Detail}
	if guardKey != "" {
		r.DetailKey = strings.Join([]string{guardKey, in.Server.ID, in.Tool.Name, in.Tool.Hash, string(in.Surface),
			in.RiskReason, in.Pin.State, in.Pin.Change, strconv.FormatBool(in.Quarantined)}, "\x00")
	}
	return r
}

// finishRecord fills the outcome of a call into its record.
func finishRecord(r *audit.Record, status string, start time.Time, output string, cacheID string, truncated bool) {
	finishRecordAt(r, status, time.Since(start), output, cacheID, truncated)
}

// finishRecordAt is finishRecord for a call that took took.
func finishRecordAt(r *audit.Record, status string, took time.Duration, output string, cacheID string, truncated bool) {
	r.Status = status
	r.DurationMS = took.Milliseconds()
	r.ResultBytes = int64(len(output))
	if output != "" {
		sum := sha256.Sum256([]byte(output))
		r.ResultSHA256 = hex.EncodeToString(sum[:])
	}
	r.CacheID, r.Truncated = cacheID, truncated
}
