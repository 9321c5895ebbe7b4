package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/engine/audit"
	"github.com/voltmcp/voltmcp/engine/internal/auditq"
	"github.com/voltmcp/voltmcp/policies"
	"github.com/voltmcp/voltmcp/wasm"
)

// trustFunc returns the project trust decision for cue.Load:
// Options.Trust when set; else, when the user layers or PolicyDirs name
// policy files, the voltmcp.trust policy with them; else cue.DecideTrust,
// which the built-in policy reproduces. The decisions of serving surfaces
// are audited.
func (e *Engine) trustFunc(ctx context.Context) func(cue.TrustInput) cue.TrustDecision {
	return e.trustDecider(ctx, true)
}

// trustDecider is trustFunc, recording the decision only when audited.
func (e *Engine) trustDecider(ctx context.Context, audited bool) func(cue.TrustInput) cue.TrustDecision {
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
			var err error
			d, err = policyTrust(ctx, pol, in)
			if err != nil {
				e.recordPolicyError(ctx, policies.AreaTrust, err, map[string]any{"project": in.Project})
			}
		}
		// The surfaces that serve agents record the decision they run
		// under; a one-shot command that lists or inspects does not add a
		// line each time it starts (its calls are recorded as calls).
		switch in.Surface {
		case cue.SurfaceServe, cue.SurfaceRPC, cue.SurfaceDaemon:
			if !audited {
				break
			}
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

// policyTrust asks the voltmcp.trust policy. The error is why the
// policy could not decide, when it could not: the decision then fails
// closed.
func policyTrust(ctx context.Context, pol *policies.Policies, in cue.TrustInput) (cue.TrustDecision, error) {
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
	d := cue.TrustDecision{Trusted: pd.Trusted, Changed: pd.NeedsTrust, Reason: strings.Join(reasons, "; ")}
	if pd.Err != nil {
		// The policy could not decide, so it failed closed: trusting the
		// project again would change nothing until the policy is fixed.
		d.Hint = "fix the policy file the reason names (voltmcp vet checks the policies); until the trust policy decides, project MCP config does not load"
	}
	return d, pd.Err
}

// recordPolicyError records a policy that could not decide (it did not
// load, its evaluation failed or ran out of time) as a policy_error
// record: every such decision fails closed, and each one is a line of
// the log. area is the decision (trust, tools, redact, media); detail
// says what it was about.
func (e *Engine) recordPolicyError(ctx context.Context, area string, err error, detail map[string]any) {
	d := map[string]any{"area": area, "error": err.Error()}
	for k, v := range detail {
		d[k] = v
	}
	e.record(ctx, audit.Record{Kind: audit.KindPolicyError, Status: "denied", Decision: &audit.Decision{Allowed: false}, Detail: d})
}

// record appends r to the audit log (an [auditq.Queue]) with the
// engine's workspace, session and surface, redacted by the
// voltmcp.redact decision. The log opens on first use. Records are
// written by one goroutine in the order they are made, off the path of
// the call they record: a call does not wait for the disk, and a full
// queue (the disk fell behind) makes callers wait rather than lose
// records. (A gateway call's records are built and written after its
// answer, by the audit backlog: see [auditq.Backlog].) Close writes what
// is queued. A failure to write is logged and published as an event; it
// does not fail the call.
func (e *Engine) record(ctx context.Context, r audit.Record) {
	if e.opts.DisableAudit {
		return
	}
	r.Time = time.Now()
	if h := auditq.HeldIn(ctx); h != nil && h.Hold(func() audit.Record { return r }) {
		return
	}
	e.audit.Push(r)
}

// recordLater is record for a record that costs something to build:
// when ctx holds its records ([auditq.WithHeld]), build runs when they
// are released, after the call's answer is written. The record keeps
// the time of this call.
func (e *Engine) recordLater(ctx context.Context, build func() audit.Record) {
	if e.opts.DisableAudit {
		return
	}
	if h := auditq.HeldIn(ctx); h != nil {
		at := time.Now()
		if h.Hold(func() audit.Record { r := build(); r.Time = at; return r }) {
			return
		}
	}
	e.record(ctx, build())
}

// newAuditQueue returns the queue of the engine's audit log, under
// AgentDir, whose records carry the engine's workspace, session and
// surface and are redacted by the redact decision of the current config,
// looked up per string: the log may open before the first config is in
// place (for the trust decision, which holds paths and hashes only), and
// a reload brings a new one. The log's failure and recovery are logged
// and published once each.
func (e *Engine) newAuditQueue() *auditq.Queue {
	return auditq.NewQueue(audit.DefaultPath(e.opts.AgentDir), &auditq.QueueOptions{
		Workspace: e.workspace(), Session: e.session, Surface: string(e.opts.Surface),
		Redactor: e.auditRedactor,
		Logger:   e.log,
		OnFailing: func(err error) {
			e.log.Error("audit log cannot be written; calls of risk write, destructive or unknown are refused until it can (settings.audit.onFailure)", "err", err)
			e.bus.publish(Event{Type: EventAuditError, Error: err.Error()})
		},
		OnResumed: func() {
			e.log.Warn("audit log written again; an audit_gap record names the records lost")
			e.bus.publish(Event{Type: EventAuditResumed})
		},
	})
}

// auditRedactor returns the redactor of the audit log: the redact
// decision of the current config, nil before there is one. What leaves
// the engine beside a record and holds what the record holds (a recent
// call's reason) goes through it too.
func (e *Engine) auditRedactor() auditq.Redactor {
	if g := e.guard.Load(); g != nil {
		if red := g.redactor(); red != nil {
			return red
		}
	}
	return nil
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

// auditState reports the audit log's health.
func (e *Engine) auditState() AuditState {
	st := AuditState{State: "ok", OnFailure: e.Config().Settings.Audit.OnFailure}
	if e.opts.DisableAudit {
		st.State = "disabled"
		return st
	}
	if h := e.audit.Health(); h.Failing {
		since := h.Since
		st.State, st.Since, st.Error, st.Lost = "failing", &since, h.Error, h.Lost
	}
	return st
}

// auditFailingNote is the note of a call answered while the audit log
// cannot be written.
const auditFailingNote = "the audit log cannot be written: this call is not audited (voltmcp status says why)"

// withAuditNote adds, while the audit log cannot be written, the note
// that says so to r, an answer of the mcp tool: every answer says it,
// whatever the action, until the log is written again.
func (e *Engine) withAuditNote(r GatewayResult) GatewayResult {
	if !e.audit.Failing() || strings.Contains(r.Text, "audit log cannot be written") {
		return r
	}
	r.Text += "\n[" + auditFailingNote + "]"
	return r
}

// AuditHealth reports the audit log's health, as the status action
// does: a command that ends says so when its records could not be
// written.
func (e *Engine) AuditHealth() AuditState { return e.auditState() }

// closeAudit writes what is queued and closes the audit log.
func (e *Engine) closeAudit() {
	e.backlog.Close()
	e.audit.Close()
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
