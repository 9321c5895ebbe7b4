package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/voltmcp/voltmcp/policies"
)

func policyCommand() *command {
	var (
		verbose  bool
		input    string
		explain  bool
		policyFS []string
	)
	c := &command{
		name:    "policy",
		summary: "test Rego policies and explain their decisions",
		usage: `Usage: voltmcp policy test [DIR...] [-v]
       voltmcp policy eval AREA --input FILE [--explain] [--policy DIR]...

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

Input documents and worked examples: docs/policies.md.

Examples:
  voltmcp policy test
  voltmcp policy test -v examples/policies
  voltmcp policy eval tools --input call.json --policy examples/policies
  echo '{"command":"add_mcp_server","caller":"remote"}' | voltmcp policy eval remote --input - --explain`,
		flags: func(fs *pflag.FlagSet) {
			fs.BoolVarP(&verbose, "verbose", "v", false, "test: list every test, like opa test -v")
			fs.StringVar(&input, "input", "", "eval: file with the JSON input document ('-' for stdin)")
			fs.BoolVar(&explain, "explain", false, "eval: print the evaluation trace")
			fs.StringArrayVar(&policyFS, "policy", nil, "eval: user policy file or directory (repeatable)")
		},
	}
	c.run = func(ctx context.Context, e *env, args []string) error {
		if len(args) == 0 {
			return usageErrorf("want 'voltmcp policy test [DIR...]' or 'voltmcp policy eval AREA --input FILE'")
		}
		switch args[0] {
		case "test":
			if input != "" || explain || len(policyFS) > 0 {
				return usageErrorf("--input, --explain and --policy belong to 'policy eval'")
			}
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
		return usageErrorf("unknown policy subcommand %q (want test or eval)%s", args[0], suggest(args[0], []string{"test", "eval"}))
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
