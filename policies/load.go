package policies

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/voltmcp/voltmcp/regofile"
)

// bundleFS holds the default policies and their tests.
//
//go:embed rego/*.rego
var bundleFS embed.FS

// bundlePrefix names the embedded files in locations and reasons, so a
// reason from a default rule reads "builtin/tools.rego:42".
const bundlePrefix = "builtin/"

// The decision areas, one Rego package each (voltmcp.<area>).
const (
	AreaTrust  = "trust"
	AreaTools  = "tools"
	AreaRemote = "remote"
	AreaRedact = "redact"
	AreaMedia  = "media"
)

// Areas returns the decision areas in a fixed order.
func Areas() []string { return []string{AreaTrust, AreaTools, AreaRemote, AreaRedact, AreaMedia} }

// extensionRules are the rules each area lets user files add to; all must
// be multi-value rules ("name contains value if ...").
func extensionRules(area string) []string {
	switch area {
	case AreaTrust:
		return []string{"deny", "allow"}
	case AreaTools:
		return []string{"deny", "hide", "allow"}
	case AreaRemote, AreaMedia:
		return []string{"deny"}
	case AreaRedact:
		return []string{"secret_key", "secret_pattern", "secret_env"}
	}
	return nil
}

// decisionRuleNames are rule names with a meaning in some area; defining
// one in an area that does not offer it is a mistake worth an error.
func decisionRuleNames() []string {
	return []string{"deny", "allow", "hide", "decision", "secret_key", "secret_pattern", "secret_env"}
}

// origin says who provided a policy file.
type origin int

const (
	fromBundle origin = iota
	fromUser
	fromProject
)

// source is one parsed policy file.
type source struct {
	name   string
	module *ast.Module
	origin origin
}

// capabilities is the builtin set policies compile against: everything in
// this OPA version except what reaches outside the process or is not
// deterministic.
func capabilities() *ast.Capabilities {
	c := ast.CapabilitiesForThisVersion()
	kept := make([]*ast.Builtin, 0, len(c.Builtins))
	for _, b := range c.Builtins {
		if !blockedBuiltin(b.Name) {
			kept = append(kept, b)
		}
	}
	c.Builtins = kept
	c.AllowNet = []string{}
	return c
}

// blockedBuiltin reports whether a builtin is removed from policies:
// network access (http.send, net.*), the OPA runtime's environment and
// config (opa.runtime), JSON Schema checks (they may fetch remote $refs) and
// randomness (it would make memoized decisions wrong).
func blockedBuiltin(name string) bool {
	switch name {
	case "http.send", "opa.runtime", "json.verify_schema", "json.match_schema", "rand.intn", "uuid.rfc4122":
		return true
	}
	return strings.HasPrefix(name, "net.")
}

func parserOptions(caps *ast.Capabilities) ast.ParserOptions {
	return ast.ParserOptions{RegoVersion: ast.RegoV1, Capabilities: caps, ProcessAnnotation: true}
}

// parseBundle parses the embedded policies; withTests adds their tests.
func parseBundle(bundle fs.FS, caps *ast.Capabilities, withTests bool) ([]source, error) {
	names, err := fs.Glob(bundle, "rego/*.rego")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []source
	for _, n := range names {
		if !withTests && strings.HasSuffix(n, "_test.rego") {
			continue
		}
		b, err := fs.ReadFile(bundle, n)
		if err != nil {
			return nil, err
		}
		name := bundlePrefix + strings.TrimPrefix(n, "rego/")
		m, err := ast.ParseModuleWithOpts(name, string(b), parserOptions(caps))
		if err != nil {
			return nil, err
		}
		out = append(out, source{name: name, module: m, origin: fromBundle})
	}
	return out, nil
}

// regoFiles reads the policy files of each path (a file or a directory,
// searched recursively), with tests also the *_test.rego files, through
// the one walk project trust uses too ([regofile.Reader]): each file is
// read without blocking, only when it is regular and at most
// [regofile.DefaultMaxFileSize] bytes, and all of the paths together stay
// within the reader's default bounds of files, bytes and directory
// entries. A missing path is an error, and so is a directory with no
// policy file in it (with withTests, no .rego file at all): whoever
// configured it meant to have policies there, so a set without them fails
// closed, as a broken one does, rather than decide by the built-in rules
// alone.
func regoFiles(paths []string, withTests bool) ([]File, error) {
	r := regofile.NewReader(&regofile.Options{Tests: withTests})
	var out []File
	for _, p := range paths {
		files, _, err := r.Read(p)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			out = append(out, File{Name: f.Path, Data: f.Data})
		}
	}
	return out, nil
}

// Paths returns what loading the policy paths reads: each path, the
// directories its walk enters and the policy files it reads, through the
// walk [Load] takes (without tests), for a process that watches them for
// changes (the engine's config watch). A path whose walk fails is still named,
// with what the walk met before it failed. Each path is named once.
func Paths(paths []string) []string {
	r := regofile.NewReader(nil)
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, p := range paths {
		add(p)
		files, dirs, _ := r.Read(p)
		for _, d := range dirs {
			add(d)
		}
		for _, f := range files {
			add(f.Path)
		}
	}
	return out
}

// parseSources parses files given by their content; every syntax error
// is collected, and a file that could not be read (File.Err) is the
// error.
func parseSources(files []File, o origin, caps *ast.Capabilities) ([]source, error) {
	var out []source
	var errs ast.Errors
	for _, f := range files {
		if f.Err != nil {
			return nil, fmt.Errorf("read policy: %w", f.Err)
		}
		m, err := ast.ParseModuleWithOpts(f.Name, string(f.Data), parserOptions(caps))
		if err != nil {
			var ae ast.Errors
			if errors.As(err, &ae) {
				errs = append(errs, ae...)
				continue
			}
			return nil, fmt.Errorf("parse policy %s: %w", f.Name, err)
		}
		out = append(out, source{name: f.Name, module: m, origin: o})
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

// areaOf returns the area a module extends, or "" for another package.
func areaOf(m *ast.Module) string {
	p := strings.TrimPrefix(m.Package.Path.String(), "data.")
	if a, ok := strings.CutPrefix(p, "voltmcp."); ok && slices.Contains(Areas(), a) {
		return a
	}
	return ""
}

// ruleName is the first element of a rule's head reference.
func ruleName(r *ast.Rule) string {
	ref := r.Head.Ref()
	if len(ref) == 0 {
		return ""
	}
	if v, ok := ref[0].Value.(ast.Var); ok {
		return string(v)
	}
	return ref[0].String()
}

func isPlainMultiValue(r *ast.Rule) bool {
	return len(r.Head.Ref()) == 1 && r.Head.RuleKind() == ast.MultiValue
}

func errAt(loc *ast.Location, format string, args ...any) *ast.Error {
	return ast.NewError(ast.CompileErr, loc, format, args...)
}

// validate checks user and project files against the extension rules:
// which packages they may use, which rules they may define, and (for
// project files) that they only make decisions stricter.
func validate(srcs []source) error {
	reserved := map[string]map[string]bool{} // area -> rule names the bundle defines
	defined := map[string]map[string]bool{}  // area -> rule names bundle or user files define
	for _, s := range srcs {
		a := areaOf(s.module)
		if a == "" || s.origin == fromProject {
			continue
		}
		for _, r := range s.module.Rules {
			n := ruleName(r)
			if s.origin == fromBundle {
				if reserved[a] == nil {
					reserved[a] = map[string]bool{}
				}
				reserved[a][n] = true
			}
			if defined[a] == nil {
				defined[a] = map[string]bool{}
			}
			defined[a][n] = true
		}
	}
	var errs ast.Errors
	for _, s := range srcs {
		if s.origin == fromBundle {
			continue
		}
		m := s.module
		pkg := strings.TrimPrefix(m.Package.Path.String(), "data.")
		a := areaOf(m)
		if a == "" {
			if pkg == "voltmcp" || strings.HasPrefix(pkg, "voltmcp.") {
				errs = append(errs, errAt(m.Package.Location, "package %s is reserved: policy files extend voltmcp.trust, voltmcp.tools, voltmcp.remote, voltmcp.redact or voltmcp.media", pkg))
				continue
			}
			if s.origin == fromProject {
				errs = append(errs, errAt(m.Package.Location, "project policy must use package voltmcp.trust, voltmcp.tools, voltmcp.remote, voltmcp.redact or voltmcp.media, not %s", pkg))
			}
			continue
		}
		ext := extensionRules(a)
		for _, r := range m.Rules {
			n := ruleName(r)
			switch {
			case s.origin == fromProject && n == "allow":
				errs = append(errs, errAt(r.Location, "project policy may only deny: rule allow in package %s is not allowed in project-provided files", pkg))
			case slices.Contains(ext, n):
				if !isPlainMultiValue(r) {
					errs = append(errs, errAt(r.Location, "rule %s must be written as `%s contains reason if { ... }`", n, n))
				}
			case n == "decision" || reserved[a][n]:
				errs = append(errs, errAt(r.Location, "rule %s is defined by the built-in %s policy and cannot be redefined; add %s rules instead", n, pkg, strings.Join(ext, ", ")))
			case slices.Contains(decisionRuleNames(), n):
				errs = append(errs, errAt(r.Location, "package %s offers no %s rule; it can be extended with %s", pkg, n, strings.Join(ext, ", ")))
			case s.origin == fromProject && defined[a][n]:
				errs = append(errs, errAt(r.Location, "project policy may not add to rule %s, which a user or built-in policy defines", n))
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// locate rewrites the head of every extension rule so that its reason
// records the rule's name, file and line: `deny contains r if {...}`
// becomes `deny contains data.voltmcp.lib.located(r, "deny", file, line)`.
func locate(srcs []source) {
	located := ast.RefTerm(ast.VarTerm("data"), ast.StringTerm("voltmcp"), ast.StringTerm("lib"), ast.StringTerm("located"))
	for _, s := range srcs {
		a := areaOf(s.module)
		if a == "" || a == AreaRedact {
			continue
		}
		ext := extensionRules(a)
		for _, r := range s.module.Rules {
			n := ruleName(r)
			if !slices.Contains(ext, n) || !isPlainMultiValue(r) || r.Head.Key == nil {
				continue
			}
			key := r.Head.Key
			call := ast.CallTerm(located.Copy(), key, ast.StringTerm(n), ast.StringTerm(s.name), ast.IntNumberTerm(r.Location.Row))
			call.SetLocation(key.Location)
			r.Head.Key = call
		}
	}
}

// ruleLocations indexes, per area, where each reason object's "rule" name
// is written ({"msg": ..., "rule": "name"} literals) and where each rule
// is defined, so a reason that names its rule can say where it is.
func ruleLocations(srcs []source) map[string]map[string]*ast.Location {
	out := map[string]map[string]*ast.Location{}
	for _, s := range srcs {
		a := areaOf(s.module)
		if a == "" {
			continue
		}
		if out[a] == nil {
			out[a] = map[string]*ast.Location{}
		}
		locs := out[a]
		ast.WalkTerms(s.module, func(t *ast.Term) bool {
			obj, ok := t.Value.(ast.Object)
			if !ok {
				return false
			}
			v := obj.Get(ast.StringTerm("rule"))
			if v == nil {
				return false
			}
			if name, ok := v.Value.(ast.String); ok && locs[string(name)] == nil && t.Location != nil {
				locs[string(name)] = t.Location
			}
			return false
		})
		for _, r := range s.module.Rules {
			if n := ruleName(r); locs[n] == nil {
				locs[n] = r.Location
			}
		}
	}
	return out
}

// compile compiles sources with the restricted capabilities.
func compile(srcs []source, caps *ast.Capabilities) (*ast.Compiler, error) {
	mods := make(map[string]*ast.Module, len(srcs))
	for _, s := range srcs {
		mods[s.name] = s.module
	}
	c := newCompiler(caps).WithEnablePrintStatements(false)
	c.Compile(mods)
	if c.Failed() {
		return nil, c.Errors
	}
	return c, nil
}

// prepare prepares the decision query of one area.
func prepare(ctx context.Context, c *ast.Compiler, caps *ast.Capabilities, area string) (rego.PreparedEvalQuery, error) {
	opts := append([]func(*rego.Rego){
		rego.Query("data.voltmcp." + area + ".decision"),
		rego.Compiler(c),
		rego.Capabilities(caps),
		rego.StrictBuiltinErrors(true),
	}, sizedFunctions()...)
	return rego.New(opts...).PrepareForEval(ctx)
}
