package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"github.com/spf13/pflag"

	"github.com/voltmcp/voltmcp/cue"
)

func importCommand() *command {
	var from []string
	var yes, force, keepSecrets bool
	var scope string
	c := &command{
		name:    "import",
		summary: "bring in the MCP servers other clients (Claude Code, Cursor, VS Code, …) already have",
		usage: `Usage: voltmcp import [--from CLIENT]... [--scope user|project] [--yes] [--force] [--keep-secrets]

Reads the MCP config of Claude Code (~/.claude.json: its mcpServers and the
entry of this project; .mcp.json), Claude Desktop, Cursor (~/.cursor/mcp.json,
.cursor/mcp.json), VS Code (its user mcp.json, .vscode/mcp.json), Windsurf
(~/.codeium/windsurf/mcp_config.json) and Codex (~/.codex/config.toml,
[mcp_servers.NAME]), and prints what it would write to voltmcp's user file
(<home>/.volt/agent/mcp.json; --scope project: <project>/.volt/mcp.json):
each server with the file:line it comes from, the servers it skips and why
(already in voltmcp, defined twice, invalid, or the entry that points a
client at voltmcp), and each credential written in plain text, shown only
as the ${env:NAME} reference that replaces it. The servers of a client's
file of the project (.cursor/mcp.json, .vscode/mcp.json, and Claude Code's
entry of this project, ~/.claude.json's projects["<project>"]) are this
project's alone: they go to <project>/.volt/mcp.json whatever --scope says.
Claude Code's servers of other projects are listed and skipped (run import
in that project).

With --yes it writes them, atomically and keeping the rest of the file,
and lists the variables to set where voltmcp serve runs. A literal secret is
never copied unless --keep-secrets is given (vet then reports it). .mcp.json
is voltmcp's own project-shared layer: its servers are listed, not copied
(run 'voltmcp trust' to load them). Nothing is removed from the clients'
files; see 'voltmcp setup --move' for that.

CLIENT is one of claude-code, claude-desktop, cursor, vscode, windsurf,
codex; repeat --from to read several. Exits 1 when a file has errors (the
other files still import).

Examples:
  voltmcp import
  voltmcp import --from claude-code --from codex --yes`,
		flags: func(fs *pflag.FlagSet) {
			fs.StringArrayVar(&from, "from", nil, "read only this client's files (repeatable)")
			fs.StringVar(&scope, "scope", "user", "write the servers of user files to voltmcp's user file (user) or the project's .volt/mcp.json (project); a project file's always go to the project's")
			fs.BoolVar(&yes, "yes", false, "write the servers (without it, print the plan)")
			fs.BoolVar(&force, "force", false, "replace a server voltmcp's file already defines under the same name")
			fs.BoolVar(&keepSecrets, "keep-secrets", false, "copy literal secrets as written instead of ${env:NAME} references")
		},
	}
	c.run = func(ctx context.Context, e *env, args []string) error {
		if len(args) > 0 {
			return usageErrorf("import takes no arguments; name clients with --from")
		}
		if err := checkClients(from, clientNames); err != nil {
			return err
		}
		layer, err := scopeLayer(scope)
		if err != nil {
			return err
		}
		var files []clientFile
		for _, f := range clientFiles(e.g) {
			if len(from) == 0 || containsString(from, f.client) {
				files = append(files, f)
			}
		}
		p, err := planImport(ctx, e, files, layer, &importOptions{force: force, keepSecrets: keepSecrets})
		if err != nil {
			return err
		}
		p.print(e.stdout, e.stderr)
		if p.count() == 0 {
			fmt.Fprintln(e.stdout, "Nothing to import.")
			if p.lines.Len() == 0 {
				// No file held a server: say where voltmcp looked.
				fmt.Fprintln(e.stdout, "No MCP server was found in:")
				seen := map[string]bool{}
				for _, f := range files {
					if !seen[f.path] {
						seen[f.path] = true
						fmt.Fprintf(e.stdout, "  %s  %s\n", f.label, f.path)
					}
				}
				fmt.Fprintln(e.stdout, "'voltmcp add NAME -- COMMAND ARGS...' or 'voltmcp add NAME --url URL' adds one by hand.")
			}
		} else if !yes {
			fmt.Fprintf(e.stdout, "Would write %s. Run again with --yes to write %s.\n", p.describe(), pronoun(p.count()))
		} else {
			if err := p.apply(ctx, e); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "Wrote %s. Next: 'voltmcp refresh' lists their tools; 'voltmcp setup CLIENT' points a client at voltmcp.\n", p.describe())
			p.trustHint(e.stdout)
		}
		if p.errors {
			return errFindings
		}
		return nil
	}
	return c
}

// importOptions tune planImport.
type importOptions struct {
	force, keepSecrets bool
	// moving is the client file setup --move empties: servers defined in
	// it count as voltmcp's own, not as conflicts, when voltmcp reads it.
	moving string
}

// importDest is one voltmcp-owned file import writes, with the servers
// it writes there.
type importDest struct {
	layer   cue.Layer
	path    string
	servers []cue.NewServer
}

// importPlan is what import would write.
type importPlan struct {
	// dests are the files written: the one --scope names first, then the
	// project's for the servers of the project's own files (and Claude
	// Code's entry of this project), when that is another file.
	dests   []*importDest
	opts    importOptions
	trusted bool         // whether the project's layers load
	lines   bytes.Buffer // the plan, for stdout
	diags   bytes.Buffer // the files' problems, for stderr
	vars    map[string][]string
	errors  bool
}

// dest returns the destination of layer, adding it when new.
func (p *importPlan) dest(loc cue.Locations, layer cue.Layer) *importDest {
	for _, d := range p.dests {
		if d.layer == layer {
			return d
		}
	}
	d := &importDest{layer: layer, path: loc.Path(layer)}
	p.dests = append(p.dests, d)
	return d
}

// count is the number of servers the plan writes.
func (p *importPlan) count() int {
	n := 0
	for _, d := range p.dests {
		n += len(d.servers)
	}
	return n
}

// describe says what the plan writes where: "2 servers to FILE and 1
// server to FILE".
func (p *importPlan) describe() string {
	var parts []string
	for _, d := range p.dests {
		if len(d.servers) > 0 {
			parts = append(parts, fmt.Sprintf("%d %s to %s", len(d.servers), plural(len(d.servers), "server"), d.path))
		}
	}
	return strings.Join(parts, " and ")
}

// writesProject reports whether the plan writes the project's file.
func (p *importPlan) writesProject() bool {
	for _, d := range p.dests {
		if d.layer.IsProject() && len(d.servers) > 0 {
			return true
		}
	}
	return false
}

// planImport reads the client files and decides, server by server, what
// to write to layer; the servers of a file of the project, which its
// client starts in this project alone, go to the project's file (see
// clientFile.destLayer). It writes nothing.
func planImport(ctx context.Context, e *env, files []clientFile, layer cue.Layer, o *importOptions) (*importPlan, error) {
	loc := cue.Locations{Home: e.g.home, Project: e.g.project}
	p := &importPlan{opts: *o, vars: map[string][]string{}}
	p.dest(loc, layer)
	res, err := cue.Load(ctx, loc, &cue.Options{Approve: e.g.approve, NoApprove: e.g.noApprove,
		TrustStore: filepath.Join(e.g.agentDir, cue.TrustStoreFile)})
	if err != nil {
		return nil, failuref("%w", err)
	}
	p.trusted = res.Trust.Trusted
	have := map[string]cue.Server{}
	for _, s := range res.Config.Servers {
		have[s.ID] = s
	}
	// The project's file holds its servers whether or not the project is
	// trusted, and the write refuses one it already has: those a project
	// not trusted keeps from loading are voltmcp's all the same.
	for _, file := range res.Files {
		if file.Layer != cue.LayerProject {
			continue
		}
		for _, id := range file.IgnoredServers {
			if _, ok := have[id]; !ok {
				have[id] = cue.Server{ID: id, Layer: file.Layer, File: file.Path}
			}
		}
	}
	schema, err := cue.NewSchema()
	if err != nil {
		return nil, failuref("%w", err)
	}
	here, err := filepath.Abs(e.g.project)
	if err != nil {
		here = filepath.Clean(e.g.project)
	}
	type seenAt struct {
		where string
		def   []byte
	}
	seen := map[string]seenAt{}
	for _, f := range files {
		f.opts.Schema = schema
		f.opts.Under = f.under
		f.opts.Projects = f.projects
		cf, err := cue.ReadClientFile(f.path, &f.opts)
		if err != nil {
			fmt.Fprintf(&p.diags, "%s: %s\n", clean(f.path), clean(err.Error()))
			p.errors = true
			continue
		}
		if !cf.Found || (len(cf.Servers) == 0 && len(cf.Diagnostics) == 0) {
			p.skipProjects(f, cf, here)
			continue
		}
		for _, d := range cf.Diagnostics {
			if d.Code == cue.CodeDialect {
				continue
			}
			p.errors = p.errors || d.Severity == cue.SeverityError
			fmt.Fprintf(&p.diags, "%s\n", clean(d.String()))
		}
		to := p.dest(loc, f.destLayer(layer))
		fmt.Fprintf(&p.lines, "%s: %s\n", f.label, clean(f.where()))
		if f.project && (f.layer == "" || o.moving == f.path) {
			fmt.Fprintf(&p.lines, "  (%s starts these in this project alone: they go to %s, never to the user file)\n", clientName(f.client), clean(to.path))
		}
		for _, s := range cf.Servers {
			at := fmt.Sprintf("%s:%d", s.At.File, s.At.Line)
			skip := func(why string) {
				fmt.Fprintf(&p.lines, "  - %-16s skipped: %s (%s)\n", clean(s.Key), clean(why), clean(at))
			}
			def := s.Definition(o.keepSecrets)
			prev, dup := seen[s.ID]
			cur, inVoltmcp := have[s.ID]
			switch {
			case s.Gateway:
				skip("the entry that points " + f.label + " at voltmcp")
			case s.Invalid:
				skip("it has errors, shown above")
			case f.layer != "" && o.moving != f.path:
				state := "voltmcp reads this file itself (" + string(f.layer) + " layer)"
				if !inVoltmcp {
					state += "; run 'voltmcp trust' to load it"
				}
				fmt.Fprintf(&p.lines, "  = %-16s not copied: %s (%s)\n", clean(s.Key), state, clean(at))
				seen[s.ID] = seenAt{at, def}
			case dup && sameServer(prev.def, def):
				skip("the same as at " + prev.where)
			case dup:
				skip("also defined at " + prev.where + ", which is imported")
			case inVoltmcp && cur.File != o.moving && !(o.force && cur.File == to.path):
				hint := ""
				if cur.File == to.path {
					hint = "; --force replaces it"
				}
				skip(fmt.Sprintf("voltmcp already has %q from %s (%s)%s", cur.ID, cur.File, cur.Layer, hint))
			default:
				seen[s.ID] = seenAt{at, def}
				fmt.Fprintf(&p.lines, "  + %-16s %s (%s)\n", clean(s.Key), clean(s.Summary), clean(at))
				for _, sec := range s.Secrets {
					if o.keepSecrets {
						fmt.Fprintf(&p.lines, "      %s holds a literal secret: copied as written (--keep-secrets)\n", clean(sec.Field))
						continue
					}
					fmt.Fprintf(&p.lines, "      %s holds a literal secret: written as ${env:%s}\n", clean(sec.Field), sec.Variable)
					p.vars[sec.Variable] = append(p.vars[sec.Variable], s.ID)
				}
				to.servers = append(to.servers, cue.NewServer{Key: s.Key, Def: def})
			}
		}
		p.skipProjects(f, cf, here)
	}
	return p, nil
}

// skipProjects lists the servers of the other projects' entries of
// ~/.claude.json, which Claude Code starts in those projects alone: they
// are not voltmcp's to run here, nor in every project from the user
// file; import run in the project brings them in there.
func (p *importPlan) skipProjects(f clientFile, cf *cue.ClientFile, here string) {
	for _, cp := range cf.Projects {
		if filepath.Clean(cp.Dir) == here {
			continue // this project's entry, read as its own file
		}
		fmt.Fprintf(&p.lines, "Claude Code (project %s, local): %s (projects → %s)\n", clean(cp.Dir), clean(f.path), clean(cp.Dir))
		for _, s := range cp.Servers {
			fmt.Fprintf(&p.lines, "  - %-16s skipped: Claude Code starts it in %s alone; run 'voltmcp import' there (or with --project %s) to import it for that project (%s:%d)\n",
				clean(s.Key), clean(cp.Dir), clean(cp.Dir), clean(s.At.File), s.At.Line)
		}
	}
}

// print writes the plan to stdout and the files' problems to stderr.
func (p *importPlan) print(stdout, stderr io.Writer) {
	_, _ = stderr.Write(p.diags.Bytes())
	_, _ = stdout.Write(p.lines.Bytes())
	if len(p.vars) > 0 {
		names := make([]string, 0, len(p.vars))
		for n := range p.vars {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintf(stdout, "Set %s in the environment voltmcp serve runs in (the client that starts it): %s.\n",
			plural(len(names), "this variable"), strings.Join(names, ", "))
	}
}

// apply writes the plan's servers, in one atomic update of each file.
func (p *importPlan) apply(ctx context.Context, e *env) error {
	loc := cue.Locations{Home: e.g.home, Project: e.g.project}
	for _, d := range p.dests {
		if len(d.servers) == 0 {
			continue
		}
		err := cue.AddServers(ctx, loc, d.layer, d.servers, &cue.AddOptions{Replace: p.opts.force, AllowLiteralSecrets: p.opts.keepSecrets, TrustStore: filepath.Join(e.g.agentDir, cue.TrustStoreFile)})
		if err != nil {
			return failuref("%w", err)
		}
	}
	return nil
}

// trustHint says, after a write to the project's file of a project that
// is not trusted, that voltmcp loads it once it is.
func (p *importPlan) trustHint(w io.Writer) {
	if p.writesProject() && !p.trusted {
		fmt.Fprintln(w, "voltmcp loads the project's .volt/mcp.json once the project is trusted: run 'voltmcp trust'.")
	}
}

// sameServer reports whether two definitions in voltmcp's dialect
// describe the same server: a stdio server may name its transport or not.
func sameServer(a, b []byte) bool {
	var ma, mb map[string]any
	if json.Unmarshal(a, &ma) != nil || json.Unmarshal(b, &mb) != nil {
		return false
	}
	for _, m := range []map[string]any{ma, mb} {
		if _, ok := m["transport"]; !ok && m["command"] != nil {
			m["transport"] = cue.TransportStdio
		}
	}
	return reflect.DeepEqual(ma, mb)
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// plural returns word for one and its plural otherwise.
func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	switch word {
	case "this variable":
		return "these variables"
	}
	return word + "s"
}

func pronoun(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}
