package policies

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/topdown"
)

// FileHash is one project MCP file and the hash of its content, as found
// now (TrustInput.Files) or as recorded when trust was given
// (TrustInput.TrustedProjects).
type FileHash struct {
	Path        string `json:"path"`
	ContentHash string `json:"content_hash"`
}

// TrustInput is the input document of the voltmcp.trust decision.
type TrustInput struct {
	// Project is the project root.
	Project string `json:"project"`
	// Files are the project's MCP config files with their content hashes.
	Files []FileHash `json:"files"`
	// Surface is the caller: interactive, serve, print, json, rpc, daemon
	// or vet.
	Surface string `json:"surface"`
	// DefaultProjectTrust is the user setting: "ask", "never" or "always".
	DefaultProjectTrust string `json:"default_project_trust"`
	// Approve and NoApprove are the --approve and --no-approve flags.
	Approve   bool `json:"approve"`
	NoApprove bool `json:"no_approve"`
	// TrustedProjects is the host's trust record: the files trusted and the
	// content hash each had then. Paths are compared with Files' paths.
	TrustedProjects []FileHash `json:"trusted_projects"`
}

// TrustDecision says whether a project's MCP config layers load.
type TrustDecision struct {
	Trusted bool `json:"trusted"`
	// NeedsTrust is true when trust was recorded for the project's files
	// but no longer matches them (a file changed or was added); a reason
	// names each file.
	NeedsTrust bool     `json:"needs_trust"`
	Reasons    []Reason `json:"reasons"`
	// Err is why the policies could not decide, for a decision that
	// failed closed (a load or evaluation error, a timeout, an undefined
	// or malformed decision); nil for a decision the policies made. A
	// decision with an error holds for that evaluation only: callers must
	// not keep it.
	Err error `json:"-"`
}

// Server is the server part of a ToolInput.
type Server struct {
	ID string `json:"id"`
	// Scope is "user" or "project": which config layer defines the server.
	Scope     string   `json:"scope"`
	Transport string   `json:"transport"`
	Command   string   `json:"command"`
	Args      []string `json:"args"`
	URL       string   `json:"url"`
}

// Tool is the tool part of a ToolInput. Annotations are the MCP
// annotations as the server sent them (MCP's own camelCase names).
type Tool struct {
	Name        string          `json:"name"`
	Title       string          `json:"title"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
}

// Pin is a tool's state against its approved definition.
type Pin struct {
	// State is "new", "pinned", "changed" or "approved".
	State string `json:"state"`
	// Change classifies a change: "cosmetic", "description",
	// "schema-compatible", "schema-breaking", "escalation", or "".
	Change string `json:"change"`
}

// ToolInput is the input document of the voltmcp.tools decision.
type ToolInput struct {
	Server Server `json:"server"`
	Tool   Tool   `json:"tool"`
	// Risk is the tool's risk class (read, write, destructive, unknown)
	// and RiskReason what it was derived from.
	Risk         string   `json:"risk"`
	RiskReason   string   `json:"risk_reason"`
	IncludeTools []string `json:"include_tools"`
	ExcludeTools []string `json:"exclude_tools"`
	Pin          Pin      `json:"pin"`
	// Quarantined is true while the server waits for a person to approve
	// it: it was first seen while quarantine applied to it and has not been
	// approved since (voltmcp approve SERVER). The policy sees it as
	// server.approved, its negation; whether the server's tools are then
	// held is the policy's quarantine_new_servers rule. It is false for a
	// server seen before quarantine applied.
	Quarantined bool   `json:"-"`
	Surface     string `json:"surface"`
}

// toolInputWire is the JSON of a ToolInput: the server gains "approved".
type toolInputWire struct {
	toolInputFields
	Server serverWire `json:"server"`
}

// toolInputFields is ToolInput without its methods, so that encoding it
// does not recurse.
type toolInputFields ToolInput

// serverWire is the server part of the tools input document.
type serverWire struct {
	Server
	// Approved is false for a server that waits for approval.
	Approved *bool `json:"approved,omitempty"`
}

// MarshalJSON encodes the input document the tools policy reads, with
// server.approved set from Quarantined.
func (in ToolInput) MarshalJSON() ([]byte, error) {
	approved := !in.Quarantined
	return json.Marshal(toolInputWire{toolInputFields(in), serverWire{in.Server, &approved}})
}

// UnmarshalJSON reads a tools input document: server.approved false
// makes Quarantined true. A document without server.approved reads as
// approved; one with the "quarantined" field of earlier versions is read
// as that field says.
func (in *ToolInput) UnmarshalJSON(b []byte) error {
	var w struct {
		toolInputWire
		Quarantined *bool `json:"quarantined"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*in = ToolInput(w.toolInputFields)
	in.Server = w.Server.Server
	switch {
	case w.Server.Approved != nil:
		in.Quarantined = !*w.Server.Approved
	case w.Quarantined != nil:
		in.Quarantined = *w.Quarantined
	}
	return nil
}

// ToolDecision says whether a tool is exposed in search, describe and
// listings, and whether a call to it is allowed.
type ToolDecision struct {
	Exposed bool `json:"exposed"`
	Allowed bool `json:"allowed"`
	// Pending is true when the tool is exposed and would be allowed after
	// an approval (a changed pin or a quarantined server).
	Pending bool `json:"pending"`
	// Quarantined is true when quarantine of new servers is on for this
	// input and the server is not approved, whether or not the tool is
	// exposed. The engine asks for it on a server's first sight to record
	// whether the server must wait for approval.
	Quarantined bool     `json:"quarantined"`
	Reasons     []Reason `json:"reasons"`
	// Err is why the policies could not decide, as in TrustDecision.
	Err error `json:"-"`
}

// RemoteInput is the input document of the voltmcp.remote decision.
type RemoteInput struct {
	// Command is the RPC command, e.g. "connect_mcp_server".
	Command string `json:"command"`
	// Caller is "local" or "remote".
	Caller string `json:"caller"`
	// Server is the target server id, or "" for workspace-wide commands.
	Server string `json:"server"`
	// ServerInTrustedConfig is true when Server exists in trusted config.
	ServerInTrustedConfig bool `json:"server_in_trusted_config"`
	// AuthFlow is the flow of start_mcp_server_auth: "device", "browser"
	// or "".
	AuthFlow string `json:"auth_flow,omitempty"`
}

// MediaInput is the input document of the voltmcp.media decision: one
// binary item of a tool's answer that the gateway would pass to the
// agent as it is.
type MediaInput struct {
	Server MediaServer `json:"server"`
	Tool   string      `json:"tool"`
	// Risk is the tool's risk class; Surface the caller, as in
	// ToolInput.
	Risk    string    `json:"risk"`
	Surface string    `json:"surface"`
	Item    MediaItem `json:"item"`
}

// MediaServer is the server part of a MediaInput.
type MediaServer struct {
	ID string `json:"id"`
	// Scope is "user" or "project".
	Scope string `json:"scope"`
}

// MediaItem is the item a MediaInput asks about.
type MediaItem struct {
	// Kind is "image", "audio" or "resource" (an embedded resource's
	// blob).
	Kind string `json:"kind"`
	// MIMEType is the item's type as the gateway's allow list names it,
	// which the data's first bytes were checked against.
	MIMEType string `json:"mime_type"`
	// Bytes is the size of the data, before base64.
	Bytes int `json:"bytes"`
	// URI is an embedded resource's, else "".
	URI string `json:"uri"`
}

// MediaDecision says whether a binary item may reach the agent as it
// is.
type MediaDecision struct {
	Inline  bool     `json:"inline"`
	Reasons []Reason `json:"reasons"`
	// Err is why the policies could not decide, as in TrustDecision.
	Err error `json:"-"`
}

// Decision is a plain allow-or-deny decision.
type Decision struct {
	Allow   bool     `json:"allow"`
	Reasons []Reason `json:"reasons"`
	// Err is why the policies could not decide, as in TrustDecision.
	Err error `json:"-"`
}

// Trust decides whether a project's MCP config loads. It fails closed:
// on any policy error the project is untrusted, the reason says why and
// Err is the error.
func (p *Policies) Trust(ctx context.Context, in TrustInput) TrustDecision {
	d, err := decideTyped(ctx, p, AreaTrust, in, p.decodeTrust)
	if err != nil {
		return TrustDecision{Reasons: []Reason{p.failReason(AreaTrust, err)}, Err: err}
	}
	return d
}

// Tools decides whether a tool is exposed and whether a call is allowed.
// It fails closed: on any policy error the tool is neither exposed nor
// allowed, the reason says why and Err is the error.
func (p *Policies) Tools(ctx context.Context, in ToolInput) ToolDecision {
	d, err := decideTyped(ctx, p, AreaTools, in, p.decodeTools)
	if err != nil {
		return ToolDecision{Reasons: []Reason{p.failReason(AreaTools, err)}, Err: err}
	}
	return d
}

// Remote decides whether a caller may run an RPC or daemon command. It
// fails closed: on any policy error the command is refused and Err is
// the error.
func (p *Policies) Remote(ctx context.Context, in RemoteInput) Decision {
	d, err := decideTyped(ctx, p, AreaRemote, in, p.decodeRemote)
	if err != nil {
		return Decision{Reasons: []Reason{p.failReason(AreaRemote, err)}, Err: err}
	}
	return d
}

// Media decides whether an image, audio clip or embedded image or
// audio blob may be passed to the agent as it is. It fails closed: on
// any policy error the item is not inlined and Err is the error.
func (p *Policies) Media(ctx context.Context, in MediaInput) MediaDecision {
	d, err := decideTyped(ctx, p, AreaMedia, in, p.decodeMedia)
	if err != nil {
		return MediaDecision{Reasons: []Reason{p.failReason(AreaMedia, err)}, Err: err}
	}
	return d
}

// cloner is a decision that can copy itself, so memoized values are never
// shared with callers.
type cloner[T any] interface{ clone() T }

func (d TrustDecision) clone() TrustDecision { d.Reasons = slices.Clone(d.Reasons); return d }
func (d ToolDecision) clone() ToolDecision   { d.Reasons = slices.Clone(d.Reasons); return d }
func (d Decision) clone() Decision           { d.Reasons = slices.Clone(d.Reasons); return d }
func (d MediaDecision) clone() MediaDecision {
	d.Reasons = slices.Clone(d.Reasons)
	return d
}

// decideTyped evaluates one area with memoization. Errors are never
// memoized, so a timeout under load does not stick.
func decideTyped[T cloner[T]](ctx context.Context, p *Policies, area string, in any, dec func(any) (T, error)) (T, error) {
	var zero T
	if p.err != nil {
		return zero, p.err
	}
	b, err := json.Marshal(in)
	if err != nil {
		return zero, fmt.Errorf("encode %s input: %w", area, err)
	}
	key := inputKey(area, b)
	if v, ok := p.memo.get(key); ok {
		return v.(T).clone(), nil
	}
	v, err := p.evalRaw(ctx, area, b, nil)
	if err != nil {
		return zero, err
	}
	d, err := dec(v)
	if err != nil {
		return zero, err
	}
	p.memo.put(key, d.clone())
	return d, nil
}

func (p *Policies) decodeTrust(v any) (TrustDecision, error) {
	var w struct {
		Trusted    bool         `json:"trusted"`
		NeedsTrust bool         `json:"needs_trust"`
		Reasons    []wireReason `json:"reasons"`
	}
	if err := decode(v, &w, "trusted", "needs_trust", "reasons"); err != nil {
		return TrustDecision{}, err
	}
	rs, err := p.reasons(AreaTrust, w.Reasons)
	if err != nil {
		return TrustDecision{}, err
	}
	return TrustDecision{Trusted: w.Trusted, NeedsTrust: w.NeedsTrust, Reasons: rs}, nil
}

func (p *Policies) decodeTools(v any) (ToolDecision, error) {
	var w struct {
		Exposed     bool         `json:"exposed"`
		Allowed     bool         `json:"allowed"`
		Pending     bool         `json:"pending"`
		Quarantined bool         `json:"quarantined"`
		Reasons     []wireReason `json:"reasons"`
	}
	if err := decode(v, &w, "exposed", "allowed", "pending", "reasons"); err != nil {
		return ToolDecision{}, err
	}
	rs, err := p.reasons(AreaTools, w.Reasons)
	if err != nil {
		return ToolDecision{}, err
	}
	// A hidden tool is never callable, whatever a policy says.
	return ToolDecision{Exposed: w.Exposed, Allowed: w.Allowed && w.Exposed, Pending: w.Pending && w.Exposed && !w.Allowed,
		Quarantined: w.Quarantined, Reasons: rs}, nil
}

func (p *Policies) decodeRemote(v any) (Decision, error) {
	var w struct {
		Allow   bool         `json:"allow"`
		Reasons []wireReason `json:"reasons"`
	}
	if err := decode(v, &w, "allow", "reasons"); err != nil {
		return Decision{}, err
	}
	rs, err := p.reasons(AreaRemote, w.Reasons)
	if err != nil {
		return Decision{}, err
	}
	return Decision{Allow: w.Allow, Reasons: rs}, nil
}

func (p *Policies) decodeMedia(v any) (MediaDecision, error) {
	var w struct {
		Inline  bool         `json:"inline"`
		Reasons []wireReason `json:"reasons"`
	}
	if err := decode(v, &w, "inline", "reasons"); err != nil {
		return MediaDecision{}, err
	}
	rs, err := p.reasons(AreaMedia, w.Reasons)
	if err != nil {
		return MediaDecision{}, err
	}
	return MediaDecision{Inline: w.Inline, Reasons: rs}, nil
}

// Eval evaluates one area's decision on a raw JSON input, bypassing the
// memo, for the CLI and for people writing policies. It returns the typed
// decision as JSON (with reason locations; for redact, the redaction spec)
// and, when explain is set, a trace of the evaluation. An unknown area or
// malformed input is an error with no decision; a policy fault returns the
// fail-closed decision together with the error.
func (p *Policies) Eval(ctx context.Context, area string, input []byte, explain bool) (json.RawMessage, string, error) {
	if !slices.Contains(Areas(), area) {
		return nil, "", fmt.Errorf("unknown policy area %q (want %s)", area, strings.Join(Areas(), ", "))
	}
	var doc any
	if err := json.Unmarshal(input, &doc); err != nil {
		return nil, "", fmt.Errorf("policy input is not JSON: %w", err)
	}
	var buf *topdown.BufferTracer
	var tracer topdown.QueryTracer
	if explain {
		buf = topdown.NewBufferTracer()
		tracer = buf
	}
	v, err := p.evalRaw(ctx, area, input, tracer)
	var out any
	if err == nil {
		switch area {
		case AreaTrust:
			out, err = p.decodeTrust(v)
		case AreaTools:
			out, err = p.decodeTools(v)
		case AreaRemote:
			out, err = p.decodeRemote(v)
		case AreaRedact:
			out, err = decodeRedact(v)
		case AreaMedia:
			out, err = p.decodeMedia(v)
		}
	}
	if err != nil {
		r := p.failReason(area, err)
		switch area {
		case AreaTrust:
			out = TrustDecision{Reasons: []Reason{r}}
		case AreaTools:
			out = ToolDecision{Reasons: []Reason{r}}
		case AreaRemote:
			out = Decision{Reasons: []Reason{r}}
		case AreaRedact:
			out = p.fallbackSpec(ctx, input)
		case AreaMedia:
			out = MediaDecision{Reasons: []Reason{r}}
		}
	}
	raw, merr := json.MarshalIndent(out, "", "  ")
	if merr != nil {
		return nil, "", fmt.Errorf("encode decision: %w", merr)
	}
	var trace string
	if buf != nil {
		var sb strings.Builder
		topdown.PrettyTraceWithLocation(&sb, *buf)
		trace = sb.String()
	}
	return raw, trace, err
}
