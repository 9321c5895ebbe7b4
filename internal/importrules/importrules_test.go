package importrules

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// modulePath is the module this test guards; TestImportRules checks that
// go.mod still says so.
const modulePath = "github.com/voltmcp/voltmcp"

// mod makes a module-relative package pattern absolute.
func mod(p string) string { return modulePath + "/" + p }

// Package patterns. "x/..." matches x and every package below it; any
// other pattern matches one package.
var (
	thisModule = mod("...")
	cuePkg     = mod("cue/...")
	policies   = mod("policies/...")
	wasmPkg    = mod("wasm/...")
	engine     = mod("engine/...")
	cli        = mod("cmd/voltmcp/...")
	engineRoot = mod("engine")
	engineIntl = mod("engine/internal/...")
	auditPkg   = mod("engine/audit")
	pollioPkg  = mod("engine/pollio")
	serverlog  = mod("engine/serverlog")
	rpcPkg     = mod("rpc/...")
	daemonPkg  = mod("daemon/...")
	redactPkg  = mod("redact")
	sanitize   = mod("sanitize")
	safefile   = mod("safefile")
	regofile   = mod("regofile")
	devicesPkg = mod("devices")
	uiPkg      = mod("ui/...")
	testwait   = mod("internal/testwait")
	libraries  = []string{cuePkg, policies, wasmPkg, engine, rpcPkg, daemonPkg, redactPkg, sanitize, safefile, regofile, devicesPkg, uiPkg}

	mcpSDK = "github.com/modelcontextprotocol/go-sdk/..."
	opa    = "github.com/open-policy-agent/opa/..."
	wazero = "github.com/tetratelabs/wazero/..."
	pflag  = "github.com/spf13/pflag/..."
	charm  = "charm.land/..."
	charmX = "github.com/charmbracelet/x/..."
)

// allowedThirdParty is every module outside the standard library that a
// package of this module may import. Each one has an entry in RATIONALE.md.
var allowedThirdParty = []string{
	"cuelang.org/go/...", // config schema, validation and defaults (cue)
	pflag,                // CLI flags (cmd/voltmcp)
	opa,                  // Rego policies (policies)
	wazero,               // wasm plugins (wasm)
	mcpSDK,               // the MCP protocol (engine)
	"golang.org/x/...",   // extended standard library, already required indirectly
	"go.uber.org/goleak", // goroutine leak checks in tests (engine)
	charm,                // the terminal UI: Bubble Tea, Bubbles, Lip Gloss (ui)
	charmX,               // their ANSI width helpers (ui) and teatest (ui's tests in cmd/voltmcp)
}

// importRule is one rule of docs/architecture.md ("Import rules" and the import
// direction diagram). A package matching from (and not except) must not
// import anything matching deny; when only is set, every import outside
// the standard library must match one of its patterns.
type importRule struct {
	rule   string   // the rule, as a failure states it
	from   []string // the packages it governs
	except []string // packages among from it leaves alone
	deny   []string // imports those packages must not have
	only   []string // when set, the only non-standard imports they may have
	tests  bool     // also check the imports of _test.go files
	hint   string   // what to do about a violation, when not obvious
}

// importRules is the table the module is checked against: one line a rule.
var importRules = []importRule{
	{rule: "cue imports only cuelang.org/go, redact, safefile, regofile and the standard library", from: []string{cuePkg}, only: []string{"cuelang.org/go/...", cuePkg, redactPkg, safefile, regofile}},
	{rule: "redact imports only the standard library", from: []string{redactPkg}, only: []string{redactPkg}, tests: true},
	{rule: "sanitize imports only the standard library", from: []string{sanitize}, only: []string{sanitize}, tests: true},
	{rule: "only cue, policies, engine, rpc and cmd/voltmcp import redact", from: []string{thisModule}, except: []string{cuePkg, policies, engine, rpcPkg, cli, redactPkg, sanitize}, deny: []string{redactPkg},
		hint: "redact is the one redaction package, a leaf shared by the config, the policies, the engine, the RPC (a remote client's answers) and the CLI; a new user is added to this rule's except list"},
	{rule: "only cue, engine, cmd/voltmcp, wasm and ui import sanitize", from: []string{thisModule}, except: []string{cuePkg, engine, cli, wasmPkg, redactPkg, sanitize, uiPkg}, deny: []string{sanitize},
		hint: "sanitize is a leaf shared by the config, the engine, the CLI and the plugin host; a new user is added to this rule's except list"},
	{rule: "safefile imports only the standard library (its tests also internal/testwait)", from: []string{safefile}, only: []string{safefile, testwait}, tests: true},
	{rule: "regofile imports only safefile and the standard library", from: []string{regofile}, only: []string{regofile, safefile}, tests: true},
	{rule: "only cue and policies import regofile", from: []string{thisModule}, except: []string{cuePkg, policies, regofile}, deny: []string{regofile},
		hint: "regofile is the one walk that finds policy files, for project trust (cue) and the policy loader (policies); a new user is added to this rule's except list"},
	{rule: "devices imports only safefile and the standard library", from: []string{devicesPkg}, only: []string{devicesPkg, safefile}, tests: true},
	{rule: "internal/testwait imports only the standard library", from: []string{testwait}, only: []string{testwait}},
	{rule: "cue never imports engine, policies or wasm (nor the MCP SDK, OPA or wazero)", from: []string{cuePkg}, deny: []string{engine, policies, wasmPkg, mcpSDK, opa, wazero}, tests: true},
	{rule: "policies imports only open-policy-agent/opa, redact, safefile, regofile and the standard library", from: []string{policies}, only: []string{opa, policies, redactPkg, safefile, regofile}},
	{rule: "policies never imports engine, cue or wasm", from: []string{policies}, deny: []string{engine, cuePkg, wasmPkg}, tests: true},
	{rule: "wasm imports only tetratelabs/wazero, sanitize, safefile and the standard library", from: []string{wasmPkg}, only: []string{wazero, wasmPkg, sanitize, safefile}},
	{rule: "wasm never imports engine, cue or policies", from: []string{wasmPkg}, deny: []string{engine, cuePkg, policies}, tests: true},
	{rule: "only engine, internal/ test helpers and examples/ import the MCP go-sdk", from: []string{thisModule}, except: []string{engine, mod("internal/..."), mod("examples/...")}, deny: []string{mcpSDK}},
	{rule: "cmd/voltmcp imports only the library packages, spf13/pflag and the standard library", from: []string{cli}, only: append([]string{cli, pflag}, libraries...)},
	{rule: "nothing under engine/internal imports engine, engine/pollio, cue, policies or wasm: the engine's parts import only the standard library, the MCP go-sdk, golang.org/x, redact, sanitize, safefile, engine/audit and each other", from: []string{engineIntl},
		only: []string{engineIntl, mcpSDK, "golang.org/x/...", redactPkg, sanitize, safefile, auditPkg, testwait}, tests: true,
		hint: "a part of the engine takes what it needs as plain values and functions from its caller; what needs the Engine stays in package engine"},
	{rule: "engine/serverlog imports only safefile, sanitize and the standard library (its tests also internal/testwait)", from: []string{serverlog}, only: []string{serverlog, safefile, sanitize, testwait}, tests: true},
	{rule: "rpc imports only the engine's public packages (engine, engine/audit, engine/pollio, engine/serverlog), cue, redact, sanitize and the standard library: never engine/internal", from: []string{rpcPkg},
		only: []string{rpcPkg, engineRoot, auditPkg, pollioPkg, serverlog, cuePkg, redactPkg, sanitize}},
	{rule: "no package under engine imports rpc: the RPC is a face above the engine", from: []string{engine}, deny: []string{rpcPkg}, tests: true},
	{rule: "daemon imports only the engine's public packages (engine, engine/audit, engine/pollio, engine/serverlog), rpc, cue, devices, safefile and the standard library: never engine/internal", from: []string{daemonPkg},
		only: []string{daemonPkg, engineRoot, auditPkg, pollioPkg, serverlog, rpcPkg, cuePkg, devicesPkg, safefile}},
	{rule: "only cmd/voltmcp imports daemon: the daemon is the top of the library, a face above the engine and rpc", from: []string{thisModule}, except: []string{cli, daemonPkg}, deny: []string{daemonPkg}, tests: true},
	{rule: "ui imports only charm.land (Bubble Tea, Bubbles, Lip Gloss), charmbracelet/x, sanitize and the standard library: it talks to the engine over the JSON-RPC wire only", from: []string{uiPkg},
		only: []string{uiPkg, charm, charmX, sanitize},
		hint: "the UI is a face above the RPC: what it needs of the engine is an RPC method (docs/rpc.md), decoded into ui's own types"},
	{rule: "engine/audit and engine/pollio never import engine", from: []string{auditPkg, pollioPkg}, deny: []string{engineRoot}, tests: true},
	{rule: "no library package imports cmd/", from: libraries, deny: []string{mod("cmd/...")}, tests: true},
	{rule: "internal/ holds test-only helpers and examples/ examples: library and CLI code never imports them", from: append([]string{mod("cmd/...")}, libraries...), deny: []string{mod("internal/..."), mod("examples/...")}},
	{
		rule: "every third-party import comes from a whitelisted module", from: []string{thisModule}, only: append([]string{thisModule}, allowedThirdParty...), tests: true,
		hint: "if the dependency is needed, add its module root to allowedThirdParty in internal/importrules/importrules_test.go and give it an entry in RATIONALE.md",
	},
}

// goPackage is the part of `go list -json` output the rules read.
type goPackage struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
	Error        *struct{ Err string }
}

// violation is one import that breaks one rule.
type violation struct {
	pkg, imp, kind string // kind: "", "test" or "external test"
	rule           *importRule
}

func (v violation) String() string {
	who := v.pkg
	if v.kind != "" {
		who += " (" + v.kind + " files)"
	}
	s := fmt.Sprintf("%s imports %s, which breaks the rule %q (docs/architecture.md)", who, v.imp, v.rule.rule)
	if v.rule.hint != "" {
		s += ": " + v.rule.hint
	}
	return s
}

// matches reports whether an import path matches a package pattern.
func matches(path, pattern string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return path == pattern
}

func matchesAny(path string, patterns []string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return matches(path, p) })
}

// isStandard reports whether an import path is in the standard library:
// its first element has no dot (as for "fmt", "net/http" and cgo's "C").
func isStandard(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// checkImports returns every import of pkgs that breaks one of rules.
func checkImports(pkgs []goPackage, rules []importRule) []violation {
	var out []violation
	for _, p := range pkgs {
		for i := range rules {
			r := &rules[i]
			if !matchesAny(p.ImportPath, r.from) || matchesAny(p.ImportPath, r.except) {
				continue
			}
			lists := []struct {
				kind    string
				imports []string
			}{{"", p.Imports}}
			if r.tests {
				lists = append(lists, struct {
					kind    string
					imports []string
				}{"test", p.TestImports}, struct {
					kind    string
					imports []string
				}{"external test", p.XTestImports})
			}
			for _, l := range lists {
				for _, imp := range l.imports {
					if imp == p.ImportPath {
						continue // an external test imports the package it tests
					}
					denied := matchesAny(imp, r.deny)
					notOnly := r.only != nil && !isStandard(imp) && !matchesAny(imp, r.only)
					if denied || notOnly {
						out = append(out, violation{pkg: p.ImportPath, imp: imp, kind: l.kind, rule: r})
					}
				}
			}
		}
	}
	return out
}

// moduleRoot walks up from the working directory to the directory that
// holds go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's working directory")
		}
		dir = parent
	}
}

// moduleLine returns the module path declared in go.mod.
func moduleLine(t *testing.T, root string) string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	t.Fatalf("go.mod declares no module (%v)", sc.Err())
	return ""
}

// listPackages runs `go list` over the module. -e keeps going past a
// package that does not build, so its imports are still checked.
func listPackages(t *testing.T, root string) []goPackage {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH: %v", err)
	}
	cmd := exec.Command(goBin, "list", "-e", "-deps=false", "-json", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	var pkgs []goPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p goPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		if p.Error != nil {
			t.Logf("note: go list: %s: %s", p.ImportPath, p.Error.Err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// TestImportRules checks every package of the module against importRules.
// Rules about packages that do not exist yet apply once they appear.
func TestImportRules(t *testing.T) {
	root := moduleRoot(t)
	if got := moduleLine(t, root); got != modulePath {
		t.Fatalf("go.mod declares module %s; update modulePath in this test", got)
	}
	pkgs := listPackages(t, root)
	for _, want := range []string{mod("cue"), mod("cmd/voltmcp")} {
		if !slices.ContainsFunc(pkgs, func(p goPackage) bool { return p.ImportPath == want }) {
			t.Fatalf("go list did not list %s; the test is not seeing the module", want)
		}
	}
	for _, v := range checkImports(pkgs, importRules) {
		t.Error(v)
	}
}

// TestImportRulesCatchViolations feeds the checker made-up packages, so
// a rule that has stopped catching anything fails here.
func TestImportRulesCatchViolations(t *testing.T) {
	for _, tc := range []struct {
		name string
		pkg  goPackage
		// want is the rule each import must break, in order; empty when
		// the package is allowed.
		want []string
	}{
		{"cue imports engine", goPackage{ImportPath: mod("cue"), Imports: []string{"fmt", mod("engine")}},
			[]string{"cue imports only cuelang.org/go", "cue never imports engine"}},
		{"cue imports the MCP SDK", goPackage{ImportPath: mod("cue"), Imports: []string{"github.com/modelcontextprotocol/go-sdk/mcp"}},
			[]string{"cue imports only cuelang.org/go", "cue never imports engine", "only engine, internal/"}},
		{"cue test imports policies", goPackage{ImportPath: mod("cue"), TestImports: []string{mod("policies")}},
			[]string{"cue never imports engine"}},
		{"cue imports cuelang and the standard library", goPackage{ImportPath: mod("cue"), Imports: []string{"cuelang.org/go/cue", "encoding/json"}, XTestImports: []string{mod("cue"), "testing"}},
			nil},
		{"cue imports pflag", goPackage{ImportPath: mod("cue"), Imports: []string{"github.com/spf13/pflag"}},
			[]string{"cue imports only cuelang.org/go"}},
		{"policies imports cue", goPackage{ImportPath: mod("policies"), Imports: []string{mod("cue")}},
			[]string{"policies imports only", "policies never imports"}},
		{"policies imports OPA", goPackage{ImportPath: mod("policies"), Imports: []string{"github.com/open-policy-agent/opa/v1/rego"}},
			nil},
		{"cue and policies import regofile", goPackage{ImportPath: mod("policies"), Imports: []string{mod("regofile"), mod("safefile")}},
			nil},
		{"regofile imports policies", goPackage{ImportPath: mod("regofile"), XTestImports: []string{mod("policies")}},
			[]string{"regofile imports only safefile"}},
		{"engine imports regofile", goPackage{ImportPath: mod("engine"), Imports: []string{mod("regofile")}},
			[]string{"only cue and policies import regofile"}},
		{"wasm test imports engine", goPackage{ImportPath: mod("wasm"), XTestImports: []string{mod("engine")}},
			[]string{"wasm never imports"}},
		{"wasm imports OPA", goPackage{ImportPath: mod("wasm"), Imports: []string{"github.com/open-policy-agent/opa/v1/rego"}},
			[]string{"wasm imports only"}},
		{"engine imports everything it may", goPackage{ImportPath: mod("engine"), Imports: []string{mod("cue"), mod("policies"), mod("wasm"), "github.com/modelcontextprotocol/go-sdk/mcp"}},
			nil},
		{"an engine part imports the engine", goPackage{ImportPath: mod("engine/internal/search"), TestImports: []string{mod("engine")}},
			[]string{"nothing under engine/internal imports engine"}},
		{"an engine part imports cue", goPackage{ImportPath: mod("engine/internal/transport"), Imports: []string{mod("cue"), "github.com/modelcontextprotocol/go-sdk/jsonrpc", mod("engine/internal/line"), mod("sanitize")}},
			[]string{"nothing under engine/internal imports engine"}},
		{"the audit log imports the engine", goPackage{ImportPath: mod("engine/audit"), Imports: []string{mod("engine/internal/jsonwire")}, XTestImports: []string{mod("engine")}},
			[]string{"engine/audit and engine/pollio never import engine"}},
		{"engine imports the CLI", goPackage{ImportPath: mod("engine"), Imports: []string{mod("cmd/voltmcp")}},
			[]string{"no library package imports cmd/"}},
		{"engine imports a test helper", goPackage{ImportPath: mod("engine"), Imports: []string{mod("internal/fakeserver")}, TestImports: []string{mod("internal/fakeserver")}},
			[]string{"internal/ holds test-only helpers"}},
		{"CLI imports the MCP SDK", goPackage{ImportPath: mod("cmd/voltmcp"), Imports: []string{"github.com/modelcontextprotocol/go-sdk/mcp"}},
			[]string{"only engine, internal/", "cmd/voltmcp imports only"}},
		{"CLI imports libraries and pflag", goPackage{ImportPath: mod("cmd/voltmcp"), Imports: []string{"os", mod("cue"), mod("engine"), "github.com/spf13/pflag"}},
			nil},
		{"test helper imports the MCP SDK", goPackage{ImportPath: mod("internal/hostile"), Imports: []string{"github.com/modelcontextprotocol/go-sdk/mcp"}},
			nil},
		{"example imports the MCP SDK", goPackage{ImportPath: mod("examples/embed"), Imports: []string{"github.com/modelcontextprotocol/go-sdk/mcp", mod("engine")}},
			nil},
		{"unlisted third-party module", goPackage{ImportPath: mod("examples/embed"), TestImports: []string{"github.com/stretchr/testify/require"}},
			[]string{"every third-party import comes from a whitelisted module"}},
		{"golang.org/x is whitelisted", goPackage{ImportPath: mod("internal/hostile"), Imports: []string{"golang.org/x/sync/errgroup"}},
			nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := checkImports([]goPackage{tc.pkg}, importRules)
			var rules []string
			for _, v := range got {
				rules = append(rules, v.rule.rule)
				msg := v.String()
				if !strings.Contains(msg, v.pkg) || !strings.Contains(msg, v.imp) || !strings.Contains(msg, v.rule.rule) {
					t.Errorf("message %q does not name the package, the import and the rule", msg)
				}
			}
			if len(rules) != len(tc.want) {
				t.Fatalf("got %d violation(s) %q, want %d matching %q", len(rules), rules, len(tc.want), tc.want)
			}
			for i, want := range tc.want {
				if !strings.HasPrefix(rules[i], want) {
					t.Errorf("violation %d: rule %q, want one starting %q", i, rules[i], want)
				}
			}
		})
	}

	// The whitelist message says where to add a module.
	v := checkImports([]goPackage{{ImportPath: mod("cue"), Imports: []string{"example.com/leftpad"}}}, importRules)
	if len(v) == 0 || !strings.Contains(v[len(v)-1].String(), "RATIONALE.md") || !strings.Contains(v[len(v)-1].String(), "allowedThirdParty") {
		t.Errorf("a non-whitelisted import should be reported with the whitelist hint, got %v", v)
	}
}

// TestImportRuleTable keeps the table well-formed.
func TestImportRuleTable(t *testing.T) {
	for _, r := range importRules {
		if r.rule == "" || len(r.from) == 0 || (len(r.deny) == 0 && r.only == nil) {
			t.Errorf("rule %+v needs a text, packages it governs, and a deny or only list", r)
		}
	}
}
