package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/spf13/pflag"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/engine"
)

// modulePath is the module the demo must run from a checkout of.
const modulePath = "github.com/voltmcp/voltmcp"

// How much of an answer the demo prints: an agent gets all of it.
const (
	demoAnswerLines = 20
	demoLineWidth   = 160
	demoOneLine     = 120 // longest JSON object or array put on one line
	demoTextWidth   = 80  // narration
)

func demoCommand() *command {
	var keep bool
	c := &command{
		name:    "demo",
		summary: "run three example MCP servers behind the gateway and show what an agent sees",
		usage: `Usage: voltmcp demo [--keep]

Runs offline from a checkout of voltmcp, with only Go installed. It builds
the example servers of examples/servers (notes, clock and files), writes a
temporary home and project whose config defines them, and then goes through
what an agent connected to 'voltmcp serve' would do with its one tool, mcp:
list the servers, connect them, search for a tool, describe it, call it,
call a tool whose output is too large to show (the gateway keeps the rest
and returns a cacheId), read that output back with a pattern, and ask for
the status. Each step prints the exact mcp(...) input and the answer.

The demo never reads or writes your own home or config: the global flags
--home, --project and --agent-dir are ignored. The temporary workspace is
removed at the end, unless --keep is given.

Examples:
  go run ./cmd/voltmcp demo
  voltmcp demo --keep`,
		flags: func(fs *pflag.FlagSet) {
			fs.BoolVar(&keep, "keep", false, "keep the temporary workspace (servers, config, cache) and print its path")
		},
	}
	c.run = func(ctx context.Context, e *env, args []string) error {
		if len(args) > 0 {
			return usageErrorf("demo takes no arguments")
		}
		return runDemo(ctx, e, keep)
	}
	return c
}

// demo is one run of the demo: where it works and where it writes.
type demo struct {
	w    *stickyWriter
	eng  *engine.Engine
	step int
}

// stickyWriter remembers the first write error, so that the demo stops
// (and cleans up) when its reader is gone.
type stickyWriter struct {
	w   io.Writer
	err error
}

func (s *stickyWriter) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.w.Write(p)
	s.err = err
	return n, err
}

func runDemo(ctx context.Context, e *env, keep bool) (err error) {
	wd, err := os.Getwd()
	if err != nil {
		return failuref("%w", err)
	}
	root, err := findModuleRoot(wd)
	if err != nil {
		return failuref("%w", err)
	}
	tmp, err := os.MkdirTemp("", "voltmcp-demo-")
	if err != nil {
		return failuref("make the demo's workspace: %w", err)
	}
	// A reader that goes away ('voltmcp demo | head') makes writes fail
	// instead of killing the process, so the workspace is still removed.
	sigpipe := make(chan os.Signal, 1)
	signal.Notify(sigpipe, syscall.SIGPIPE)
	defer signal.Stop(sigpipe)
	w := &stickyWriter{w: e.stdout}
	defer func() {
		if keep {
			fmt.Fprintf(w, "\nKept the workspace %s:\nbin/ holds the servers, project/.volt/mcp.json the config, agent/ the metadata cache\nand the stored outputs. Look around with\n\n    voltmcp servers --home %s --project %s --agent-dir %s --approve\n\nand remove it when you are done.\n",
				tmp, filepath.Join(tmp, "home"), filepath.Join(tmp, "project"), filepath.Join(tmp, "agent"))
			return
		}
		if rmErr := os.RemoveAll(tmp); rmErr != nil && err == nil {
			err = failuref("remove the demo's workspace: %w", rmErr)
		}
	}()

	fmt.Fprintf(w, "voltmcp demo: three small MCP servers behind one gateway tool, offline.\n\n")
	fmt.Fprintf(w, "Building the example servers (go build ./examples/servers/...)...\n")
	bin := filepath.Join(tmp, "bin")
	if err := buildServers(ctx, root, bin); err != nil {
		return err
	}
	home, project, agent := filepath.Join(tmp, "home"), filepath.Join(tmp, "project"), filepath.Join(tmp, "agent")
	if err := writeDemoConfig(root, bin, home, project); err != nil {
		return failuref("write the demo's config: %w", err)
	}
	fmt.Fprintf(w, "Workspace: %s, a temporary home, project and state directory\n(removed at the end; --keep keeps it). Its project config defines three servers:\nnotes, clock, and files (a read-only view of examples/).\n", tmp)

	eng, err := engine.New(ctx, &engine.Options{
		Home: home, Project: project, AgentDir: agent, Approve: true, Surface: cue.SurfaceInteractive,
		// The demo's own home holds the cache, as it holds the rest.
		PluginCacheDir: engine.DefaultPluginCacheDir(home, nil),
		LookupEnv: func(k string) (string, bool) {
			v := e.getenv(k)
			return v, v != ""
		},
	})
	if err != nil {
		return failuref("%w", err)
	}
	defer eng.Close()
	for _, d := range eng.Diagnostics() {
		if d.Severity == cue.SeverityError {
			return failuref("the demo's config does not load: %v", d)
		}
	}

	d := &demo{w: w, eng: eng}
	fmt.Fprintf(w, "\n%s\n", wrap("An agent connected to `voltmcp serve` sees one tool, mcp. Here is what it would send, "+
		"and what it would read back (JSON answers are laid out here for reading; the agent gets them compact).", demoTextWidth))
	return d.run(ctx)
}

// run goes through the steps an agent would take.
func (d *demo) run(ctx context.Context) error {
	d.heading("list_servers: what is configured",
		"Nothing has started yet: each server is cold, and with an empty cache no tools are known.")
	if _, err := d.ask(ctx, engine.GatewayInput{Action: "list_servers"}); err != nil {
		return err
	}

	d.heading("connect: start each server and list its tools",
		"The gateway starts the server's process, lists its tools, resources and prompts, and caches them. (Without this step, a call would start its server on first use.)")
	for _, id := range []string{"notes", "clock", "files"} {
		if _, err := d.ask(ctx, engine.GatewayInput{Action: "connect", Server: id}); err != nil {
			return err
		}
	}

	const query = "find notes about the launch"
	d.heading("search: find a tool for the job",
		"The agent's prompt does not carry every server's tools: it searches them, across all servers, best match first.")
	res, err := d.ask(ctx, engine.GatewayInput{Action: "search", Query: query})
	if err != nil {
		return err
	}
	top, ok := topMatch(res.Data)
	if !ok {
		return failuref("search %q found nothing", query)
	}

	d.heading("describe: read the top match's schema",
		fmt.Sprintf("The top match is %s.%s. describe returns its full input schema and annotations: the agent reads them only for the tool it is about to call.", top.Server, top.Tool))
	if _, err := d.ask(ctx, engine.GatewayInput{Action: "describe", Server: top.Server, Tool: top.Tool}); err != nil {
		return err
	}

	if top.Server != "notes" || top.Tool != "search_notes" {
		fmt.Fprintf(d.w, "\n(The demo knows the arguments of notes.search_notes only, so it calls that.)\n")
	}
	d.heading("call: use it",
		"The call goes through the gateway to the notes server, and the server's answer comes back.")
	if _, err := d.ask(ctx, engine.GatewayInput{Action: "call", Server: "notes", Tool: "search_notes", Arguments: map[string]any{"query": "launch"}}); err != nil {
		return err
	}

	d.heading("call: a tool with a large output",
		"export_notes returns about 200 KB. The model is shown the first part only (maxOutputBytes, 50 KiB by default, and maxOutputLines); the gateway keeps the whole output in its sidecar store and says how to read the rest.")
	res, err = d.ask(ctx, engine.GatewayInput{Action: "call", Server: "notes", Tool: "export_notes", Arguments: map[string]any{"format": "markdown"}})
	if err != nil {
		return err
	}
	call, _ := res.Data.(engine.CallResult)
	if call.Cache == nil {
		return failuref("export_notes came back without a cacheId: its output was not cut")
	}

	d.heading("read_cache: search the rest",
		"With a pattern, read_cache returns only the matching lines of the stored output, with their line numbers: here, the heading of each note. An offset or a line range pages through it instead.")
	if _, err := d.ask(ctx, engine.GatewayInput{Action: "read_cache", CacheID: call.Cache.ID, Pattern: "^## n[0-9]+:"}); err != nil {
		return err
	}

	d.heading("status: how the gateway is doing",
		"Three servers, all ready, none in error. A server left idle goes back to cold on its own and starts again when next used.")
	if _, err := d.ask(ctx, engine.GatewayInput{Action: "status"}); err != nil {
		return err
	}

	fmt.Fprintf(d.w, `
━━ Use it with your own agent ━━

Install voltmcp, put your MCP servers in its config (or keep the .mcp.json
files you have: voltmcp reads them), and add it to Claude Code:

    go install ./cmd/voltmcp
    claude mcp add voltmcp -- voltmcp serve

README.md has the rest: the config files, the CLI, and 'voltmcp vet' in CI.
`)
	return nil
}

// heading starts a step.
func (d *demo) heading(title, text string) {
	d.step++
	fmt.Fprintf(d.w, "\n━━ %d. %s ━━\n%s\n", d.step, title, wrap(text, demoTextWidth))
}

// wrap breaks text into lines of at most width bytes, between words.
func wrap(text string, width int) string {
	var b strings.Builder
	n := 0
	for _, word := range strings.Fields(text) {
		if n > 0 && n+1+len(word) > width {
			b.WriteByte('\n')
			n = 0
		} else if n > 0 {
			b.WriteByte(' ')
			n++
		}
		b.WriteString(word)
		n += len(word)
	}
	return b.String()
}

// ask sends one input to the gateway as the agent would, prints it and
// the answer, and fails on an error answer.
func (d *demo) ask(ctx context.Context, in engine.GatewayInput) (engine.GatewayResult, error) {
	var raw bytes.Buffer
	enc := json.NewEncoder(&raw)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(in); err != nil {
		return engine.GatewayResult{}, failuref("%w", err)
	}
	input := bytes.TrimSpace(raw.Bytes())
	fmt.Fprintf(d.w, "\n  mcp(%s)\n\n", input)
	res := d.eng.Gateway(ctx, in)
	printAnswer(d.w, res.Text)
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if d.w.err != nil {
		return res, failuref("write the output: %w", d.w.err)
	}
	if res.IsError {
		return res, failuref("the gateway answered mcp(%s) with an error: %s", input, firstLine(res.Text))
	}
	return res, nil
}

// printAnswer prints an answer indented: a JSON answer indented for
// reading, at most demoAnswerLines lines (the first and the last ones,
// with a note on what is left out) of at most demoLineWidth characters.
func printAnswer(w io.Writer, text string) {
	text = strings.TrimRight(text, "\n")
	if json.Valid([]byte(text)) {
		var b strings.Builder
		layoutJSON(&b, []byte(text), "")
		text = b.String()
	}
	lines := strings.Split(text, "\n")
	const tail = 4
	clipped := false
	for i := 0; i < len(lines); i++ {
		if len(lines) > demoAnswerLines && i == demoAnswerLines-tail {
			left := len(lines) - demoAnswerLines
			fmt.Fprintf(w, "    [… %d lines not shown here; the agent gets them all]\n", left)
			i += left
		}
		l := lines[i]
		if utf8.RuneCountInString(l) > demoLineWidth {
			l = string([]rune(l)[:demoLineWidth]) + "…"
			clipped = true
		}
		if l == "" {
			fmt.Fprintln(w)
			continue
		}
		fmt.Fprintf(w, "    %s\n", l)
	}
	if clipped {
		fmt.Fprintf(w, "    [long lines cut here at %d characters; the agent gets them whole]\n", demoLineWidth)
	}
}

// layoutJSON writes a JSON value for reading: on one line when that
// line is short, else one member or element a line, indented, keys in the
// order they came.
func layoutJSON(b *strings.Builder, raw []byte, indent string) {
	var compact bytes.Buffer
	if json.Compact(&compact, raw) != nil {
		b.Write(raw)
		return
	}
	if len(indent)+compact.Len() <= demoOneLine {
		b.Write(compact.Bytes())
		return
	}
	dec := json.NewDecoder(bytes.NewReader(compact.Bytes()))
	open, _ := dec.Token()
	delim, ok := open.(json.Delim)
	if !ok { // a long string or number
		b.Write(compact.Bytes())
		return
	}
	inner := indent + "  "
	b.WriteString(string(delim) + "\n")
	for first := true; dec.More(); first = false {
		if !first {
			b.WriteString(",\n")
		}
		b.WriteString(inner)
		if delim == '{' {
			key, _ := dec.Token()
			k, _ := json.Marshal(key)
			b.Write(k)
			b.WriteString(": ")
		}
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return
		}
		layoutJSON(b, v, inner)
	}
	if delim == '{' {
		b.WriteString("\n" + indent + "}")
	} else {
		b.WriteString("\n" + indent + "]")
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// topMatch returns the first match of a search answer.
func topMatch(data any) (engine.SearchMatch, bool) {
	m, _ := data.(map[string]any)
	matches, _ := m["matches"].([]engine.SearchMatch)
	if len(matches) == 0 {
		return engine.SearchMatch{}, false
	}
	return matches[0], true
}

// findModuleRoot walks up from dir to the directory whose go.mod declares
// voltmcp's module.
func findModuleRoot(dir string) (string, error) {
	for {
		if mod, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && moduleOf(mod) == modulePath {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("the demo runs from a checkout of " + modulePath +
				" (it builds the example servers from its source): clone it, cd into it and run 'go run ./cmd/voltmcp demo'")
		}
		dir = parent
	}
}

// moduleOf returns the module path a go.mod declares.
func moduleOf(mod []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(mod))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if rest, ok := strings.CutPrefix(line, "module"); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
			rest, _, _ = strings.Cut(rest, "//")
			rest = strings.TrimSpace(rest)
			if s, err := strconv.Unquote(rest); err == nil {
				return s
			}
			return rest
		}
	}
	return ""
}

// buildServers builds the example servers into bin with the go command.
func buildServers(ctx context.Context, root, bin string) error {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		goCmd = filepath.Join(runtime.GOROOT(), "bin", "go")
		if runtime.GOOS == "windows" {
			goCmd += ".exe"
		}
		if _, statErr := os.Stat(goCmd); runtime.GOROOT() == "" || statErr != nil {
			return failuref("the demo builds the example servers with the go command, which is not on PATH")
		}
	}
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return failuref("%w", err)
	}
	cmd := exec.CommandContext(ctx, goCmd, "build", "-o", bin+string(filepath.Separator), "./examples/servers/...")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		return failuref("go build ./examples/servers/...: %v\n%s", err, bytes.TrimSpace(out))
	}
	return nil
}

// writeDemoConfig writes an empty home and a project whose .volt/mcp.json
// defines the three example servers built into bin.
func writeDemoConfig(root, bin, home, project string) error {
	exe := func(name string) string {
		if runtime.GOOS == "windows" {
			name += ".exe"
		}
		return filepath.Join(bin, name)
	}
	cfg := map[string]any{
		"version": 1,
		"servers": map[string]any{
			"notes": map[string]any{"title": "Team notes", "command": exe("notes")},
			"clock": map[string]any{"title": "Clock", "command": exe("clock")},
			"files": map[string]any{"title": "Example files (read-only)", "command": exe("files"), "args": []string{filepath.Join(root, "examples")}},
		},
	}
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	for _, dir := range []string{home, filepath.Join(project, ".volt")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(project, ".volt", "mcp.json"), append(data, '\n'), 0o644)
}
