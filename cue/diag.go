package cue

import (
	"fmt"
	"sort"
)

// Severity ranks a diagnostic. Only errors fail `voltmcp vet`.
type Severity string

// The severities, most severe first.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
	SeverityInfo    Severity = "info"
)

// Diagnostic is one finding about a config file. Code is stable across
// releases and documented in docs/config.md; Message is for people and may
// change. Messages never contain a resolved environment variable or a
// literal secret value.
type Diagnostic struct {
	Severity Severity `json:"severity"`
	Code     Code     `json:"code"`
	Message  string   `json:"message"`
	// Hint is a one-line suggestion for the fix, when there is one.
	Hint string `json:"hint,omitempty"`
	Position
	// Layer names the config layer the file belongs to.
	Layer Layer `json:"layer,omitempty"`
	// Path is the field path inside the file, as the file spells it:
	// mcpServers.github.args[1].
	Path string `json:"path,omitempty"`
}

// String formats the diagnostic the way compilers do:
// file:line:col: severity[code]: message.
func (d Diagnostic) String() string {
	loc := d.File
	if loc == "" {
		loc = "voltmcp"
	}
	if d.Line > 0 {
		loc = fmt.Sprintf("%s:%d:%d", loc, d.Line, d.Col)
	}
	msg := d.Message
	if d.Path != "" {
		msg = d.Path + ": " + msg
	}
	return fmt.Sprintf("%s: %s[%s]: %s", loc, d.Severity, d.Code, msg)
}

// Code identifies a kind of diagnostic. docs/config.md lists every code.
type Code string

// Codes reported while reading and validating a file.
const (
	CodeFileUnreadable  Code = "file-unreadable"
	CodeFileTooLarge    Code = "file-too-large"
	CodeJSONSyntax      Code = "json-syntax"
	CodeDuplicateKey    Code = "duplicate-key"
	CodeNotObject       Code = "not-an-object"
	CodeDialect         Code = "dialect"
	CodeDialectConflict Code = "dialect-conflict"
	CodeUnknownField    Code = "unknown-field"
	CodeIgnoredField    Code = "ignored-field"
	CodeInvalidType     Code = "invalid-type"
	CodeInvalidValue    Code = "invalid-value"
	CodeOutOfRange      Code = "out-of-range"
	CodeEnvRefSyntax    Code = "env-ref-syntax"
	CodeServerID        Code = "server-id-invalid"
	CodeServerIDChanged Code = "server-id-normalized"
	CodeServerIDClash   Code = "server-id-collision"
)

// Codes reported after the layers merge.
const (
	CodeMissingField      Code = "missing-field"
	CodeTransportMismatch Code = "transport-mismatch"
	CodeCrossScopeField   Code = "cross-scope-field"
	CodeProjectIgnored    Code = "project-ignored"
	CodeProjectSetting    Code = "project-setting-ignored"
)

// Codes of the lint rules, which go beyond the schema.
const (
	CodeLiteralSecret   Code = "literal-secret"
	CodeShellCommand    Code = "shell-command"
	CodeUnpinnedPackage Code = "unpinned-package"
	CodeInsecureURL     Code = "insecure-url"
	CodeFilterOverlap   Code = "filter-overlap"
	CodeDisabledAbove   Code = "disabled-by-higher-layer"
	CodeOAuthLoopback   Code = "oauth-insecure-loopback"
	// CodeOAuthIssuer is a pre-registered OAuth client (clientId) without
	// auth.issuer: it is sent only to an authorization server at the
	// server url's origin.
	CodeOAuthIssuer Code = "oauth-client-without-issuer"
	// CodeSecretInArgs is a secret passed in a server's arguments by
	// reference: resolved, it lands in the child's argv, which every
	// local user can read.
	CodeSecretInArgs Code = "secret-in-args"
	// CodeGatewayEntry is a server entry that starts voltmcp serve, the
	// gateway itself (as `voltmcp setup` writes into a client's file):
	// it is not loaded, since voltmcp would start itself.
	CodeGatewayEntry Code = "gateway-entry"
	// CodePolicyError and CodePluginError are reported by vet, which
	// loads the policies and plugins the config names.
	CodePolicyError Code = "policy-error"
	CodePluginError Code = "plugin-error"
)

// Diagnostics is a list of findings, ordered for display by Sort.
type Diagnostics []Diagnostic

// HasErrors reports whether any diagnostic is an error.
func (ds Diagnostics) HasErrors() bool {
	for _, d := range ds {
		if d.Severity == SeverityError {
			return true
		}
	}
	return false
}

// Count returns how many diagnostics have the given severity.
func (ds Diagnostics) Count(s Severity) int {
	n := 0
	for _, d := range ds {
		if d.Severity == s {
			n++
		}
	}
	return n
}

// Sort orders diagnostics by layer, file, position, then code, so output is
// stable whatever order the checks ran in.
func (ds Diagnostics) Sort() {
	sort.SliceStable(ds, func(i, j int) bool {
		a, b := ds[i], ds[j]
		if a.Layer.rank() != b.Layer.rank() {
			return a.Layer.rank() < b.Layer.rank()
		}
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Offset != b.Offset {
			return a.Offset < b.Offset
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Code < b.Code
	})
}

// unique drops repeated diagnostics, which arise when one file is checked
// in two merges.
func (ds Diagnostics) unique() Diagnostics {
	type key struct {
		code       Code
		file, path string
		off        int
		msg        string
	}
	seen := map[key]bool{}
	out := ds[:0]
	for _, d := range ds {
		k := key{d.Code, d.File, d.Path, d.Offset, d.Message}
		if !seen[k] {
			seen[k] = true
			out = append(out, d)
		}
	}
	return out
}

// diags collects diagnostics during one load.
type diags struct{ list Diagnostics }

func (d *diags) add(sev Severity, code Code, n *node, path, hint, format string, args ...any) {
	diag := Diagnostic{Severity: sev, Code: code, Message: fmt.Sprintf(format, args...), Hint: hint, Path: path}
	if n != nil {
		diag.Position = n.pos()
		if n.src != nil {
			diag.Layer = n.src.layer
		}
		if path == "" {
			diag.Path = n.path
		}
	}
	d.list = append(d.list, diag)
}

// addAt reports a diagnostic at a field's key.
func (d *diags) addAt(sev Severity, code Code, parent *node, key, hint, format string, args ...any) {
	v := parent.get(key)
	d.add(sev, code, v, childPath(parent.path, key), hint, format, args...)
	if parent != nil && parent.src != nil {
		d.list[len(d.list)-1].Position = parent.keyPos(key)
	}
}
