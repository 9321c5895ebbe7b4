package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/redact"
)

func trustCommand() *command {
	var yes, asJSON bool
	c := &command{
		name:    "trust",
		summary: "trust the project's MCP config as it is now, after showing what it runs",
		usage: `Usage: voltmcp trust [--yes] [--json] [--project DIR]

Shows what the project's MCP config (.mcp.json and .volt/mcp.json) would
run: each server's command and arguments, the names of the environment
variables it gets, its URL (credentials hidden), every variable of your
environment it reads with ${env:NAME} and the field it goes into (args,
url, env, headers, auth and any other), and the policies it adds, with
every file counted and listed. Then asks for confirmation and records
trust in the state directory, bound to the content of each of those
files (the config files and every policy file they bring in): once one
changes, or a policy file is added or removed, the project is untrusted
again until you run this again. --yes records without asking
(for scripts; read the listing first). The trust policy decides; a
defaultProjectTrust of "never" or --no-approve still wins.

Examples:
  voltmcp trust
  voltmcp trust --project ~/src/app --yes`,
		flags: func(fs *pflag.FlagSet) {
			fs.BoolVarP(&yes, "yes", "y", false, "record trust without asking")
			fs.BoolVar(&asJSON, "json", false, "print the listing as JSON")
		},
	}
	c.run = func(ctx context.Context, e *env, args []string) error {
		if len(args) > 0 {
			return usageErrorf("trust takes no arguments; use --project DIR")
		}
		res, err := cue.Load(ctx, cue.Locations{Home: e.g.home, Project: e.g.project},
			&cue.Options{Surface: cue.SurfaceInteractive, Approve: true})
		if err != nil {
			return failuref("%w", err)
		}
		rec := cue.NewTrustRecord(e.g.project, res.TrustFiles, time.Now())
		if len(rec.Files) == 0 {
			return failuref("no project MCP config in %s (looked for .mcp.json and .volt/mcp.json)", rec.Project)
		}
		for _, f := range res.TrustFiles {
			if f.Found && f.SHA256 == "" && f.NamedBy != "" {
				// Trust covers the content of every file the config
				// brings in; one that cannot be read cannot be covered.
				return failuref("cannot trust %s: %s names %s", rec.Project, clean(f.NamedBy), clean(f.Reason))
			}
		}
		listing := projectListing(res)
		if asJSON {
			enc := json.NewEncoder(e.stdout)
			enc.SetIndent("", "  ")
			enc.SetEscapeHTML(false)
			if err := enc.Encode(struct {
				Record  cue.TrustRecord `json:"record"`
				Servers []trustServer   `json:"servers"`
			}{rec, listing}); err != nil {
				return failuref("write output: %w", err)
			}
		} else {
			writeListing(e, rec, listing, res)
		}
		if !yes {
			if asJSON {
				return usageErrorf("--json needs --yes: there is no one to ask")
			}
			fmt.Fprint(e.stderr, "Trust this project's MCP config as it is now? [y/N] ")
			line, err := bufio.NewReader(e.stdin).ReadString('\n')
			if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
				if err != nil && line == "" {
					// Nothing answered: standard input ended, as it does
					// under a script or with no terminal.
					fmt.Fprintln(e.stderr, "not trusted: no answer was read; voltmcp trust --yes trusts it without asking")
				} else {
					fmt.Fprintln(e.stderr, "not trusted")
				}
				return errFindings
			}
		}
		store := filepath.Join(e.g.agentDir, cue.TrustStoreFile)
		if err := cue.SaveTrustRecord(store, rec); err != nil {
			return failuref("%w", err)
		}
		if !asJSON {
			fmt.Fprintf(e.stdout, "trusted %s (%d %s); it stays trusted until a file changes\n", rec.Project, len(rec.Files), plural(len(rec.Files), "file"))
		}
		return nil
	}
	return c
}

func untrustCommand() *command {
	return &command{
		name:    "untrust",
		summary: "remove the recorded trust of the project's MCP config",
		usage: `Usage: voltmcp untrust [--project DIR]

Removes the trust that 'voltmcp trust' recorded for the project. Its MCP
config then loads only as defaultProjectTrust or --approve says.

Examples:
  voltmcp untrust
  voltmcp untrust --project ~/src/app`,
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) > 0 {
				return usageErrorf("untrust takes no arguments; use --project DIR")
			}
			store := filepath.Join(e.g.agentDir, cue.TrustStoreFile)
			project := cue.NewTrustRecord(e.g.project, nil, time.Time{}).Project
			removed, err := cue.RemoveTrustRecord(store, project)
			if err != nil {
				return failuref("%w", err)
			}
			if removed {
				fmt.Fprintf(e.stdout, "%s is no longer trusted\n", project)
			} else {
				fmt.Fprintf(e.stdout, "%s was not trusted\n", project)
			}
			return nil
		},
	}
}

// trustServer is what a project server would run, as shown before trust.
type trustServer struct {
	ID        string   `json:"id"`
	Layer     string   `json:"layer"`
	Transport string   `json:"transport"`
	Command   string   `json:"command,omitempty"`
	Args      []string `json:"args,omitempty"`
	Cwd       string   `json:"cwd,omitempty"`
	EnvNames  []string `json:"envNames,omitempty"`
	Allowlist []string `json:"envAllowlist,omitempty"`
	URL       string   `json:"url,omitempty"`
	Headers   []string `json:"headerNames,omitempty"`
	// EnvRefs is every host variable the definition reads, with the
	// field that reads it: what the server would be sent once trusted.
	EnvRefs []cue.EnvRefUse `json:"envRefs,omitempty"`
	Enabled bool            `json:"enabled"`
}

// projectListing lists the servers whose definition comes from a project
// layer, with secrets reduced to names.
func projectListing(res *cue.Result) []trustServer {
	var out []trustServer
	for _, s := range res.Config.Servers {
		if !s.Layer.IsProject() {
			continue
		}
		ts := trustServer{ID: s.ID, Layer: string(s.Layer), Transport: s.Transport, Command: s.Command, Args: redact.Args(s.Args),
			Cwd: s.Cwd, Allowlist: s.EnvAllowlist, URL: cue.RedactURL(s.URL), EnvRefs: s.EnvRefUses(), Enabled: s.Enabled}
		for k := range s.Env {
			ts.EnvNames = append(ts.EnvNames, k)
		}
		for k := range s.Headers {
			ts.Headers = append(ts.Headers, k)
		}
		slices.Sort(ts.EnvNames)
		slices.Sort(ts.Headers)
		out = append(out, ts)
	}
	return out
}

func writeListing(e *env, rec cue.TrustRecord, servers []trustServer, res *cue.Result) {
	w := e.stdout
	fmt.Fprintf(w, "Project %s, %d %s:\n", rec.Project, len(rec.Files), plural(len(rec.Files), "file"))
	named := map[string]string{}
	for _, f := range res.TrustFiles {
		named[f.Path] = f.NamedBy
	}
	for _, f := range rec.Files {
		by := ""
		if n := named[f.Path]; n != "" {
			by = "  (policy, named by " + clean(n) + ")"
		}
		fmt.Fprintf(w, "  file %s  sha256 %s%s\n", clean(f.Path), f.SHA256[:16], by)
	}
	if len(servers) == 0 {
		fmt.Fprintln(w, "It defines no servers of its own.")
	}
	// A project's config is untrusted text: each value is cleaned, so
	// that an escape sequence cannot rewrite the listing it is judged by.
	list := func(items []string) string {
		out := make([]string, len(items))
		for i, it := range items {
			out[i] = clean(it)
		}
		return strings.Join(out, ", ")
	}
	for _, s := range servers {
		state := ""
		if !s.Enabled {
			state = " (disabled)"
		}
		fmt.Fprintf(w, "\nserver %s%s, from the %s layer\n", clean(s.ID), state, s.Layer)
		if s.Command != "" {
			words := make([]string, 0, 1+len(s.Args))
			for _, a := range append([]string{s.Command}, s.Args...) {
				words = append(words, clean(a))
			}
			fmt.Fprintf(w, "  runs     %s\n", strings.Join(words, " "))
			if s.Cwd != "" {
				fmt.Fprintf(w, "  in       %s\n", clean(s.Cwd))
			}
		}
		if s.URL != "" {
			fmt.Fprintf(w, "  connects %s (%s)\n", clean(s.URL), s.Transport)
		}
		if len(s.EnvNames) > 0 {
			fmt.Fprintf(w, "  env      %s\n", list(s.EnvNames))
		}
		if len(s.Allowlist) > 0 {
			fmt.Fprintf(w, "  passes   %s from your environment\n", list(s.Allowlist))
		}
		if len(s.Headers) > 0 {
			fmt.Fprintf(w, "  headers  %s\n", list(s.Headers))
		}
		for _, r := range s.EnvRefs {
			fmt.Fprintf(w, "  reads    %s from your environment, into %s\n", r.Name, clean(r.Field))
		}
	}
	for _, p := range res.Config.Policies {
		if p.Layer.IsProject() {
			fmt.Fprintf(w, "\npolicy %s (deny rules only)\n", clean(p.Path))
		}
	}
	if n := res.Diagnostics.Count(cue.SeverityError); n > 0 {
		fmt.Fprintf(w, "\nThe config has %d errors; servers with errors stay disabled (see voltmcp vet --approve).\n", n)
	}
	fmt.Fprintln(w)
}
