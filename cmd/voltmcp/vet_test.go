package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/voltmcp/voltmcp/cue"
)

// The flag -update rewrites the golden files under testdata/vet. teatest's
// golden package (ui_test.go) defines a flag of the same name first; one
// flag then serves both.
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite the golden files under testdata/vet")
	}
}

// updating reports whether -update was given.
func updating() bool { return flag.Lookup("update").Value.String() == "true" }

var vetFormats = []string{"text", "json", "sarif", "github"}

// vetCase is one scenario under testdata/vet/<name>: a home/ tree and a
// project/ tree holding the layer files it needs.
type vetCase struct {
	name string
	args []string // beyond --home, --project and --format
	code int
	// codes are the diagnostic codes the case must report, each with its
	// severity, and nothing else.
	codes map[cue.Code]cue.Severity
}

var vetCases = []vetCase{
	{
		name: "clean", args: []string{"--approve"}, code: exitOK,
		codes: map[cue.Code]cue.Severity{cue.CodeDialect: cue.SeverityInfo},
	},
	{
		name: "untrusted", code: exitOK,
		codes: map[cue.Code]cue.Severity{
			cue.CodeDialect:        cue.SeverityInfo,
			cue.CodeProjectIgnored: cue.SeverityWarning,
		},
	},
	{
		name: "errors", args: []string{"--approve"}, code: exitFindings,
		codes: map[cue.Code]cue.Severity{
			cue.CodeJSONSyntax:      cue.SeverityError,
			cue.CodeOutOfRange:      cue.SeverityError,
			cue.CodeInvalidValue:    cue.SeverityError,
			cue.CodeInvalidType:     cue.SeverityError,
			cue.CodeUnknownField:    cue.SeverityError,
			cue.CodeDuplicateKey:    cue.SeverityError,
			cue.CodeLiteralSecret:   cue.SeverityError,
			cue.CodeCrossScopeField: cue.SeverityError,
			cue.CodeMissingField:    cue.SeverityError,
			cue.CodeUnpinnedPackage: cue.SeverityWarning,
			cue.CodeShellCommand:    cue.SeverityWarning,
			cue.CodeInsecureURL:     cue.SeverityWarning,
			cue.CodeFilterOverlap:   cue.SeverityWarning,
			cue.CodeDialect:         cue.SeverityInfo,
		},
	},
	{
		// A user policy that does not parse, a project policy with an
		// allow rule, and a classifier whose sha256 is not its pin.
		name: "extensions", args: []string{"--approve"}, code: exitFindings,
		codes: map[cue.Code]cue.Severity{
			cue.CodePolicyError: cue.SeverityError,
			cue.CodePluginError: cue.SeverityError,
		},
	},
}

func (c vetCase) dir() string { return filepath.Join("testdata", "vet", c.name) }

// vetArgs runs vet on the case with relative paths, so output holds no
// path of this machine.
func (c vetCase) vetArgs(format string) []string {
	args := []string{"vet", "--home", c.dir() + "/home", "--project", c.dir() + "/project", "--format", format}
	return append(args, c.args...)
}

// machinePaths are absolute paths of this machine a golden must not hold.
func machinePaths(t *testing.T) []string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	paths := []string{wd, filepath.Dir(filepath.Dir(wd)), os.TempDir()}
	if h, err := os.UserHomeDir(); err == nil && h != "/" {
		paths = append(paths, h)
	}
	return paths
}

func TestVetGolden(t *testing.T) {
	t.Parallel()
	for _, c := range vetCases {
		for _, format := range vetFormats {
			t.Run(c.name+"/"+format, func(t *testing.T) {
				t.Parallel()
				r := runCLI(t, nil, c.vetArgs(format)...)
				if r.code != c.code {
					t.Errorf("exit %d, want %d\n%s", r.code, c.code, r)
				}
				if r.stderr != "" {
					t.Errorf("want empty stderr\n%s", r)
				}
				for _, p := range machinePaths(t) {
					if strings.Contains(r.stdout, p) {
						t.Errorf("output holds the machine path %q", p)
					}
				}
				if strings.Contains(r.stdout, "file://") {
					t.Errorf("output holds a file:// URI")
				}
				golden := filepath.Join(c.dir(), "want."+format)
				if updating() {
					if err := os.WriteFile(golden, []byte(r.stdout), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run go test -update to create it)", err)
				}
				if r.stdout != string(want) {
					t.Errorf("vet %s output differs from %s (go test -update rewrites it)\n%s", format, golden, lineDiff(string(want), r.stdout))
				}
			})
		}
	}
}

// lineDiff shows the lines that differ between want and got.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n  want: %s\n  got:  %s\n", i+1, wl, gl)
		}
	}
	return b.String()
}

// vetJSON is the shape of `vet --format json`.
type vetJSON struct {
	OK          bool `json:"ok"`
	Diagnostics []struct {
		Severity string `json:"severity"`
		Code     string `json:"code"`
		Message  string `json:"message"`
		Hint     string `json:"hint"`
		File     string `json:"file"`
		Line     int    `json:"line"`
		Col      int    `json:"col"`
		Layer    string `json:"layer"`
		Path     string `json:"path"`
	} `json:"diagnostics"`
	Files []struct {
		Layer   string `json:"layer"`
		Path    string `json:"path"`
		Found   bool   `json:"found"`
		Dialect string `json:"dialect"`
		SHA256  string `json:"sha256"`
		Loaded  bool   `json:"loaded"`
		Reason  string `json:"reason"`
	} `json:"files"`
}

func decodeVetJSON(t *testing.T, r cliResult) vetJSON {
	t.Helper()
	var v vetJSON
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("vet --format json: %v\n%s", err, r)
	}
	return v
}

// TestVetCaseContents checks what each scenario reports, so that an
// -update cannot bless a wrong golden file.
func TestVetCaseContents(t *testing.T) {
	t.Parallel()
	for _, c := range vetCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, nil, c.vetArgs("json")...)
			v := decodeVetJSON(t, r)
			if v.OK != (c.code == exitOK) {
				t.Errorf("ok = %t with exit %d", v.OK, r.code)
			}
			got := map[cue.Code]cue.Severity{}
			for _, d := range v.Diagnostics {
				if prev, ok := got[cue.Code(d.Code)]; ok && prev != cue.Severity(d.Severity) {
					t.Errorf("code %s reported as both %s and %s", d.Code, prev, d.Severity)
				}
				got[cue.Code(d.Code)] = cue.Severity(d.Severity)
				if d.File == "" || d.Line < 1 || d.Col < 1 {
					t.Errorf("diagnostic without a position: %+v", d)
				}
				if d.Message == "" || d.Layer == "" {
					t.Errorf("diagnostic without a message or layer: %+v", d)
				}
			}
			for code, sev := range c.codes {
				if got[code] != sev {
					t.Errorf("want %s reported as %s, got %q", code, sev, got[code])
				}
			}
			for code, sev := range got {
				if _, ok := c.codes[code]; !ok {
					t.Errorf("unexpected %s %s", sev, code)
				}
			}
			for _, f := range v.Files {
				if f.Found && len(f.SHA256) != 64 && f.Reason != "invalid JSON" {
					t.Errorf("found file %s has no sha256", f.Path)
				}
			}
		})
	}
}

func TestVetErrorsCaseDetails(t *testing.T) {
	t.Parallel()
	c := vetCases[2]
	r := runCLI(t, nil, c.vetArgs("text")...)
	for _, want := range []string{
		// unknown field with a suggestion
		`testdata/vet/errors/project/.volt/mcp.json:5:7: error[unknown-field]: servers.typo.comand: unknown field "comand"`,
		`    hint: did you mean "command"?`,
		// wrong type, out of range, bad enum
		`testdata/vet/errors/project/.volt/mcp.json:6:15: error[invalid-type]: servers.typo.args: want array, got string`,
		`testdata/vet/errors/home/.volt/agent/mcp.json:4:23: error[out-of-range]: settings.maxOutputBytes: value 10 is out of range: want >= 1024`,
		`error[invalid-value]: servers.lazy.lifecycle: invalid value "sometimes": want one of "eager", "keep-alive", "lazy"`,
		`error[invalid-value]: settings.prompts: invalid value "sometimes": want one of "disabled", "model", "user-preview"`,
		// literal secret, without its value
		`error[literal-secret]: servers.leaky.env.GITHUB_TOKEN: env "GITHUB_TOKEN" holds a literal secret`,
		// npx unpinned, sh -c, plain http
		`warning[unpinned-package]: mcpServers.memory.command: npx runs "@modelcontextprotocol/server-memory" without a pinned version`,
		`warning[shell-command]: mcpServers.script.command: sh -c runs a shell script`,
		`warning[insecure-url]: servers.remote.url: plain http to mcp.example.com`,
		// include/exclude overlap, cross-scope field, duplicate key
		`warning[filter-overlap]: servers.remote.includeTools[1]: "delete_repo" is in includeTools but excludeTools "delete_*" removes it`,
		`testdata/vet/errors/project/.mcp.json:4:7: error[cross-scope-field]: mcpServers.github.env: "env" cannot be added to server "github"`,
		`testdata/vet/errors/project/.volt/mcp.json:10:7: error[duplicate-key]: servers.lazy.command: key appears twice (first at line 9)`,
		// the JSON syntax error in one file, which then does not load
		`testdata/vet/errors/home/.config/mcp/mcp.json:3:59: error[json-syntax]: invalid JSON at byte 78: trailing comma before '}'`,
		`testdata/vet/errors/home/.config/mcp/mcp.json: user-shared layer, unknown dialect, does not load: invalid JSON`,
		"\n11 error(s), 4 warning(s) in 4 file(s)\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("vet output lacks %q\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "ghp_EXAMPLE") {
		t.Errorf("vet printed the literal secret of the errors case")
	}
	// The other layers still load despite the broken one.
	for _, want := range []string{
		"testdata/vet/errors/home/.volt/agent/mcp.json: user layer, voltmcp dialect, loads",
		"testdata/vet/errors/project/.mcp.json: project-shared layer, mcpServers dialect, loads",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("vet output lacks %q", want)
		}
	}
}

func TestVetUntrustedCaseDetails(t *testing.T) {
	t.Parallel()
	c := vetCases[1]
	r := runCLI(t, nil, c.vetArgs("text")...)
	for _, want := range []string{
		"testdata/vet/untrusted/project/.mcp.json:1:1: warning[project-ignored]: project MCP config would not load",
		"testdata/vet/untrusted/project/.mcp.json: project-shared layer, mcpServers dialect, does not load: untrusted",
		"testdata/vet/untrusted/home/.volt/agent/mcp.json: user layer, voltmcp dialect, loads",
		"\n0 error(s), 1 warning(s) in 2 file(s)\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("vet output lacks %q\n%s", want, r.stdout)
		}
	}
	// With --approve the same project loads and nothing is left to warn of.
	a := runCLI(t, nil, append(c.vetArgs("text"), "--approve")...)
	if a.code != exitOK || strings.Contains(a.stdout, "project-ignored") ||
		!strings.Contains(a.stdout, "project-shared layer, mcpServers dialect, loads") {
		t.Errorf("vet --approve on the untrusted case:\n%s", a)
	}
	// --no-approve ignores it, and says so.
	n := runCLI(t, nil, append(c.vetArgs("text"), "--no-approve")...)
	if n.code != exitOK || !strings.Contains(n.stdout, "--no-approve ignores project MCP config") {
		t.Errorf("vet --no-approve on the untrusted case:\n%s", n)
	}
}

func TestVetFailOnWarning(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		c    vetCase
		want int
	}{
		{vetCases[0], exitOK},       // no warnings
		{vetCases[1], exitFindings}, // project-ignored is a warning
		{vetCases[2], exitFindings},
	} {
		for _, format := range vetFormats {
			t.Run(tc.c.name+"/"+format, func(t *testing.T) {
				t.Parallel()
				plain := runCLI(t, nil, tc.c.vetArgs(format)...)
				r := runCLI(t, nil, append(tc.c.vetArgs(format), "--fail-on", "warning")...)
				if r.code != tc.want {
					t.Errorf("--fail-on warning: exit %d, want %d\n%s", r.code, tc.want, r)
				}
				wantOut := plain.stdout
				if format == "json" && tc.want == exitFindings {
					// "ok" says whether the run passes, which --fail-on decides.
					wantOut = strings.Replace(wantOut, `"ok": true`, `"ok": false`, 1)
				}
				if r.stdout != wantOut {
					t.Errorf("--fail-on changed the output beyond \"ok\"")
				}
				e := runCLI(t, nil, append(tc.c.vetArgs(format), "--fail-on", "error")...)
				if e.code != tc.c.code {
					t.Errorf("--fail-on error: exit %d, want %d", e.code, tc.c.code)
				}
			})
		}
	}
}

func TestVetQuiet(t *testing.T) {
	t.Parallel()
	c := vetCases[2]
	for _, format := range []string{"text", "github"} {
		for _, q := range []string{"--quiet", "-q"} {
			r := runCLI(t, nil, append(c.vetArgs(format), q)...)
			if r.code != exitFindings {
				t.Errorf("%s %s: exit %d, want 1", format, q, r.code)
			}
			if strings.Contains(r.stdout, "dialect]") || strings.Contains(r.stdout, "::notice") {
				t.Errorf("%s %s still shows info diagnostics:\n%s", format, q, r.stdout)
			}
			if !strings.Contains(r.stdout, "literal-secret") {
				t.Errorf("%s %s dropped an error:\n%s", format, q, r.stdout)
			}
		}
	}
}

var githubLineRE = regexp.MustCompile(`^::(error|warning|notice) file=([^,:%\n]|%2C|%3A|%25)+,line=[1-9][0-9]*,col=[1-9][0-9]*,title=[^,:\n]+::[^\r\n]+$`)

func TestVetGitHubFormat(t *testing.T) {
	t.Parallel()
	for _, c := range vetCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, nil, c.vetArgs("github")...)
			v := decodeVetJSON(t, runCLI(t, nil, c.vetArgs("json")...))
			lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
			if r.stdout == "" {
				lines = nil
			}
			if len(lines) != len(v.Diagnostics) {
				t.Fatalf("%d annotation lines for %d diagnostics:\n%s", len(lines), len(v.Diagnostics), r.stdout)
			}
			kind := map[string]string{"error": "error", "warning": "warning", "info": "notice"}
			for i, line := range lines {
				if !githubLineRE.MatchString(line) {
					t.Errorf("not a workflow annotation: %q", line)
				}
				d := v.Diagnostics[i]
				want := fmt.Sprintf("::%s file=%s,line=%d,col=%d,title=voltmcp %s::", kind[d.Severity], d.File, d.Line, d.Col, d.Code)
				if !strings.HasPrefix(line, want) {
					t.Errorf("line %d = %q, want prefix %q", i+1, line, want)
				}
			}
		})
	}
}

func TestGitHubEscaping(t *testing.T) {
	t.Parallel()
	res := &cue.Result{Diagnostics: cue.Diagnostics{{
		Severity: cue.SeverityError, Code: cue.CodeInvalidValue,
		Message:  "100% bad\nsecond line\r",
		Position: cue.Position{File: "dir,with:odd%name/mcp.json", Line: 2, Col: 3},
	}}}
	var b strings.Builder
	if err := writeGitHub(&b, res, vetOutput{}); err != nil {
		t.Fatal(err)
	}
	want := "::error file=dir%2Cwith%3Aodd%25name/mcp.json,line=2,col=3,title=voltmcp invalid-value::100%25 bad%0Asecond line%0D\n"
	if b.String() != want {
		t.Errorf("got  %q\nwant %q", b.String(), want)
	}
	if !githubLineRE.MatchString(strings.TrimSuffix(b.String(), "\n")) {
		t.Errorf("escaped line does not match the annotation form")
	}
}

// sarifDoc is the part of SARIF 2.1.0 the checks read.
type sarifDoc struct {
	Schema  string `json:"$schema"`
	Version string `json:"version"`
	Runs    []struct {
		Tool struct {
			Driver struct {
				Name  string `json:"name"`
				Rules []struct {
					ID               string `json:"id"`
					ShortDescription struct {
						Text string `json:"text"`
					} `json:"shortDescription"`
					HelpURI              string `json:"helpUri"`
					DefaultConfiguration struct {
						Level string `json:"level"`
					} `json:"defaultConfiguration"`
				} `json:"rules"`
			} `json:"driver"`
		} `json:"tool"`
		Results []struct {
			RuleID    *string `json:"ruleId"`
			RuleIndex *int    `json:"ruleIndex"`
			Level     string  `json:"level"`
			Message   struct {
				Text string `json:"text"`
			} `json:"message"`
			Locations []struct {
				PhysicalLocation struct {
					ArtifactLocation struct {
						URI string `json:"uri"`
					} `json:"artifactLocation"`
					Region *struct {
						StartLine   int `json:"startLine"`
						StartColumn int `json:"startColumn"`
					} `json:"region"`
				} `json:"physicalLocation"`
			} `json:"locations"`
		} `json:"results"`
	} `json:"runs"`
}

// checkSARIF validates a SARIF log and returns the number of results.
// requireRegion demands a region on every location.
func checkSARIF(t *testing.T, out string, requireRegion bool) int {
	t.Helper()
	if !json.Valid([]byte(out)) {
		t.Fatalf("SARIF output is not valid JSON:\n%s", out)
	}
	var doc sarifDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("SARIF output: %v", err)
	}
	if doc.Version != "2.1.0" {
		t.Errorf("version = %q, want 2.1.0", doc.Version)
	}
	if !strings.Contains(doc.Schema, "sarif") {
		t.Errorf("$schema = %q", doc.Schema)
	}
	if len(doc.Runs) != 1 {
		t.Fatalf("%d runs, want 1", len(doc.Runs))
	}
	run := doc.Runs[0]
	if run.Tool.Driver.Name != "voltmcp" {
		t.Errorf("driver name = %q", run.Tool.Driver.Name)
	}
	levels := map[string]bool{"error": true, "warning": true, "note": true}
	ruleIDs := map[string]int{}
	for i, rule := range run.Tool.Driver.Rules {
		if _, dup := ruleIDs[rule.ID]; dup {
			t.Errorf("rule %q listed twice", rule.ID)
		}
		ruleIDs[rule.ID] = i
		if rule.ShortDescription.Text == "" || rule.HelpURI == "" || !levels[rule.DefaultConfiguration.Level] {
			t.Errorf("rule %q is incomplete: %+v", rule.ID, rule)
		}
	}
	for _, c := range cue.Codes() {
		if _, ok := ruleIDs[string(c)]; !ok {
			t.Errorf("no SARIF rule for code %s", c)
		}
	}
	for i, res := range run.Results {
		if res.RuleID == nil || res.RuleIndex == nil {
			t.Errorf("result %d lacks ruleId or ruleIndex", i)
			continue
		}
		idx, ok := ruleIDs[*res.RuleID]
		switch {
		case !ok:
			t.Errorf("result %d: ruleId %q is not in tool.driver.rules", i, *res.RuleID)
		case *res.RuleIndex < 0 || *res.RuleIndex >= len(run.Tool.Driver.Rules) || *res.RuleIndex != idx:
			t.Errorf("result %d: ruleIndex %d does not point at rule %q (index %d)", i, *res.RuleIndex, *res.RuleID, idx)
		}
		if !levels[res.Level] {
			t.Errorf("result %d: level %q, want error, warning or note", i, res.Level)
		}
		if res.Message.Text == "" {
			t.Errorf("result %d has no message", i)
		}
		if len(res.Locations) == 0 {
			t.Errorf("result %d has no location", i)
		}
		for _, loc := range res.Locations {
			pl := loc.PhysicalLocation
			if pl.ArtifactLocation.URI == "" {
				t.Errorf("result %d: location without a URI", i)
			}
			if pl.Region == nil {
				if requireRegion {
					t.Errorf("result %d: location without a region", i)
				}
				continue
			}
			if pl.Region.StartLine < 1 || pl.Region.StartColumn < 1 {
				t.Errorf("result %d: region %+v, want startLine and startColumn >= 1", i, *pl.Region)
			}
		}
	}
	return len(run.Results)
}

func TestVetSARIF(t *testing.T) {
	t.Parallel()
	for _, c := range vetCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, nil, c.vetArgs("sarif")...)
			n := checkSARIF(t, r.stdout, true)
			v := decodeVetJSON(t, runCLI(t, nil, c.vetArgs("json")...))
			if n != len(v.Diagnostics) {
				t.Errorf("%d SARIF results for %d diagnostics", n, len(v.Diagnostics))
			}
			var doc sarifDoc
			_ = json.Unmarshal([]byte(r.stdout), &doc)
			level := map[string]string{"error": "error", "warning": "warning", "info": "note"}
			for i, res := range doc.Runs[0].Results {
				d := v.Diagnostics[i]
				if *res.RuleID != d.Code || res.Level != level[d.Severity] {
					t.Errorf("result %d is %s/%s, diagnostic is %s/%s", i, *res.RuleID, res.Level, d.Code, d.Severity)
				}
				loc := res.Locations[0].PhysicalLocation
				if loc.ArtifactLocation.URI != d.File || loc.Region.StartLine != d.Line || loc.Region.StartColumn != d.Col {
					t.Errorf("result %d at %s:%d:%d, diagnostic at %s:%d:%d", i,
						loc.ArtifactLocation.URI, loc.Region.StartLine, loc.Region.StartColumn, d.File, d.Line, d.Col)
				}
			}
		})
	}
}

func TestSARIFURI(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"testdata/vet/a/.mcp.json": "testdata/vet/a/.mcp.json",
		"./.mcp.json":              ".mcp.json",
		"dir with space/.mcp.json": "dir%20with%20space/.mcp.json",
		"/abs/path/.mcp.json":      "file:///abs/path/.mcp.json",
	} {
		if got := sarifURI(in); got != want {
			t.Errorf("sarifURI(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestVetStandaloneFiles(t *testing.T) {
	t.Parallel()
	t.Run("clean files", func(t *testing.T) {
		t.Parallel()
		files := []string{"testdata/vet/clean/home/.config/mcp/mcp.json", "testdata/vet/clean/project/.mcp.json"}
		r := runCLI(t, nil, append([]string{"vet"}, files...)...)
		if r.code != exitOK || r.stderr != "" {
			t.Fatalf("want exit 0\n%s", r)
		}
		for _, f := range files {
			if !strings.Contains(r.stdout, f+": file layer, ") {
				t.Errorf("output does not report %s as a file layer\n%s", f, r.stdout)
			}
		}
		if !strings.HasSuffix(r.stdout, "0 error(s), 0 warning(s) in 2 file(s)\n") {
			t.Errorf("summary:\n%s", r.stdout)
		}
	})
	t.Run("errors", func(t *testing.T) {
		t.Parallel()
		file := "testdata/vet/errors/project/.volt/mcp.json"
		r := runCLI(t, nil, "vet", "--format", "json", file)
		if r.code != exitFindings {
			t.Fatalf("want exit 1\n%s", r)
		}
		v := decodeVetJSON(t, r)
		if len(v.Files) != 1 || v.Files[0].Path != file || v.Files[0].Layer != "file" {
			t.Errorf("files = %+v", v.Files)
		}
		codes := map[string]bool{}
		for _, d := range v.Diagnostics {
			codes[d.Code] = true
			if d.File != file || d.Layer != "file" {
				t.Errorf("diagnostic in %s (%s), want %s (file)", d.File, d.Layer, file)
			}
		}
		for _, want := range []string{"unknown-field", "invalid-type", "duplicate-key", "out-of-range", "literal-secret", "insecure-url", "filter-overlap"} {
			if !codes[want] {
				t.Errorf("standalone vet misses %s", want)
			}
		}
		// A file on its own has no trust to decide and no other layer to
		// cross.
		for _, not := range []string{"project-ignored", "cross-scope-field"} {
			if codes[not] {
				t.Errorf("standalone vet reports %s", not)
			}
		}
	})
	t.Run("syntax error", func(t *testing.T) {
		t.Parallel()
		r := runCLI(t, nil, "vet", "testdata/vet/errors/home/.config/mcp/mcp.json")
		if r.code != exitFindings || !strings.Contains(r.stdout, "testdata/vet/errors/home/.config/mcp/mcp.json:3:59: error[json-syntax]") {
			t.Errorf("want the JSON syntax error\n%s", r)
		}
	})
	t.Run("missing file", func(t *testing.T) {
		t.Parallel()
		missing := "testdata/vet/no-such-file.json"
		r := runCLI(t, nil, "vet", "--format", "json", missing)
		if r.code != exitFindings {
			t.Fatalf("want exit 1\n%s", r)
		}
		v := decodeVetJSON(t, r)
		if len(v.Diagnostics) != 1 || v.Diagnostics[0].Code != "file-unreadable" || v.Diagnostics[0].File != missing {
			t.Errorf("diagnostics = %+v", v.Diagnostics)
		}
		s := runCLI(t, nil, "vet", "--format", "sarif", missing)
		if n := checkSARIF(t, s.stdout, false); n != 1 {
			t.Errorf("%d SARIF results, want 1", n)
		}
		g := runCLI(t, nil, "vet", "--format", "github", missing)
		if !strings.HasPrefix(g.stdout, "::error file="+missing+",") {
			t.Errorf("github annotation: %q", g.stdout)
		}
	})
	t.Run("directory", func(t *testing.T) {
		t.Parallel()
		r := runCLI(t, nil, "vet", "testdata/vet")
		if r.code != exitFindings || !strings.Contains(r.stdout, "error[file-unreadable]: is a directory") {
			t.Errorf("want file-unreadable for a directory\n%s", r)
		}
	})
}

// TestVetGoldenFilesAreUsed fails on a stray golden file or case
// directory that no test reads.
func TestVetGoldenFilesAreUsed(t *testing.T) {
	t.Parallel()
	entries, err := os.ReadDir(filepath.Join("testdata", "vet"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range vetCases {
		names = append(names, c.name)
	}
	for _, e := range entries {
		if !slices.Contains(names, e.Name()) {
			t.Errorf("testdata/vet/%s is not a vet case", e.Name())
			continue
		}
		files, _ := filepath.Glob(filepath.Join("testdata", "vet", e.Name(), "want.*"))
		var got []string
		for _, f := range files {
			got = append(got, strings.TrimPrefix(filepath.Ext(f), "."))
		}
		sort.Strings(got)
		want := slices.Clone(vetFormats)
		sort.Strings(want)
		if !slices.Equal(got, want) && !updating() {
			t.Errorf("testdata/vet/%s has goldens %v, want %v", e.Name(), got, want)
		}
	}
}

// vet checks an untrusted project as if it were trusted: it runs nothing,
// so it can read the files and report every problem in them.
func TestVetChecksUntrustedProject(t *testing.T) {
	t.Parallel()
	c := vetCases[2]
	args := []string{"vet", "--format", "json", "--home", c.dir() + "/home", "--project", c.dir() + "/project"}
	untrusted := decodeVetJSON(t, runCLI(t, nil, args...))
	trusted := decodeVetJSON(t, runCLI(t, nil, append(args, "--approve")...))
	key := func(code, file string, line, col int) string {
		return fmt.Sprintf("%s %s:%d:%d", code, file, line, col)
	}
	have := map[string]bool{}
	for _, d := range untrusted.Diagnostics {
		have[key(d.Code, d.File, d.Line, d.Col)] = true
	}
	for _, d := range trusted.Diagnostics {
		if !have[key(d.Code, d.File, d.Line, d.Col)] {
			t.Errorf("untrusted vet misses %s", key(d.Code, d.File, d.Line, d.Col))
		}
	}
	ignored := 0
	for _, d := range untrusted.Diagnostics {
		if d.Code == "project-ignored" {
			ignored++
		}
	}
	if ignored != 2 || len(untrusted.Diagnostics) != len(trusted.Diagnostics)+2 {
		t.Errorf("untrusted vet: %d project-ignored, %d diagnostics; trusted: %d", ignored, len(untrusted.Diagnostics), len(trusted.Diagnostics))
	}
}

func TestVetExtensionsCaseDetails(t *testing.T) {
	t.Parallel()
	c := vetCases[3]
	r := runCLI(t, nil, c.vetArgs("text")...)
	for _, want := range []string{
		// The broken user policy, at its entry, with the Rego error's file:line.
		`testdata/vet/extensions/home/.volt/agent/mcp.json:4:35: error[policy-error]: settings.policies[1]: policy testdata/vet/extensions/home/.volt/agent/policies/broken does not load: testdata/vet/extensions/home/.volt/agent/policies/broken/tools.rego:5: `,
		// The pin mismatch, at the entry's sha256.
		`testdata/vet/extensions/home/.volt/agent/mcp.json:9:11: error[plugin-error]: settings.plugins.classifiers[0].sha256: plugin testdata/vet/extensions/home/.volt/agent/plugins/classifier.wasm has sha256 93a44bbb96c751218e4c00d479e4c14358122a389acca16205b1e4d0dc5f9476, which does not match its pin 0000000000000000000000000000000000000000000000000000000000000000`,
		// A project policy may only deny.
		`testdata/vet/extensions/project/.volt/mcp.json:3:30: error[policy-error]: settings.policies[0]: project policy (deny rules only) testdata/vet/extensions/project/.volt/policies does not load: testdata/vet/extensions/project/.volt/policies/tools.rego:3: project policy may only deny`,
		"\n3 error(s), 0 warning(s) in 2 file(s)\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("vet output lacks %q\n%s", want, r.stdout)
		}
	}
	// The good policy next to the broken one is not reported.
	if strings.Contains(r.stdout, "policies/team") {
		t.Errorf("vet reports the policy that loads\n%s", r.stdout)
	}
	// An untrusted project's policies are checked too, as if trusted.
	u := runCLI(t, nil, "vet", "--home", c.dir()+"/home", "--project", c.dir()+"/project")
	if u.code != exitFindings || !strings.Contains(u.stdout, "warning[project-ignored]") ||
		!strings.Contains(u.stdout, "error[policy-error]: settings.policies[0]: project policy (deny rules only)") {
		t.Errorf("untrusted project: want its policy checked\n%s", u)
	}
}

// vetHome writes a user layer with the given settings into a new home
// and returns the home.
func vetHome(t *testing.T, settings string) string {
	t.Helper()
	home := t.TempDir()
	dir := filepath.Join(home, ".volt", "agent")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	doc := `{"version": 1, "settings": ` + settings + `, "servers": {}}`
	if err := os.WriteFile(filepath.Join(dir, "mcp.json"), []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

// vetDiagnostics runs vet --format json on a home and returns its
// diagnostics of the given code.
func vetDiagnostics(t *testing.T, home string, code cue.Code) (cliResult, []string) {
	t.Helper()
	r := runCLI(t, nil, "vet", "--format", "json", "--home", home, "--project", t.TempDir())
	var msgs []string
	for _, d := range decodeVetJSON(t, r).Diagnostics {
		if cue.Code(d.Code) == code {
			msgs = append(msgs, d.Path+": "+d.Message)
		}
	}
	return r, msgs
}

func TestVetPlugins(t *testing.T) {
	t.Parallel()
	asExample, err := filepath.Abs(filepath.Join("..", "..", "examples", "plugins", "as", "classifier.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(asExample)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(bin)
	pin := hex.EncodeToString(sum[:])
	entry := func(path, sha string) string { return fmt.Sprintf(`{"path": %q, "sha256": %q}`, path, sha) }

	t.Run("valid", func(t *testing.T) {
		t.Parallel()
		home := vetHome(t, `{"plugins": {"classifiers": [`+entry(asExample, strings.ToUpper(pin))+`]}}`)
		r, msgs := vetDiagnostics(t, home, cue.CodePluginError)
		if r.code != exitOK || len(msgs) != 0 {
			t.Errorf("a pinned classifier: want no plugin-error\n%s", r)
		}
	})
	t.Run("faults", func(t *testing.T) {
		t.Parallel()
		home := vetHome(t, `{"plugins": {
			"classifiers": [`+entry(asExample, pin)+`, `+entry("missing.wasm", pin)+`],
			"shapers": [`+entry(asExample, pin)+`, `+entry(asExample, strings.Repeat("ab", 32))+`]}}`)
		r, msgs := vetDiagnostics(t, home, cue.CodePluginError)
		want := []string{
			`settings.plugins.classifiers[1].path: plugin ` + filepath.Join(home, ".volt", "agent", "missing.wasm") + ` cannot be read: no such file or directory`,
			`settings.plugins.shapers[0].path: module ` + asExample + ` does not export shape, which its list needs`,
			`settings.plugins.shapers[1].sha256: plugin ` + asExample + ` has sha256 ` + pin + `, which does not match its pin ` + strings.Repeat("ab", 32),
		}
		if r.code != exitFindings || !slices.Equal(msgs, want) {
			t.Errorf("got\n%s\nwant\n%s\n%s", strings.Join(msgs, "\n"), strings.Join(want, "\n"), r)
		}
	})
	t.Run("invalid module", func(t *testing.T) {
		t.Parallel()
		home := vetHome(t, `{"plugins": {"classifiers": [`+entry("bad.wasm", "93a44bbb96c751218e4c00d479e4c14358122a389acca16205b1e4d0dc5f9476")+`]}}`)
		if err := os.WriteFile(filepath.Join(home, ".volt", "agent", "bad.wasm"), []byte("\x00asm\x01\x00\x00\x00"), 0o600); err != nil {
			t.Fatal(err)
		}
		r, msgs := vetDiagnostics(t, home, cue.CodePluginError)
		if r.code != exitFindings || len(msgs) != 1 || !strings.HasPrefix(msgs[0], "settings.plugins.classifiers[0].path: module ") {
			t.Errorf("an empty module: want one plugin-error at its path\n%s", r)
		}
	})
}

func TestVetPolicies(t *testing.T) {
	t.Parallel()
	write := func(t *testing.T, dir, name, src string) {
		t.Helper()
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("valid", func(t *testing.T) {
		t.Parallel()
		examples, err := filepath.Abs(filepath.Join("..", "..", "examples", "policies"))
		if err != nil {
			t.Fatal(err)
		}
		r, msgs := vetDiagnostics(t, vetHome(t, fmt.Sprintf(`{"policies": [%q]}`, examples)), cue.CodePolicyError)
		if r.code != exitOK || len(msgs) != 0 {
			t.Errorf("the example policies: want no policy-error\n%s", r)
		}
	})
	t.Run("flag", func(t *testing.T) {
		t.Parallel()
		// A policy given with --policy is checked as the config's are.
		dir := t.TempDir()
		write(t, dir, "bad.rego", "package voltmcp.tools\n\ndeny contains x if {\n  x :=\n}\n")
		r := runCLI(t, nil, "vet", "--format", "json", "--home", vetHome(t, "{}"), "--project", t.TempDir(), "--policy", dir)
		var msgs []string
		for _, d := range decodeVetJSON(t, r).Diagnostics {
			if cue.Code(d.Code) == cue.CodePolicyError {
				msgs = append(msgs, d.Path+": "+d.Message)
			}
		}
		if r.code != exitFindings || len(msgs) != 1 || !strings.HasPrefix(msgs[0], "--policy[0]: ") || !strings.Contains(msgs[0], "bad.rego:5") {
			t.Errorf("a broken --policy: %q\n%s", msgs, r)
		}
	})
	t.Run("conflict", func(t *testing.T) {
		t.Parallel()
		// Each loads on its own; together they define limit twice with
		// different arities. The entry that adds the conflict is blamed.
		home := vetHome(t, `{"policies": ["a", "b", "missing"]}`)
		agent := filepath.Join(home, ".volt", "agent")
		write(t, filepath.Join(agent, "a"), "a.rego", "package voltmcp.tools\n\nlimit(x) := 1 if x\n")
		write(t, filepath.Join(agent, "b"), "b.rego", "package voltmcp.tools\n\nlimit(x, y) := 2 if x\n")
		r, msgs := vetDiagnostics(t, home, cue.CodePolicyError)
		if r.code != exitFindings || len(msgs) != 2 ||
			!strings.HasPrefix(msgs[0], "settings.policies[1]: policy "+filepath.Join(agent, "b")+" does not load: ") ||
			!strings.Contains(msgs[0], "conflicting rules") ||
			!strings.HasPrefix(msgs[1], "settings.policies[2]: policy "+filepath.Join(agent, "missing")+" does not load: ") {
			t.Errorf("want the conflict at entry 1 and the missing path at entry 2, got\n%s\n%s", strings.Join(msgs, "\n"), r)
		}
	})
}

func TestArrayItemKey(t *testing.T) {
	t.Parallel()
	doc := "{\"list\": [ {\"path\": \"a\", \"sha256\": \"x\"},\n\t{ \"sha256\" : \"y\" ,\n \"path\":\"b\"}, 7 ] }"
	arr := strings.IndexByte(doc, '[')
	for _, tc := range []struct {
		index int
		key   string
		want  string // what the offset points at
		ok    bool
	}{
		{0, "path", `"path": "a"`, true},
		{0, "sha256", `"sha256": "x"`, true},
		{1, "sha256", `"sha256" : "y"`, true},
		{1, "path", `"path":"b"`, true},
		{1, "memoryPages", `{ "sha256"`, true}, // no such key: the item
		{2, "path", `7 ]`, true},               // not an object: the item
		{3, "path", "", false},
	} {
		off, ok := arrayItemKey([]byte(doc), arr, tc.index, tc.key)
		if ok != tc.ok || (ok && !strings.HasPrefix(doc[off:], tc.want)) {
			t.Errorf("item %d key %s: offset %d (%t), want at %q", tc.index, tc.key, off, ok, tc.want)
		}
	}
	if _, ok := arrayItemKey([]byte(doc), 0, 0, "path"); ok {
		t.Errorf("an offset that is not an array must fail")
	}
}

func TestShownPath(t *testing.T) {
	t.Parallel()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ abs, config, want string }{
		{filepath.Join(wd, "testdata", "p"), filepath.Join("testdata", "mcp.json"), filepath.Join("testdata", "p")},
		{filepath.Join(filepath.Dir(wd), "p"), filepath.Join("testdata", "mcp.json"), filepath.Join("testdata", "..", "..", "p")},
		{"/etc/voltmcp/p", "/etc/voltmcp/mcp.json", "/etc/voltmcp/p"},
		{"/etc/voltmcp/p", "", "/etc/voltmcp/p"},
	} {
		if got := shownPath(tc.abs, tc.config); filepath.Clean(got) != filepath.Clean(tc.want) {
			t.Errorf("shownPath(%q, %q) = %q, want %q", tc.abs, tc.config, got, tc.want)
		}
	}
}
