package cue

import "fmt"

// Surface names the caller a config is loaded for. Interactive surfaces
// may ask the user about project trust; the others never prompt.
type Surface string

// The surfaces. SurfaceVet reads project files to check them but never
// runs anything they name.
const (
	SurfaceInteractive Surface = "interactive"
	SurfaceServe       Surface = "serve"
	SurfacePrint       Surface = "print"
	SurfaceJSON        Surface = "json"
	SurfaceRPC         Surface = "rpc"
	SurfaceDaemon      Surface = "daemon"
	SurfaceVet         Surface = "vet"
)

// TrustInput is what a project trust decision is made from.
type TrustInput struct {
	// Project is the project root.
	Project string `json:"project"`
	// Files are the project layer files found, with their content hashes.
	Files []FileStatus `json:"files"`
	// Surface is the caller.
	Surface Surface `json:"surface"`
	// DefaultProjectTrust is the setting from the user layers: "ask",
	// "never" or "always".
	DefaultProjectTrust string `json:"defaultProjectTrust"`
	// Approve and NoApprove are the --approve and --no-approve flags.
	Approve   bool `json:"approve"`
	NoApprove bool `json:"noApprove"`
}

// TrustDecision says whether project layers load, and why.
type TrustDecision struct {
	Trusted bool   `json:"trusted"`
	Reason  string `json:"reason"`
}

// DecideTrust is the built-in project trust rule: --no-approve ignores the
// project, --approve trusts it for this run, and otherwise
// defaultProjectTrust decides, with "ask" meaning untrusted wherever no
// one can be asked. No surface prompts yet, so "ask" is untrusted
// everywhere. The Rego trust policy replaces this function through
// Options.Trust.
func DecideTrust(in TrustInput) TrustDecision {
	switch {
	case in.NoApprove:
		return TrustDecision{false, "--no-approve ignores project MCP config"}
	case in.Approve:
		return TrustDecision{true, "--approve trusts the project for this run"}
	}
	switch in.DefaultProjectTrust {
	case "always":
		return TrustDecision{true, `defaultProjectTrust is "always"`}
	case "never":
		return TrustDecision{false, `defaultProjectTrust is "never"`}
	}
	return TrustDecision{false, fmt.Sprintf(`defaultProjectTrust is "ask" and the %s surface cannot ask; run with --approve to trust it for one run`, in.Surface)}
}
