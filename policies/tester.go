package policies

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/tester"
)

// DefaultTestTimeout is the per-test deadline used when
// TestOptions.Timeout is zero.
const DefaultTestTimeout = 10 * time.Second

// TestOptions configures RunTests. The zero value (or nil) runs the tests
// of the default policies only.
type TestOptions struct {
	// Dirs are user policy files or directories. Their policies are loaded
	// on top of the default ones (with the same checks as Load) and their
	// *_test.rego files run against the result.
	Dirs []string
	// Filter, when set, is a regular expression; only tests whose name
	// matches run.
	Filter string
	// Timeout is the deadline of one test. Zero means DefaultTestTimeout.
	Timeout time.Duration
}

// TestResult is the outcome of one Rego test.
type TestResult struct {
	Package  string        `json:"package"`
	Name     string        `json:"name"`
	File     string        `json:"file"`
	Line     int           `json:"line"`
	Fail     bool          `json:"fail,omitempty"`
	Skip     bool          `json:"skip,omitempty"`
	Err      string        `json:"error,omitempty"`
	Duration time.Duration `json:"duration"`
	// Output is what the test printed (print statements).
	Output string `json:"output,omitempty"`

	raw *tester.Result
}

// Passed reports whether the test ran and passed.
func (r TestResult) Passed() bool { return !r.Fail && r.Err == "" && !r.Skip }

// Failed reports whether the test failed or could not run.
func (r TestResult) Failed() bool { return r.Fail || r.Err != "" }

// Failure says why a test did not pass, or "" when it did.
func (r TestResult) Failure() string {
	switch {
	case r.Err != "":
		return r.Err
	case r.Fail:
		return "test failed"
	case r.Skip:
		return "skipped"
	}
	return ""
}

// Results are the outcomes of a RunTests call, ordered by file and line.
type Results struct {
	Tests []TestResult `json:"tests"`
}

// Failed counts the tests that failed or could not run.
func (rs Results) Failed() int {
	n := 0
	for _, r := range rs.Tests {
		if r.Failed() {
			n++
		}
	}
	return n
}

// Write prints the results the way `opa test` does; verbose is `opa test -v`
// (every test, and the output of failing ones).
func (rs Results) Write(w io.Writer, verbose bool) error {
	ch := make(chan *tester.Result, len(rs.Tests))
	for _, r := range rs.Tests {
		ch <- r.raw
	}
	close(ch)
	return tester.PrettyReporter{Output: w, Verbose: verbose, FailureLine: true}.Report(ch)
}

// RunTests runs Rego unit tests (test_* rules in *_test.rego files) with
// OPA's tester. The default policies' own tests always run against the
// default policies alone; the tests in opts.Dirs run against the default
// policies plus the policies in opts.Dirs. A policy that does not load is an
// error; failing tests are not (see Results.Failed).
func RunTests(ctx context.Context, opts *TestOptions) (Results, error) {
	if opts == nil {
		opts = &TestOptions{}
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTestTimeout
	}
	caps := capabilities()
	bundle, err := parseBundle(bundleFS, caps, true)
	if err != nil {
		return Results{}, fmt.Errorf("parse default policies: %w", err)
	}
	runs := [][]source{bundle}
	if len(opts.Dirs) > 0 {
		var srcs []source
		for _, s := range bundle {
			if !isTestFile(s.name) {
				srcs = append(srcs, s)
			}
		}
		files, err := regoFiles(opts.Dirs, true)
		if err != nil {
			return Results{}, err
		}
		user, err := parseSources(files, fromUser, caps)
		if err != nil {
			return Results{}, fmt.Errorf("parse policies: %s", describe(err))
		}
		var policies []source
		for _, s := range user {
			if !isTestFile(s.name) {
				policies = append(policies, s)
			}
		}
		if err := validate(append(slices.Clone(srcs), policies...)); err != nil {
			return Results{}, fmt.Errorf("check policies: %s", describe(err))
		}
		runs = append(runs, append(srcs, user...))
	}
	var out Results
	for i, srcs := range runs {
		mods := make(map[string]*ast.Module, len(srcs))
		for _, s := range srcs {
			mods[s.name] = s.module
		}
		runner := tester.NewRunner().
			SetCompiler(newCompiler(caps).WithEnablePrintStatements(true)).
			AddCustomBuiltins(sizedTestBuiltins()).
			SetModules(mods).
			SetTimeout(timeout).
			RaiseBuiltinErrors(true).
			CapturePrintOutput(true).
			Filter(opts.Filter)
		ch, err := runner.RunTests(ctx, nil)
		if err != nil {
			return Results{}, fmt.Errorf("compile policies and tests: %s", describe(err))
		}
		for r := range ch {
			// Later runs load no default test files; keep each test once
			// even so.
			if i > 0 && r.Location != nil && isBundleFile(r.Location.File) {
				continue
			}
			out.Tests = append(out.Tests, testResult(r))
		}
	}
	slices.SortFunc(out.Tests, func(a, b TestResult) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Name, b.Name))
	})
	return out, ctx.Err()
}

func isTestFile(name string) bool { return strings.HasSuffix(name, "_test.rego") }

func isBundleFile(name string) bool { return strings.HasPrefix(name, bundlePrefix) }

func testResult(r *tester.Result) TestResult {
	t := TestResult{Package: r.Package, Name: r.Name, Fail: r.Fail, Skip: r.Skip, Duration: r.Duration, Output: string(r.Output), raw: r}
	if r.Location != nil {
		t.File, t.Line = r.Location.File, r.Location.Row
	}
	if r.Error != nil {
		t.Err = describe(r.Error)
	}
	return t
}
