package cue

import (
	"fmt"
	"path/filepath"
	"time"
)

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
	// Files are the files the decision covers (Result.TrustFiles): the
	// project layer files found and the files they bring in, with their
	// content hashes.
	Files []FileStatus `json:"files"`
	// Surface is the caller.
	Surface Surface `json:"surface"`
	// DefaultProjectTrust is the setting from the user layers: "ask",
	// "never" or "always".
	DefaultProjectTrust string `json:"defaultProjectTrust"`
	// Approve and NoApprove are the --approve and --no-approve flags.
	Approve   bool `json:"approve"`
	NoApprove bool `json:"noApprove"`
	// TrustedProjects are the host's records of trust (`voltmcp trust`)
	// for this project; empty when there is none.
	TrustedProjects []TrustRecord `json:"trustedProjects,omitempty"`
	// UserPolicies are the policy files and directories the user layers
	// name (settings.policies), made absolute, for a trust function that
	// runs policies.
	UserPolicies []string `json:"userPolicies,omitempty"`
}

// TrustDecision says whether project layers load, and why.
type TrustDecision struct {
	Trusted bool   `json:"trusted"`
	Reason  string `json:"reason"`
	// Changed is true when the project was trusted once but a file has
	// changed since: its trust must be given again.
	Changed bool `json:"changed,omitempty"`
	// Hint says what would change an untrusted decision, when the usual
	// advice (voltmcp trust, --approve, defaultProjectTrust) would not:
	// a trust policy that failed, say. Empty means the usual advice.
	Hint string `json:"hint,omitempty"`
}

// TrustRecord is the host's record that a user trusted a project's MCP
// config as it was: trust binds to the content of each file, so an edit
// needs trust again.
type TrustRecord struct {
	// Project is the project root, absolute and clean.
	Project string `json:"project"`
	// Files are the project layer files that existed and the files they
	// brought in (the policy files of their settings.policies), with
	// their content hashes. A record of the layer files alone does not
	// match a project whose config brings files in: they are new to it.
	Files []TrustedFile `json:"files"`
	// TrustedAt is when the user gave trust.
	TrustedAt time.Time `json:"trustedAt"`
}

// TrustedFile is one file of a TrustRecord.
type TrustedFile struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// Matches reports whether the record covers exactly these project files
// with this content, and if not, names the first file that differs.
func (r TrustRecord) Matches(files []FileStatus) (bool, string) {
	want := map[string]string{}
	for _, f := range r.Files {
		want[f.Path] = f.SHA256
	}
	seen := map[string]bool{}
	for _, f := range files {
		if !f.Found {
			continue
		}
		p := absPath(f.Path)
		seen[p] = true
		if f.SHA256 == "" {
			// A file brought in that could not be read: no record
			// covers what cannot be hashed.
			return false, p + " cannot be read (" + f.Reason + ")"
		}
		sum, ok := want[p]
		if !ok {
			return false, p + " is new"
		}
		if sum != f.SHA256 {
			return false, p + " changed"
		}
	}
	for _, f := range r.Files {
		if !seen[f.Path] {
			return false, f.Path + " was removed"
		}
	}
	return true, ""
}

// NewTrustRecord records trust in the files of a load result as they
// are now: pass Result.TrustFiles, the project layer files and every file
// they bring in. A file without a hash (one that could not be read) is
// left out, and then the record matches nothing: check for such files
// before recording.
func NewTrustRecord(project string, files []FileStatus, at time.Time) TrustRecord {
	r := TrustRecord{Project: absPath(project), TrustedAt: at.UTC()}
	for _, f := range files {
		if f.Layer.IsProject() && f.Found && f.SHA256 != "" {
			r.Files = append(r.Files, TrustedFile{Path: absPath(f.Path), SHA256: f.SHA256})
		}
	}
	return r
}

// absPath makes p absolute and clean; if the working directory is gone
// it is left as it is, and matches nothing recorded.
func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return filepath.Clean(p)
}

// DecideTrust is the built-in project trust rule, in order: --no-approve
// ignores the project; --approve trusts it for this run;
// defaultProjectTrust "never" ignores it; a recorded trust (`voltmcp
// trust`) whose files are unchanged trusts it; "always" trusts it; a
// recorded trust whose files changed does not, and says so; and "ask"
// means untrusted wherever no one can be asked. No surface prompts yet,
// so "ask" is untrusted everywhere. The Rego trust policy replaces this
// function through Options.Trust and reproduces it.
func DecideTrust(in TrustInput) TrustDecision {
	switch {
	case in.NoApprove:
		return TrustDecision{Reason: "--no-approve ignores project MCP config"}
	case in.Approve:
		return TrustDecision{Trusted: true, Reason: "--approve trusts the project for this run"}
	case in.DefaultProjectTrust == "never":
		return TrustDecision{Reason: `defaultProjectTrust is "never"`}
	}
	var changed string
	var when time.Time
	for _, r := range in.TrustedProjects {
		if ok, why := r.Matches(in.Files); ok {
			return TrustDecision{Trusted: true, Reason: "trusted with `voltmcp trust` on " + r.TrustedAt.UTC().Format(time.DateOnly) + "; the files are unchanged"}
		} else if changed == "" {
			changed, when = why, r.TrustedAt
		}
	}
	if in.DefaultProjectTrust == "always" {
		return TrustDecision{Trusted: true, Reason: `defaultProjectTrust is "always"`}
	}
	if changed != "" {
		return TrustDecision{Changed: true, Reason: fmt.Sprintf("trusted on %s, but %s since: run `voltmcp trust` to review it again", when.UTC().Format(time.DateOnly), changed)}
	}
	return TrustDecision{Reason: fmt.Sprintf(`defaultProjectTrust is "ask" and the %s surface cannot ask`, in.Surface)}
}
