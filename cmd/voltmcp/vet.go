package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/voltmcp/voltmcp/cue"
)

func vetCommand() *command {
	var format, failOn string
	var quiet bool
	c := &command{
		name:    "vet",
		summary: "check MCP config files for errors, without running anything",
		usage: `Usage: voltmcp vet [flags] [FILE...]

Checks MCP config the way voltmcp will read it, and exits 1 when it finds an
error. With no FILE it checks the four layers found under --home and
--project, including project files that are not trusted (vet runs nothing),
and says whether they would load. With FILEs it checks each as a standalone
file. Formats: text (file:line:col like a compiler), json, sarif (GitHub code
scanning) and github (workflow annotations).

Examples:
  voltmcp vet --project examples/quickstart
  voltmcp vet .mcp.json .volt/mcp.json
  voltmcp vet --format sarif > voltmcp.sarif
  voltmcp vet --format github --fail-on warning`,
		flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&format, "format", "text", "output format: text, json, sarif or github")
			fs.StringVar(&failOn, "fail-on", "error", "lowest severity that fails the run: error or warning")
			fs.BoolVarP(&quiet, "quiet", "q", false, "leave out info diagnostics (text and github formats)")
		},
	}
	c.run = func(ctx context.Context, e *env, args []string) error {
		w, ok := vetFormatter(format)
		if !ok {
			return usageErrorf("unknown --format %q: want text, json, sarif or github", format)
		}
		if failOn != "error" && failOn != "warning" {
			return usageErrorf("unknown --fail-on %q: want error or warning", failOn)
		}
		opts := &cue.Options{
			Surface: cue.SurfaceVet, Approve: e.g.approve, NoApprove: e.g.noApprove,
			CheckUntrusted: true, Lint: true, TrustStore: filepath.Join(e.g.agentDir, cue.TrustStoreFile),
		}
		var res *cue.Result
		var err error
		if len(args) > 0 {
			res, err = cue.LoadFiles(ctx, args, opts)
		} else {
			res, err = cue.Load(ctx, cue.Locations{Home: e.g.home, Project: e.g.project}, opts)
		}
		if err != nil {
			return failuref("%w", err)
		}
		failed := res.Diagnostics.HasErrors() || (failOn == "warning" && res.Diagnostics.Count(cue.SeverityWarning) > 0)
		if err := w(e.stdout, res, vetOutput{quiet: quiet, ok: !failed}); err != nil {
			return failuref("write output: %w", err)
		}
		if failed {
			return errFindings
		}
		return nil
	}
	return c
}

// summaryLine says what vet found, for the text format.
func summaryLine(res *cue.Result) string {
	found := 0
	for _, f := range res.Files {
		if f.Found {
			found++
		}
	}
	return fmt.Sprintf("%d error(s), %d warning(s) in %d file(s)",
		res.Diagnostics.Count(cue.SeverityError), res.Diagnostics.Count(cue.SeverityWarning), found)
}
