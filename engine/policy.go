package engine

import (
	"fmt"
	"path"

	"github.com/voltmcp/voltmcp/cue"
)

// Risk is a tool's risk class, for display, search and audit. It is
// informational: what may be called is decided by the tools policy.
type Risk string

// The risk classes.
const (
	RiskRead        Risk = "read"
	RiskWrite       Risk = "write"
	RiskDestructive Risk = "destructive"
	RiskUnknown     Risk = "unknown"
)

// ToolDecision says whether a tool is exposed (in search, describe,
// listings) and whether a call is allowed, with reasons for people.
type ToolDecision struct {
	Exposed bool `json:"exposed"`
	Allowed bool `json:"allowed"`
	// Pending is true for an exposed tool that becomes callable once
	// approved: a changed pin, or a server in quarantine.
	Pending bool     `json:"pending,omitempty"`
	Reasons []string `json:"reasons,omitempty"`
}

// ToolInput is what a tools decision is made from.
type ToolInput struct {
	Server  cue.Server
	Tool    Tool
	Risk    Risk
	Surface cue.Surface
	// RiskReason says why the classifier chose Risk.
	RiskReason string
	// Pin is the tool's pin state: "new" (first seen now), "pinned"
	// (matches its pin), "changed" (differs; Change rates how), or
	// "approved". Empty when pins are not consulted.
	Pin PinState
	// Quarantined is true for a server that waits for approval: first
	// seen while the policy's quarantine_new_servers applied to it, and
	// not approved since. The policy sees it as server.approved false;
	// the built-in policy never holds a server for it.
	Quarantined bool
}

// PinState is a tool's pin state and, when changed, how it changed.
type PinState struct {
	State  string `json:"state,omitempty"`
	Change string `json:"change,omitempty"`
}

// defaultDecide is the built-in tools rule, the same as the default
// voltmcp.tools policy (TestDefaultDecideMatchesRego keeps them equal):
// includeTools (when not empty) and excludeTools globs decide exposure,
// exclude winning; an exposed tool is callable unless it changed since
// it was pinned in a way that needs approval (schema-breaking or
// escalation): those are pending. Quarantine of new servers is off in the
// built-in policy, so Quarantined changes nothing here.
func defaultDecide(in ToolInput) ToolDecision {
	name := in.Tool.Name
	for _, g := range in.Server.ExcludeTools {
		if globMatch(g, name) {
			return ToolDecision{Reasons: []string{"excluded by excludeTools " + g}}
		}
	}
	if len(in.Server.IncludeTools) > 0 {
		included := false
		for _, g := range in.Server.IncludeTools {
			included = included || globMatch(g, name)
		}
		if !included {
			return ToolDecision{Reasons: []string{"not in includeTools"}}
		}
	}
	if in.Pin.State == "changed" && (in.Pin.Change == "schema-breaking" || in.Pin.Change == "escalation") {
		return ToolDecision{Exposed: true, Pending: true,
			Reasons: []string{fmt.Sprintf("tool %q changed since it was pinned (%s); approve the change before calling it", name, in.Pin.Change)}}
	}
	return ToolDecision{Exposed: true, Allowed: true}
}

func globMatch(glob, name string) bool {
	ok, err := path.Match(glob, name)
	return err == nil && ok
}
