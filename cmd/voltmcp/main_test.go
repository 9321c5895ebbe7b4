package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/voltmcp/voltmcp/cue"
)

// cliResult is what one run of the CLI produced.
type cliResult struct {
	code           int
	stdout, stderr string
}

func (r cliResult) String() string {
	return fmt.Sprintf("exit %d\n--- stdout:\n%s--- stderr:\n%s", r.code, r.stdout, r.stderr)
}

// fakeEnv returns a getenv backed by vars. A HOME that vars leave out is
// an empty temporary directory, so no test ever reads the real one.
func fakeEnv(t *testing.T, vars map[string]string) func(string) string {
	t.Helper()
	env := map[string]string{"HOME": t.TempDir(), "XDG_CACHE_HOME": testCacheDir}
	for k, v := range vars {
		env[k] = v
	}
	return func(name string) string { return env[name] }
}

// runCLI runs the CLI in-process with a fake environment.
func runCLI(t *testing.T, getenv func(string) string, args ...string) cliResult {
	t.Helper()
	return runCLICtx(t, context.Background(), getenv, nil, args...)
}

// runCLICtx is runCLI with a context and, when stdout is not nil, the
// writer standard output goes to.
func runCLICtx(t *testing.T, ctx context.Context, getenv func(string) string, stdout io.Writer, args ...string) cliResult {
	t.Helper()
	if getenv == nil {
		getenv = fakeEnv(t, nil)
	}
	var out, errb bytes.Buffer
	var w io.Writer = &out
	if stdout != nil {
		w = stdout
	}
	code := run(ctx, args, strings.NewReader(""), w, &errb, getenv)
	return cliResult{code: code, stdout: out.String(), stderr: errb.String()}
}

// failingWriter fails every write, like a closed pipe.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

func TestRootHelpListsEveryCommand(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, nil, args...)
			if r.code != exitOK {
				t.Fatalf("want exit 0\n%s", r)
			}
			if r.stderr != "" {
				t.Errorf("want empty stderr\n%s", r)
			}
			for _, c := range commands() {
				if c.hidden {
					if strings.Contains(r.stdout, c.name) {
						t.Errorf("usage lists the hidden command %q\n%s", c.name, r.stdout)
					}
					continue
				}
				if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(c.name) + ` +` + regexp.QuoteMeta(c.summary) + `$`).MatchString(r.stdout) {
					t.Errorf("usage does not list command %q with its summary\n%s", c.name, r.stdout)
				}
			}
			for _, want := range []string{"--home", "--project", "--agent-dir", "--approve", "--no-approve", "Exit codes"} {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("usage lacks %q\n%s", want, r.stdout)
				}
			}
		})
	}
}

func TestCommandsAreTheDocumentedOnes(t *testing.T) {
	t.Parallel()
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
		if c.summary == "" || c.usage == "" || c.run == nil {
			t.Errorf("command %q lacks a summary, a usage or a run function", c.name)
		}
	}
	if got, want := strings.Join(names, " "), "vet config schema version servers list trust untrust refresh enable disable serve demo audit plugin policy pins approve import add remove setup logs tools doctor completion __complete auth logout rpc daemon events ui status search describe call connect disconnect resources read-resource prompts get-prompt read-cache"; got != want {
		t.Errorf("commands = %q, want %q", got, want)
	}
}

func TestNoArgumentsIsAUsageError(t *testing.T) {
	t.Parallel()
	r := runCLI(t, nil)
	if r.code != exitUsage {
		t.Fatalf("want exit 2\n%s", r)
	}
	if r.stdout != "" || !strings.Contains(r.stderr, "Commands:") {
		t.Errorf("want the usage on stderr only\n%s", r)
	}
}

// ownFlags lists the flags a command registers itself.
func ownFlags(c *command) []string {
	fs := pflag.NewFlagSet(c.name, pflag.ContinueOnError)
	if c.flags != nil {
		c.flags(fs)
	}
	var names []string
	fs.VisitAll(func(f *pflag.Flag) {
		names = append(names, f.Name)
	})
	return names
}

func TestCommandHelp(t *testing.T) {
	t.Parallel()
	wantOwn := map[string][]string{
		"vet":           {"format", "fail-on", "quiet"},
		"config":        {"json"},
		"schema":        {"cue"},
		"version":       nil,
		"servers":       {"json"},
		"list":          {"json"},
		"refresh":       nil,
		"enable":        nil,
		"disable":       nil,
		"serve":         {"http", "token-file", "socket", "no-watch", "daemon", "no-daemon"},
		"daemon":        {"max-connections", "json", "http", "name"},
		"events":        {"json", "since"},
		"status":        {"json", "line"},
		"ui":            nil,
		"search":        {"json", "server", "limit", "cursor"},
		"describe":      {"json"},
		"call":          {"json", "args"},
		"connect":       {"json"},
		"disconnect":    {"json"},
		"resources":     {"json", "cursor"},
		"read-resource": {"json"},
		"prompts":       {"json", "cursor"},
		"get-prompt":    {"json", "args"},
		"read-cache":    {"json", "offset", "start-line", "end-line", "pattern"},
		"demo":          {"keep"},
		"trust":         {"yes", "json"},
		"untrust":       nil,
		"audit":         {"file", "lines", "follow", "json", "server", "tool", "kind", "status", "since", "until", "limit"},
		"plugin":        {"classify", "shape", "sha256", "cache-dir", "timeout", "memory-pages"},
		"policy":        {"verbose", "input", "explain", "audit", "json"},
		"pins":          {"json"},
		"approve":       nil,
		"import":        {"from", "scope", "yes", "force", "keep-secrets"},
		"add":           {"url", "header", "env", "transport", "cwd", "scope", "force", "keep-secrets", "oauth"},
		"remove":        {"scope"},
		"setup":         {"scope", "yes", "move", "keep-secrets", "command"},
		"tools":         {"json"},
		"doctor":        {"json"},
		"completion":    nil,
		"__complete":    nil,
		"auth":          {"no-browser", "device", "timeout", "status", "json"},
		"logout":        {"json"},
		"logs":          {"follow", "json"},
	}
	for _, c := range commands() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			own := ownFlags(c)
			have := map[string]bool{}
			for _, f := range own {
				have[f] = true
			}
			for _, f := range wantOwn[c.name] {
				if !have[f] {
					t.Errorf("command %s has no --%s flag (has %v)", c.name, f, own)
				}
			}
			if len(own) != len(wantOwn[c.name]) {
				t.Errorf("command %s has flags %v, want %v", c.name, own, wantOwn[c.name])
			}
			help := runCLI(t, nil, c.name, "--help")
			if help.code != exitOK || help.stderr != "" {
				t.Fatalf("%s --help: want exit 0 and empty stderr\n%s", c.name, help)
			}
			for _, want := range []string{"Usage: voltmcp " + c.name, "Example", "Flags:", "--help"} {
				if !strings.Contains(help.stdout, want) {
					t.Errorf("%s --help lacks %q\n%s", c.name, want, help.stdout)
				}
			}
			for _, f := range append(own, "home", "project", "agent-dir", "approve", "no-approve") {
				if !strings.Contains(help.stdout, "--"+f) {
					t.Errorf("%s --help does not show --%s\n%s", c.name, f, help.stdout)
				}
			}
			if r := runCLI(t, nil, c.name, "-h"); r.code != exitOK || r.stdout != help.stdout {
				t.Errorf("%s -h differs from --help\n%s", c.name, r)
			}
			if r := runCLI(t, nil, "help", c.name); r.code != exitOK || r.stdout != help.stdout {
				t.Errorf("'voltmcp help %s' differs from '%s --help'\n%s", c.name, c.name, r)
			}
		})
	}
}

func TestHelpVet(t *testing.T) {
	t.Parallel()
	r := runCLI(t, nil, "help", "vet")
	if r.code != exitOK {
		t.Fatalf("want exit 0\n%s", r)
	}
	for _, want := range []string{"Usage: voltmcp vet", "Examples:", "--format", "--fail-on", "sarif", "github"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("help vet lacks %q\n%s", want, r.stdout)
		}
	}
}

func TestUnknownCommandSuggests(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ typed, want string }{
		{"vte", "vet"},
		{"vett", "vet"},
		{"cofnig", "config"},
		{"shema", "schema"},
		{"verison", "version"},
		{"xyzzyplugh", ""},
	} {
		t.Run(tc.typed, func(t *testing.T) {
			t.Parallel()
			for _, args := range [][]string{{tc.typed}, {"help", tc.typed}} {
				r := runCLI(t, nil, args...)
				if r.code != exitUsage {
					t.Fatalf("%q: want exit 2\n%s", args, r)
				}
				if r.stdout != "" {
					t.Errorf("%q: want empty stdout\n%s", args, r)
				}
				if !strings.Contains(r.stderr, fmt.Sprintf("unknown command %q", tc.typed)) {
					t.Errorf("%q: stderr does not name the command\n%s", args, r)
				}
				suggestion := fmt.Sprintf("did you mean %q?", tc.want)
				if tc.want == "" {
					if strings.Contains(r.stderr, "did you mean") {
						t.Errorf("%q: suggests something for a word near nothing\n%s", args, r)
					}
				} else if !strings.Contains(r.stderr, suggestion) {
					t.Errorf("%q: want %s\n%s", args, suggestion, r)
				}
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	home := "testdata/vet/clean/home"
	project := "testdata/vet/clean/project"
	for _, tc := range []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"unknown command flag", []string{"vet", "--bogus"}, "unknown flag: --bogus"},
		{"unknown global flag", []string{"--bogus", "vet"}, "unknown flag: --bogus"},
		{"unknown shorthand", []string{"vet", "-z"}, "unknown shorthand flag"},
		{"flag without value", []string{"vet", "--format"}, "flag needs an argument"},
		{"bad format", []string{"vet", "--format", "xml"}, `unknown --format "xml"`},
		{"bad format equals", []string{"vet", "--format=yaml"}, `unknown --format "yaml"`},
		{"bad fail-on", []string{"vet", "--fail-on", "info"}, `unknown --fail-on "info"`},
		{"approve and no-approve", []string{"vet", "--approve", "--no-approve"}, "contradict"},
		{"approve before, no-approve after", []string{"--approve", "vet", "--no-approve"}, "contradict"},
		{"config show approve and no-approve", []string{"config", "show", "--approve", "--no-approve"}, "contradict"},
		{"config without show", []string{"config"}, "want 'voltmcp config show'"},
		{"config list", []string{"config", "list"}, "want 'voltmcp config show'"},
		{"config show extra", []string{"config", "show", "extra"}, "want 'voltmcp config show'"},
		{"schema argument", []string{"schema", "extra"}, "takes no arguments"},
		{"version argument", []string{"version", "extra"}, "takes no arguments"},
		{"config bad flag", []string{"config", "show", "--yaml"}, "unknown flag: --yaml"},
		{"auth device and no-browser", []string{"auth", "o", "--device", "--no-browser"}, "--no-browser goes with the browser flow"},
		{"auth status and device", []string{"auth", "--status", "--device"}, "--status takes no"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"--home", home, "--project", project}, tc.args...)
			r := runCLI(t, nil, args...)
			if r.code != exitUsage {
				t.Fatalf("want exit 2\n%s", r)
			}
			if !strings.Contains(r.stderr, tc.want) {
				t.Errorf("stderr lacks %q\n%s", tc.want, r)
			}
			if strings.Contains(r.stdout, "error(s)") || strings.Contains(r.stdout, "settings.") {
				t.Errorf("a usage error still ran the command\n%s", r)
			}
		})
	}
}

func TestNoHomeIsAUsageError(t *testing.T) {
	t.Parallel()
	empty := func(string) string { return "" }
	r := runCLI(t, empty, "vet", "--project", "testdata/vet/clean/project")
	if r.code != exitUsage || !strings.Contains(r.stderr, "cannot find the home directory") {
		t.Fatalf("want exit 2 and a message about the home directory\n%s", r)
	}
}

func TestFailureExitCode(t *testing.T) {
	t.Parallel()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	args := []string{"--home", "testdata/vet/clean/home", "--project", "testdata/vet/clean/project", "--approve"}
	for _, tc := range []struct {
		name   string
		ctx    context.Context
		stdout io.Writer
		args   []string
	}{
		{"vet cancelled", cancelled, nil, append([]string{"vet"}, args...)},
		{"vet files cancelled", cancelled, nil, []string{"vet", "testdata/vet/clean/project/.mcp.json"}},
		{"config show cancelled", cancelled, nil, append([]string{"config", "show"}, args...)},
		{"vet output fails", context.Background(), failingWriter{}, append([]string{"vet"}, args...)},
		{"vet json output fails", context.Background(), failingWriter{}, append([]string{"vet", "--format", "json"}, args...)},
		{"config show output fails", context.Background(), failingWriter{}, append([]string{"config", "show"}, args...)},
		{"config show json output fails", context.Background(), failingWriter{}, append([]string{"config", "show", "--json"}, args...)},
		{"schema output fails", context.Background(), failingWriter{}, []string{"schema"}},
		{"schema cue output fails", context.Background(), failingWriter{}, []string{"schema", "--cue"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := runCLICtx(t, tc.ctx, nil, tc.stdout, tc.args...)
			if r.code != exitFailure {
				t.Fatalf("want exit 3\n%s", r)
			}
			if !strings.HasPrefix(r.stderr, "voltmcp "+tc.args[0]+": ") {
				t.Errorf("want a 'voltmcp %s: ...' message on stderr\n%s", tc.args[0], r)
			}
		})
	}
}

func TestGlobalFlagsBeforeOrAfterCommand(t *testing.T) {
	t.Parallel()
	g := []string{"--home", "testdata/vet/errors/home", "--project", "testdata/vet/errors/project", "--approve"}
	before := runCLI(t, nil, append(g, "vet", "--format", "json")...)
	after := runCLI(t, nil, append([]string{"vet", "--format", "json"}, g...)...)
	if before.code != exitFindings || after.code != exitFindings {
		t.Fatalf("want exit 1 both ways\nbefore: %s\nafter: %s", before, after)
	}
	if before.stdout != after.stdout {
		t.Errorf("global flags before and after the command give different output\nbefore:\n%s\nafter:\n%s", before.stdout, after.stdout)
	}
}

func TestHomeFromEnvironment(t *testing.T) {
	t.Parallel()
	const home = "testdata/vet/errors/home"
	files := func(r cliResult) []string {
		t.Helper()
		var out struct {
			Files []struct {
				Path  string `json:"path"`
				Found bool   `json:"found"`
			} `json:"files"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatalf("vet --format json: %v\n%s", err, r)
		}
		var found []string
		for _, f := range out.Files {
			if f.Found {
				found = append(found, f.Path)
			}
		}
		return found
	}
	project := t.TempDir()
	for _, tc := range []struct {
		name string
		vars map[string]string
	}{
		{"VOLTMCP_HOME wins over HOME", map[string]string{"VOLTMCP_HOME": home, "HOME": t.TempDir()}},
		{"HOME", map[string]string{"HOME": home}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, fakeEnv(t, tc.vars), "vet", "--format", "json", "--project", project)
			got := strings.Join(files(r), " ")
			want := home + "/.config/mcp/mcp.json " + home + "/.volt/agent/mcp.json"
			if got != want {
				t.Errorf("found files %q, want %q", got, want)
			}
		})
	}
	// --home wins over both.
	r := runCLI(t, fakeEnv(t, map[string]string{"VOLTMCP_HOME": home, "HOME": home}),
		"vet", "--format", "json", "--project", project, "--home", t.TempDir())
	if got := files(r); len(got) != 0 || r.code != exitOK {
		t.Errorf("--home did not override the environment: found %q\n%s", got, r)
	}
}

func TestSchema(t *testing.T) {
	t.Parallel()
	r := runCLI(t, nil, "schema")
	if r.code != exitOK || r.stderr != "" {
		t.Fatalf("want exit 0 and empty stderr\n%s", r)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("schema is not JSON: %v", err)
	}
	if s, _ := doc["$schema"].(string); !strings.Contains(s, "json-schema.org") {
		t.Errorf("$schema = %v, want a json-schema.org URI", doc["$schema"])
	}
	if doc["$id"] != cue.JSONSchemaID || !strings.HasPrefix(cue.JSONSchemaID, "https://") {
		t.Errorf("$id = %v, want %q", doc["$id"], cue.JSONSchemaID)
	}
	defs, _ := doc["$defs"].(map[string]any)
	for _, name := range []string{"Settings", "Server", "ClaudeServer", "VSCodeServer"} {
		if _, ok := defs[name]; !ok {
			t.Errorf("schema has no $defs.%s", name)
		}
	}

	c := runCLI(t, nil, "schema", "--cue")
	if c.code != exitOK || c.stderr != "" {
		t.Fatalf("schema --cue: want exit 0\n%s", c)
	}
	if c.stdout != string(cue.SchemaSource()) {
		t.Errorf("schema --cue does not print the embedded CUE schema")
	}
	for _, want := range []string{"package voltmcp", "#File:", "#Server:", "#Defaults:"} {
		if !strings.Contains(c.stdout, want) {
			t.Errorf("schema --cue lacks %q", want)
		}
	}
	if json.Valid([]byte(c.stdout)) {
		t.Errorf("schema --cue printed JSON, want CUE")
	}
}

// The five modules voltmcp is built on, as the README names them.
var wantCoreModules = []string{
	"github.com/modelcontextprotocol/go-sdk",
	"github.com/open-policy-agent/opa",
	"cuelang.org/go",
	"github.com/tetratelabs/wazero",
	"github.com/spf13/pflag",
}

func TestVersionText(t *testing.T) {
	t.Parallel()
	info := &debug.BuildInfo{
		GoVersion: "go1.26.0",
		Path:      "github.com/voltmcp/voltmcp/cmd/voltmcp",
		Main:      debug.Module{Path: "github.com/voltmcp/voltmcp", Version: "v1.2.3"},
		Deps: []*debug.Module{
			{Path: "github.com/modelcontextprotocol/go-sdk", Version: "v1.0.0"},
			{Path: "github.com/open-policy-agent/opa", Version: "v1.4.2", Replace: &debug.Module{Path: "../opa", Version: "v1.4.3-fork"}},
			{Path: "cuelang.org/go", Version: "v0.17.1"},
			{Path: "github.com/spf13/pflag", Version: "v1.1.0"},
			{Path: "golang.org/x/text", Version: "v0.38.0"},
		},
		Settings: []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"}, {Key: "vcs.modified", Value: "true"}},
	}
	got := versionText(info)
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 2+len(wantCoreModules) {
		t.Fatalf("want a header, a commit line and %d module lines, got:\n%s", len(wantCoreModules), got)
	}
	if want := "  built from commit 0123456789abcdef0123456789abcdef01234567 (with uncommitted changes)"; lines[1] != want {
		t.Errorf("commit line = %q, want %q", lines[1], want)
	}
	lines = append(lines[:1], lines[2:]...)
	if !regexp.MustCompile(`^voltmcp v1\.2\.3 \(go[0-9.]+[^,]*, [a-z0-9]+/[a-z0-9]+\)$`).MatchString(lines[0]) {
		t.Errorf("header = %q", lines[0])
	}
	want := map[string]string{
		"github.com/modelcontextprotocol/go-sdk": "v1.0.0",
		"github.com/open-policy-agent/opa":       "v1.4.3-fork (replaced)",
		"cuelang.org/go":                         "v0.17.1",
		"github.com/tetratelabs/wazero":          "not linked in this build",
		"github.com/spf13/pflag":                 "v1.1.0",
	}
	for i, m := range wantCoreModules {
		fields := strings.Fields(lines[i+1])
		if len(fields) < 2 || fields[0] != m {
			t.Errorf("line %d = %q, want module %s (in this order: %v)", i+1, lines[i+1], m, wantCoreModules)
			continue
		}
		if v := strings.Join(fields[1:], " "); v != want[m] {
			t.Errorf("%s: version %q, want %q", m, v, want[m])
		}
	}
	if strings.Contains(got, "golang.org/x/text") {
		t.Errorf("version lists a module that is not a core one:\n%s", got)
	}

	devel := versionText(&debug.BuildInfo{})
	if !strings.HasPrefix(devel, "voltmcp (devel) (") {
		t.Errorf("without a main version: %q, want voltmcp (devel)", devel)
	}
	if !strings.Contains(devel, "\n  built from commit unknown\n") {
		t.Errorf("without vcs settings, the commit is not unknown:\n%s", devel)
	}
	clean := versionText(&debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "false"}}})
	if !strings.Contains(clean, "\n  built from commit abc\n") {
		t.Errorf("a clean checkout's commit:\n%s", clean)
	}
	if n := strings.Count(devel, "not linked in this build"); n != len(wantCoreModules) {
		t.Errorf("with no deps, %d modules say not linked, want %d:\n%s", n, len(wantCoreModules), devel)
	}
}

func TestVersionCommand(t *testing.T) {
	t.Parallel()
	r := runCLI(t, nil, "version")
	if r.code != exitOK || r.stderr != "" {
		t.Fatalf("want exit 0\n%s", r)
	}
	if !strings.HasPrefix(r.stdout, "voltmcp ") {
		t.Errorf("version output does not start with voltmcp:\n%s", r.stdout)
	}
	// A test binary records no commit; a binary built in a checkout does.
	if !regexp.MustCompile(`(?m)^  built from commit (unknown|[0-9a-f]{40}( \(with uncommitted changes\))?)$`).MatchString(r.stdout) {
		t.Errorf("version does not say the commit it was built from:\n%s", r.stdout)
	}
	for _, m := range wantCoreModules {
		if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(m) + ` +\S`).MatchString(r.stdout) {
			t.Errorf("version does not list %s:\n%s", m, r.stdout)
		}
	}
}

// The exit codes are a contract with scripts and CI; the tests above use
// the names, so pin the numbers here.
func TestExitCodeNumbers(t *testing.T) {
	t.Parallel()
	if exitOK != 0 || exitFindings != 1 || exitUsage != 2 || exitFailure != 3 {
		t.Errorf("exit codes are %d %d %d %d, want 0 1 2 3", exitOK, exitFindings, exitUsage, exitFailure)
	}
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"vet", "--home", "testdata/vet/clean/home", "--project", "testdata/vet/clean/project", "--approve"}, 0},
		{[]string{"vet", "--home", "testdata/vet/errors/home", "--project", "testdata/vet/errors/project"}, 1},
		{[]string{"vet", "--format", "xml"}, 2},
		{[]string{"nope"}, 2},
	} {
		if r := runCLI(t, nil, tc.args...); r.code != tc.want {
			t.Errorf("%v: exit %d, want %d", tc.args, r.code, tc.want)
		}
	}
}
