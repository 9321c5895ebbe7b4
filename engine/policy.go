package engine

import (
	"encoding/json"
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
	Exposed bool     `json:"exposed"`
	Allowed bool     `json:"allowed"`
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
	// Quarantined is true for a server held for review by policy.
	Quarantined bool
}

// PinState is a tool's pin state and, when changed, how it changed.
type PinState struct {
	State  string `json:"state,omitempty"`
	Change string `json:"change,omitempty"`
}

// defaultRisk classifies by the tool's MCP annotations, the spec's first
// step; a tool without annotations is unknown, never guessed to be read.
// The wasm classifiers replace it through Options.Classify.
func defaultRisk(_ string, t Tool) (Risk, string) {
	var a struct {
		ReadOnly    *bool `json:"readOnlyHint"`
		Destructive *bool `json:"destructiveHint"`
	}
	if len(t.Annotations) == 0 || json.Unmarshal(t.Annotations, &a) != nil {
		return RiskUnknown, "no annotations"
	}
	switch {
	case a.ReadOnly != nil && *a.ReadOnly:
		return RiskRead, "readOnlyHint"
	case a.Destructive != nil && *a.Destructive:
		return RiskDestructive, "destructiveHint"
	case a.ReadOnly != nil && !*a.ReadOnly:
		// Not read-only and not flagged destructive: the spec defaults
		// destructiveHint to true when unset, so stay cautious.
		if a.Destructive == nil {
			return RiskDestructive, "readOnlyHint false, destructiveHint unset"
		}
		return RiskWrite, "readOnlyHint false, destructiveHint false"
	}
	return RiskUnknown, "annotations say nothing of risk"
}

// defaultDecide is the spec's rule: includeTools (when not empty) and
// excludeTools globs decide exposure, exclude wins, and an exposed tool is
// callable. The Rego tools policy replaces it through Options.Decide.
func defaultDecide(in ToolInput) ToolDecision {
	name := in.Tool.Name
	for _, g := range in.Server.ExcludeTools {
		if globMatch(g, name) {
			return ToolDecision{Reasons: []string{"excluded by excludeTools " + g}}
		}
	}
	if len(in.Server.IncludeTools) > 0 {
		for _, g := range in.Server.IncludeTools {
			if globMatch(g, name) {
				return ToolDecision{Exposed: true, Allowed: true}
			}
		}
		return ToolDecision{Reasons: []string{"not in includeTools"}}
	}
	return ToolDecision{Exposed: true, Allowed: true}
}

func globMatch(glob, name string) bool {
	ok, err := path.Match(glob, name)
	return err == nil && ok
}
