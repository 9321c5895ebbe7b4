package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/voltmcp/voltmcp/engine/audit"
	"github.com/voltmcp/voltmcp/policies"
)

// policyFlagOwners says which subcommands each flag of 'voltmcp policy'
// belongs to.
var policyFlagOwners = map[string][]string{
	"verbose": {"test"},
	"input":   {"eval"},
	"explain": {"eval"},
	"audit":   {"replay"},
	"json":    {"replay"},
}

func policyCommand() *command {
	var (
		verbose   bool
		input     string
		explain   bool
		auditFile string
		asJSON    bool
		flags     *pflag.FlagSet
	)
	c := &command{
		name:    "policy",
		summary: "test Rego policies, explain their decisions, replay the audit log",
		usage: `Usage: voltmcp policy test [DIR...] [-v]
       voltmcp policy eval AREA --input FILE [--explain] [--policy DIR]...
       voltmcp policy replay [--audit FILE] [--policy DIR]... [--json]

test runs the Rego unit tests (test_* rules in *_test.rego files) of the
built-in policies, and of each DIR against the built-in policies plus the
policies in DIR. Output is that of 'opa test'; -v lists every test. Exits 1
when a test fails.

eval evaluates one decision area (trust, tools, remote or redact) on the
JSON input document in FILE ('-' reads standard input) and prints the
decision with its reasons, each naming its rule and file:line. --explain
also prints the evaluation trace. --policy adds user policy files or
directories, as in the config's "policies" setting. Exits 3 when the
policies do not load or the evaluation fails (the printed decision is
then the fail-closed one).

replay decides every tool call recorded in the audit log (default
<agent-dir>/audit/audit.jsonl and its rotated files) again, under the
built-in policies plus each --policy, and prints the calls it would now
decide differently, one line each: time, server.tool, the recorded verdict
and the new one, and the reasons of the new decision with their rule and
file:line. Calls on which the policies fail (and so would be denied) are
listed as errors. Nothing is run: no server starts, no tool is called.
--json prints the whole report. Exits 0 when every call is decided as
recorded, 1 when some call would be blocked or allowed differently or the
policies fail on one, and 3 when the policies do not load or the log
cannot be read. Replay does not check the log's hash chain; 'voltmcp audit
verify' does.

Input documents and worked examples: docs/policies.md.

Examples:
  voltmcp policy test
  voltmcp policy test -v examples/policies
  voltmcp policy eval tools --input call.json --policy examples/policies
  echo '{"command":"add_mcp_server","caller":"remote"}' | voltmcp policy eval remote --input - --explain
  voltmcp policy replay --policy examples/policies
  voltmcp policy replay --audit audit.jsonl --policy ./policies --json`,
		flags: func(fs *pflag.FlagSet) {
			flags = fs
			fs.BoolVarP(&verbose, "verbose", "v", false, "test: list every test, like opa test -v")
			fs.StringVar(&input, "input", "", "eval: file with the JSON input document ('-' for stdin)")
			fs.BoolVar(&explain, "explain", false, "eval: print the evaluation trace")
			fs.StringVar(&auditFile, "audit", "", "replay: the audit log's active `FILE` (default <agent-dir>/audit/audit.jsonl)")
			fs.BoolVar(&asJSON, "json", false, "replay: print the report as JSON")
		},
	}
	c.run = func(ctx context.Context, e *env, args []string) error {
		if len(args) == 0 {
			return usageErrorf("want 'voltmcp policy test [DIR...]', 'voltmcp policy eval AREA --input FILE' or 'voltmcp policy replay'")
		}
		sub := args[0]
		if sub != "test" && sub != "eval" && sub != "replay" {
			return usageErrorf("unknown policy subcommand %q (want test, eval or replay)%s", sub, suggest(sub, []string{"test", "eval", "replay"}))
		}
		var misplaced error
		flags.Visit(func(fl *pflag.Flag) {
			if owners := policyFlagOwners[fl.Name]; owners != nil && !slices.Contains(owners, sub) && misplaced == nil {
				misplaced = usageErrorf("--%s belongs to 'voltmcp policy %s', not %s", fl.Name, strings.Join(owners, "' and 'voltmcp policy "), sub)
			}
		})
		if misplaced != nil {
			return misplaced
		}
		// --policy is a global flag; test takes its directories as
		// arguments instead.
		policyFS := e.g.policies
		if sub == "test" && len(policyFS) > 0 {
			return usageErrorf("--policy belongs to 'voltmcp policy eval' and 'voltmcp policy replay'; give 'policy test' its directories as arguments")
		}
		switch sub {
		case "test":
			return policyTest(ctx, e, args[1:], verbose)
		case "eval":
			if len(args) != 2 {
				return usageErrorf("want 'voltmcp policy eval AREA --input FILE' with AREA one of %s", strings.Join(policies.Areas(), ", "))
			}
			if input == "" {
				return usageErrorf("policy eval needs --input FILE ('-' for standard input)")
			}
			return policyEval(ctx, e, args[1], input, explain, policyFS)
		}
		if len(args) != 1 {
			return usageErrorf("policy replay takes no arguments: give the log with --audit FILE and policies with --policy DIR")
		}
		if auditFile == "" {
			auditFile = audit.DefaultPath(e.g.agentDir)
		}
		return policyReplay(ctx, e, auditFile, policyFS, asJSON)
	}
	return c
}

func policyTest(ctx context.Context, e *env, dirs []string, verbose bool) error {
	res, err := policies.RunTests(ctx, &policies.TestOptions{Dirs: dirs})
	if err != nil {
		return failuref("%w", err)
	}
	if err := res.Write(e.stdout, verbose); err != nil {
		return failuref("write output: %w", err)
	}
	if res.Failed() > 0 {
		return errFindings
	}
	return nil
}

func policyEval(ctx context.Context, e *env, area, input string, explain bool, dirs []string) error {
	var doc []byte
	var err error
	if input == "-" {
		doc, err = io.ReadAll(e.stdin)
	} else {
		doc, err = os.ReadFile(input)
	}
	if err != nil {
		return failuref("read input: %w", err)
	}
	p, err := policies.Load(ctx, &policies.Options{Dirs: dirs})
	if err != nil {
		return failuref("%w", err)
	}
	out, trace, err := p.Eval(ctx, area, doc, explain)
	if out == nil {
		return usageErrorf("%v", err)
	}
	if _, werr := fmt.Fprintf(e.stdout, "%s\n", out); werr != nil {
		return failuref("write output: %w", werr)
	}
	if explain && trace != "" {
		if _, werr := fmt.Fprintf(e.stdout, "\nTrace:\n%s", trace); werr != nil {
			return failuref("write output: %w", werr)
		}
	}
	if err != nil {
		return failuref("%w", err)
	}
	return nil
}

// policyReplay decides the audit log's recorded calls again under the
// built-in policies plus dirs, and prints what would change.
func policyReplay(ctx context.Context, e *env, path string, dirs []string, asJSON bool) error {
	p, err := policies.Load(ctx, &policies.Options{Dirs: dirs})
	if err != nil {
		return failuref("%w", err)
	}
	recs, probs, err := audit.Read(path, audit.Query{Kind: audit.KindCall})
	if err != nil {
		return noLog(path, "--audit", err)
	}
	for _, pr := range probs {
		fmt.Fprintf(e.stderr, "voltmcp policy replay: skipped %s\n", clean(pr.String()))
	}
	in := make([]policies.ReplayRecord, len(recs))
	for i, r := range recs {
		in[i] = replayRecord(r)
	}
	rep, err := p.Replay(ctx, in)
	if err != nil {
		return failuref("%w", err)
	}
	if asJSON {
		err = writeJSONValue(e.stdout, rep)
	} else {
		err = writeReplayText(e.stdout, rep, dirs)
	}
	if err != nil {
		return failuref("write output: %w", err)
	}
	if rep.Changed() {
		return errFindings
	}
	return nil
}

// replayRecord turns a call record of the audit log into the tools input
// the gateway decided it on: the record's server, tool, risk and surface
// and its detail, read back as policies.ToolInputRecord.Input reads what
// ToolInput.Record wrote when the engine recorded the call. A detail of
// the wrong type marks the record invalid rather than being read as
// empty: a replay must not quietly decide on another input than the
// gateway did.
//
// The recorded verdict is the record's policy decision; a record without
// one was allowed unless its status is "denied".
func replayRecord(r audit.Record) policies.ReplayRecord {
	in, err := policies.ToolInputRecord{Server: r.Server, Tool: r.Tool, Risk: r.Risk, Surface: r.Surface, Detail: r.Detail}.Input()
	out := policies.ReplayRecord{Seq: r.Seq, Time: r.Time, Status: r.Status, Input: in, Allowed: r.Status != "denied"}
	if err != nil {
		out.Input = policies.ToolInput{Server: policies.Server{ID: r.Server}, Tool: policies.Tool{Name: r.Tool}, Risk: r.Risk, Surface: r.Surface}
		out.Invalid = err.Error()
	}
	if r.Decision != nil {
		out.Allowed, out.Reasons = r.Decision.Allowed, r.Decision.Reasons
	}
	return out
}

// writeReplayText prints one line per call decided differently, oldest
// first, then the records skipped and a summary.
func writeReplayText(w io.Writer, rep policies.ReplayReport, dirs []string) error {
	type line struct {
		seq  int64
		text string
	}
	var lines []line
	verdict := func(allowed bool) string {
		if allowed {
			return "allowed"
		}
		return "blocked"
	}
	for _, c := range slices.Concat(rep.NowBlocked, rep.NowAllowed) {
		why := "no rule denies it now"
		if len(c.Now.Reasons) > 0 {
			rs := make([]string, len(c.Now.Reasons))
			for i, r := range c.Now.Reasons {
				rs[i] = r.String()
			}
			why = strings.Join(rs, "; ")
		}
		lines = append(lines, line{c.Seq, fmt.Sprintf("%s  %s.%s  %s → %s: %s", replayTime(c.Time), c.Server, c.Tool,
			verdict(c.WasAllowed), verdict(c.Now.Allowed), why)})
	}
	for _, pe := range rep.Errors {
		lines = append(lines, line{pe.Seq, fmt.Sprintf("%s  %s.%s  %s → policy error (blocked): %s", replayTime(pe.Time), pe.Server, pe.Tool,
			verdict(pe.WasAllowed), pe.Reason.String())})
	}
	for _, s := range rep.Skipped {
		lines = append(lines, line{s.Seq, fmt.Sprintf("%s  %s.%s  skipped (seq %d): %s", replayTime(s.Time), s.Server, s.Tool, s.Seq, s.Reason.Message)})
	}
	slices.SortStableFunc(lines, func(a, b line) int { return cmp.Compare(a.seq, b.seq) })
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(clean(l.text))
		b.WriteByte('\n')
	}
	set := "the built-in policies"
	if len(dirs) > 0 {
		set += " + " + strings.Join(dirs, " + ")
	}
	fmt.Fprintf(&b, "replayed %d calls under %s: %d same, %d now blocked, %d now allowed, %d policy errors, %d skipped\n",
		rep.Total, clean(set), rep.Same, len(rep.NowBlocked), len(rep.NowAllowed), len(rep.Errors), len(rep.Skipped))
	_, err := io.WriteString(w, b.String())
	return err
}

// replayTime formats a record's time as audit's human output does.
func replayTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}
