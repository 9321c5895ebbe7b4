package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/daemon"
	"github.com/voltmcp/voltmcp/engine"
)

// gatewayCommand builds a command that runs one action of the mcp tool,
// so the CLI and an agent see the same results (--json prints exactly
// what the tool returns as structured content).
func gatewayCommand(name, action, summary, usage string, positional []string, extra func(fs *pflag.FlagSet, in *engine.GatewayInput)) *command {
	var asJSON bool
	var in engine.GatewayInput
	c := &command{name: name, summary: summary, usage: usage}
	c.flags = func(fs *pflag.FlagSet) {
		fs.BoolVar(&asJSON, "json", false, "print the structured result as JSON")
		if extra != nil {
			extra(fs, &in)
		}
	}
	c.run = func(ctx context.Context, e *env, args []string) error {
		optional := 0
		for _, p := range positional {
			if strings.HasPrefix(p, "[") {
				optional++
			}
		}
		if len(args) > len(positional) || len(args) < len(positional)-optional {
			return usageErrorf("%s takes %s", name, strings.Join(positional, " "))
		}
		for i, p := range positional[:len(args)] {
			p = strings.Trim(p, "[]")
			switch p {
			case "SERVER":
				in.Server = args[i]
			case "TOOL":
				in.Tool = args[i]
			case "QUERY":
				in.Query = args[i]
			case "URI":
				in.ResourceURI = args[i]
			case "PROMPT":
				in.Prompt = args[i]
			case "ID":
				in.CacheID = args[i]
			}
		}
		in.Action = action
		if in.ArgumentsJSON != "" {
			var obj map[string]any
			if err := json.Unmarshal([]byte(in.ArgumentsJSON), &obj); err != nil || obj == nil {
				if err == nil {
					err = errors.New("null")
				}
				return usageErrorf("--args is not a JSON object, such as '{\"path\":\"README.md\"}': %v", err)
			}
		}
		eng, err := openEngine(ctx, e)
		if err != nil {
			return err
		}
		defer eng.Close()
		// A call refused here still reaches the gateway, which records
		// every call it is given.
		if off := eng.TurnedOff(); off != "" && action != "status" {
			if action == "call" {
				eng.Gateway(ctx, in)
			}
			return failuref("%s", off)
		}
		// A server that is not configured is a usage error, as for every
		// command that takes a SERVER (tools, enable, remove, ...).
		if in.Server != "" {
			if _, err := eng.Server(in.Server); errors.Is(err, engine.ErrUnknownServer) {
				if action == "call" {
					eng.Gateway(ctx, in)
				}
				return usageErrorf("%w", err)
			}
		}
		res := eng.Gateway(ctx, in)
		if action == "status" && in.Server != "" {
			res = withLoggedCalls(e, eng, in.Server, res)
		}
		// The records are written by the time the engine is closed: a
		// command whose records could not be written says so, and fails.
		eng.Close()
		auditFailing := eng.AuditHealth().State == "failing"
		if auditFailing && !strings.Contains(res.Text, "audit log cannot be written") {
			res.Text += "\n[the audit log cannot be written: this call is not audited (voltmcp status says why)]"
		}
		if asJSON {
			if err := writeJSONValue(e.stdout, res.Data); err != nil {
				return failuref("write output: %w", err)
			}
		} else {
			writeHuman(e.stdout, res, in)
		}
		if res.IsError {
			return errFindings
		}
		if auditFailing {
			return failuref("the audit log cannot be written: this command is not audited (voltmcp status says why)")
		}
		return nil
	}
	return c
}

// withLoggedCalls puts a server's recent calls as the audit log records
// them into its status: a one-shot command has made no call of its own,
// and the calls that agents made through voltmcp serve are in the log.
// A log that cannot be read is said on stderr; the status is shown all
// the same.
func withLoggedCalls(e *env, eng *engine.Engine, server string, res engine.GatewayResult) engine.GatewayResult {
	sum, ok := res.Data.(engine.ServerSummary)
	if !ok || res.IsError {
		return res
	}
	calls, err := eng.LoggedRecentCalls(server)
	if err != nil {
		fmt.Fprintf(e.stderr, "voltmcp: recent calls of %s: %s\n", clean(server), clean(err.Error()))
	}
	if calls != nil {
		sum.RecentCalls = calls
	}
	res.Data = sum
	return res
}

// writeHuman prints a result for a person: an action with a renderer
// (humanRenderer) as tables and text drawn from its structured result,
// any other action, and every error, as its text (cliText).
func writeHuman(w io.Writer, res engine.GatewayResult, in engine.GatewayInput) {
	if render := humanRenderer(in.Action); render != nil && !res.IsError {
		if f, err := newFields(res.Data); err == nil {
			render(w, f, in)
			return
		}
	}
	fmt.Fprintln(w, cleanBlock(cliText(res, in)))
}

// cliText is a result's text with its pointers to the rest of an output
// naming the CLI's read-cache command instead of the mcp tool's JSON input
// an agent would send: a cut output's "the rest: mcp({...})" and a page's
// "[more: mcp({...})]". The JSON result (--json) keeps the agent's.
func cliText(res engine.GatewayResult, in engine.GatewayInput) string {
	raw, err := json.Marshal(res.Data)
	if err != nil {
		return res.Text
	}
	var d struct {
		Action     string             `json:"action"`
		Content    string             `json:"content"`
		NextOffset int64              `json:"nextOffset"`
		Cache      *engine.CacheRef   `json:"cache"`
		Media      []engine.MediaItem `json:"media"`
		Encoding   string             `json:"encoding"`
	}
	if json.Unmarshal(raw, &d) != nil {
		return res.Text
	}
	text := cliCommands(res.Text)
	if d.Cache != nil && d.Cache.Read != "" {
		if i := strings.LastIndex(text, d.Cache.Read); i >= 0 {
			cmd := "voltmcp read-cache " + shellQuote(d.Cache.ID)
			if d.Cache.Offset > 0 {
				cmd += fmt.Sprintf(" --offset %d", d.Cache.Offset)
			}
			text = text[:i] + cmd + text[i+len(d.Cache.Read):]
		}
	}
	// An image or audio clip kept for read_cache: its description
	// names the CLI's command too.
	for _, m := range d.Media {
		if m.Cache != nil && m.Cache.Read != "" {
			text = strings.Replace(text, m.Cache.Read, "voltmcp read-cache "+shellQuote(m.Cache.ID), 1)
		}
	}
	if d.Action == "read_cache" && d.NextOffset > 0 && strings.HasPrefix(text, d.Content) {
		more := fmt.Sprintf("voltmcp read-cache %s --offset %d", shellQuote(in.CacheID), d.NextOffset)
		if in.Pattern != "" {
			more += " --pattern " + shellQuote(in.Pattern)
		}
		rest := text[len(d.Content):]
		text = d.Content + "\n[more: " + more + "]"
		if d.Encoding != "" {
			// The page's last line says what it encodes.
			if i := strings.LastIndex(rest, "\n["+d.Encoding+" of "); i >= 0 {
				text += rest[i:]
			}
		}
	}
	return text
}

// agentAction is an mcp tool input in a hint or an error, such as
// {"action":"connect","server":"x"}: what an agent would send.
var agentAction = regexp.MustCompile(`\{"action":"([a-z_]+)"(?:,"server":"([^"\\]*)")?\}`)

// agentWord is a bare action an agent is told of, "or list_servers".
var agentWord = regexp.MustCompile(`\blist_servers\b`)

// cliCommands rewrites the mcp tool inputs that a hint or an error shows
// an agent into the commands a user types, where the CLI has one:
// {"action":"connect","server":"x"} becomes voltmcp connect x, and
// list_servers voltmcp servers. Any other input is left as it is.
func cliCommands(text string) string {
	text = agentAction.ReplaceAllStringFunc(text, func(m string) string {
		sub := agentAction.FindStringSubmatch(m)
		cmd, ok := map[string]string{"connect": "connect", "disconnect": "disconnect", "list_servers": "servers",
			"list_resources": "resources", "list_prompts": "prompts", "status": "status"}[sub[1]]
		if !ok {
			return m
		}
		if sub[2] != "" {
			return "voltmcp " + cmd + " " + shellQuote(sub[2])
		}
		return "voltmcp " + cmd
	})
	return agentWord.ReplaceAllString(text, "voltmcp servers")
}

// shellQuote quotes s for a POSIX shell when it holds anything but
// letters, digits and -_./:=@%+,.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@%+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func gatewayCommands() []*command {
	argsFlag := func(fs *pflag.FlagSet, in *engine.GatewayInput) {
		fs.StringVar(&in.ArgumentsJSON, "args", "", "the arguments as a JSON object")
	}
	cursorFlag := func(fs *pflag.FlagSet, in *engine.GatewayInput) {
		fs.StringVar(&in.Cursor, "cursor", "", "the next page: the nextCursor of the previous one")
	}
	return []*command{
		withStatusLine(gatewayCommand("status", "status", "summarize the gateway, or show one server in full",
			"Usage: voltmcp status [SERVER] [--json]\n\nWhat the mcp tool's status action answers: servers by status, problems,\nconfig notes (a config file that does not parse, with its file:line:col; an\nuntrusted project and the servers it leaves out; a policy file that does\nnot load, with its line), the audit log's health (failing: since when,\nwhy, records lost), and what the bounds dropped or cleaned from each\nserver's metadata. With SERVER, that server in full: status, last error, the tools,\nresources and prompts dropped or cleaned with the reason for each,\npending pin changes, and its recent calls: the last 50 the audit log\nrecords (made by any agent or command), newest first, each with its\ntool, risk, how it ended and why, never its arguments. Printed as aligned\ntext; --json prints what the mcp tool's status action returns, with\nthose recent calls.\n\nExamples:\n  voltmcp status --approve\n  voltmcp status github --json", []string{"[SERVER]"}, nil)),
		gatewayCommand("search", "search", "search the cached tools of every server",
			"Usage: voltmcp search QUERY [--server ID] [--limit N] [--cursor C] [--json]\n\nSearches the tools in the metadata cache (BM25 over names, titles,\ndescriptions, server names and parameter names) without starting any\nserver. Prints a table (server, tool, risk, description); --json prints\nexactly what the mcp tool's search action returns. When more matches follow, the result has a nextCursor: the same search\nwith --cursor set to it prints the next page.\n\nExamples:\n  voltmcp search \"read a file\"\n  voltmcp search issues --server github --json\n  voltmcp search issues --cursor NEXTCURSOR",
			[]string{"QUERY"}, func(fs *pflag.FlagSet, in *engine.GatewayInput) {
				fs.StringVar(&in.Server, "server", "", "search one server only")
				fs.IntVar(&in.Limit, "limit", 0, "how many matches (default 8, at most 20)")
				cursorFlag(fs, in)
			}),
		gatewayCommand("describe", "describe", "show one tool's description, risk, schemas, task support and annotations",
			"Usage: voltmcp describe SERVER TOOL [--json]\n\nWhat the mcp tool's describe action answers: the tool's description,\nrisk, input schema, output schema (when it has one), task support (the\nexecution.taskSupport the server lists), annotations and metadata\nhash, printed as text with the input schema as a table of arguments\n(type, required, description); --json prints the result, schemas as JSON.\nEach schema is at most 16 KiB: a larger one keeps its top levels\nwith the deeper ones summarized, a warning says so, and the whole schemas\nare kept for 'voltmcp read-cache ID' (cache.id).\n\nExample:\n  voltmcp describe filesystem read_text_file", []string{"SERVER", "TOOL"}, nil),
		gatewayCommand("call", "call", "call a tool of a server, as the mcp tool does",
			"Usage: voltmcp call SERVER TOOL [--args JSON] [--json]\n\nStarts the server if needed, calls the tool, and prints the result capped\nlike an agent sees it; a longer output is kept for 'voltmcp read-cache'.\nAn image or audio clip is one description line, never its bytes (the\nagent gets it as MCP content, settings.media); --json lists each in media.\n\nExample:\n  voltmcp call filesystem list_directory --args '{\"path\": \".\"}'",
			[]string{"SERVER", "TOOL"}, argsFlag),
		gatewayCommand("connect", "connect", "connect a server now and cache its tools; prints its status and tool count",
			"Usage: voltmcp connect SERVER [--json]\n\nConnects the server now (starting its process for a stdio server) and lists\nits tools, resources and prompts into the metadata cache. Prints what the\nmcp tool's connect action answers, one line of JSON: the server, its status\nand how many tools it has, and the error when it failed (exit 1):\n\n  {\"action\":\"connect\",\"server\":\"github\",\"status\":\"ready\",\"tools\":12}\n\nThe tools themselves: 'voltmcp status SERVER' or 'voltmcp search QUERY'.\nThe connection ends with the command; 'voltmcp serve' keeps servers\nrunning for an agent.\n\nExample:\n  voltmcp connect github", []string{"SERVER"}, nil),
		gatewayCommand("disconnect", "disconnect", "disconnect a server and stop its process",
			"Usage: voltmcp disconnect SERVER [--json]\n\nEnds a server's connection: a stdio server's process stops, an HTTP\nserver's session closes. The server stays configured and enabled, and\nthe next use connects it again; 'voltmcp disable SERVER' keeps it off.\n--json prints exactly what the mcp tool's disconnect action returns.\n\nExample:\n  voltmcp disconnect github", []string{"SERVER"}, nil),
		gatewayCommand("resources", "list_resources", "list a server's cached resources",
			"Usage: voltmcp resources SERVER [--cursor C] [--json]\n\nLists the resources, then the resource templates, of SERVER's metadata\ncache, 50 items (at most 32 KiB) a page, as tables (URI, name, type, description); when more follow, the\nresult has a nextCursor, which --cursor takes for the next page. --json\nprints exactly what the mcp tool's list_resources action returns.\n\nExample:\n  voltmcp resources everything", []string{"SERVER"}, cursorFlag),
		gatewayCommand("read-resource", "read_resource", "read a resource of a server",
			"Usage: voltmcp read-resource SERVER URI [--json]\n\nReads the resource and prints its text, cut like an agent sees it; a longer\noutput is kept for 'voltmcp read-cache'. An image or audio blob is one\ndescription line, never its bytes (the agent gets it as MCP resource\ncontent, settings.media); --json lists each in media.\n\nExample:\n  voltmcp read-resource everything demo://resource/static/document/features.md", []string{"SERVER", "URI"}, nil),
		gatewayCommand("prompts", "list_prompts", "list a server's cached prompts",
			"Usage: voltmcp prompts SERVER [--cursor C] [--json]\n\nLists the prompts of SERVER's metadata cache, 50 (at most 32 KiB) a page,\nas a table (name, arguments with * for a required one, description);\nwhen more follow, the result has a nextCursor, which --cursor takes for\nthe next page. --json prints exactly what the mcp tool's list_prompts\naction returns.\n\nExample:\n  voltmcp prompts everything", []string{"SERVER"}, cursorFlag),
		gatewayCommand("get-prompt", "get_prompt", "fetch a prompt and show it, for you to preview",
			"Usage: voltmcp get-prompt SERVER PROMPT [--args JSON] [--json]\n\nFetches PROMPT from SERVER (starting it if need be) and prints its\nmessages, one \"role: text\" each, cleaned and cut like every text a\nserver sends. The arguments are a JSON object; a value that is not a\nstring is sent as its JSON text. Under the prompts setting\n\"user-preview\" (the default) you can preview any prompt here, while the\nmodel's get_prompt through voltmcp serve is refused; \"model\" lets the\nmodel fetch prompts too; \"disabled\" refuses both.\n\nExample:\n  voltmcp get-prompt everything args-prompt --args '{\"city\": \"Oslo\"}'", []string{"SERVER", "PROMPT"}, argsFlag),
		gatewayCommand("read-cache", "read_cache", "read a cut output back from the sidecar",
			"Usage: voltmcp read-cache ID [--offset N | --start-line N --end-line M] [--pattern RE] [--json]\n\nPrints a page of an output that was cut (ID is in the footer of the cut\nresult), at most maxOutputBytes. When more follows, the last line is the\ncommand for the next page:\n\n  [more: voltmcp read-cache ID --offset N]\n\n(with --pattern RE when a pattern was given). --json prints what the mcp\ntool's read_cache action returns, the next page's offset in nextOffset.\n\nExample:\n  voltmcp read-cache mcpout_0123456789abcdefghijklmnop --pattern error",
			[]string{"ID"}, func(fs *pflag.FlagSet, in *engine.GatewayInput) {
				fs.Int64Var(&in.Offset, "offset", 0, "byte offset to start at")
				fs.IntVar(&in.StartLine, "start-line", 0, "first line (1-based)")
				fs.IntVar(&in.EndLine, "end-line", 0, "last line")
				fs.StringVar(&in.Pattern, "pattern", "", "only lines matching this regexp")
			}),
	}
}

func serveCommand() *command {
	var addr, tokenFile, socket, daemonFlag string
	var noDaemon, noWatch bool
	var fset *pflag.FlagSet
	c := &command{
		name:    "serve",
		summary: "run the MCP gateway for an agent (stdio, or Streamable HTTP on loopback)",
		usage: `Usage: voltmcp serve [--http 127.0.0.1:PORT | --socket PATH] [--token-file PATH] [--no-watch]
       voltmcp serve --daemon=auto|on [--project DIR]

Serves one MCP tool, "mcp", through which an agent searches, describes and
calls the tools of every configured server. Over stdio by default (what
Claude Code, Cursor and VS Code start). Eager and keep-alive servers start
in the background; startup never waits for them. Servers with no cached
tools are listed once in the background too (four at a time; lazy ones are
stopped again after), so the agent's first search finds their tools: a
search waits up to 2 s for those listings and says which servers are still
being listed; a call or describe waits for its server's. settings
listAtStart: false turns this off (voltmcp refresh lists from the CLI).
Direct tools (settings directTools) of servers listed after the start
are added as their listings end, with notifications/tools/list_changed.

With --http, over Streamable HTTP on a loopback address, to the holder of a
bearer token only: another user of the machine can reach a loopback port
too. The token is made at the first start (32 random bytes, base64url) in
a file only you can read, <agent-dir>/http/token or --token-file PATH, and
the same file is used again at each start, so a client's config stays
valid; delete the file to make a new token. serve prints the file's path,
never the token. A client sends it in a header on every request:

  Authorization: Bearer <the token>

Claude Code:  claude mcp add --transport http voltmcp http://127.0.0.1:8931/ \
                --header "Authorization: Bearer $(cat ~/.volt/agent/http/token)"
Cursor (.cursor/mcp.json), VS Code (.vscode/mcp.json, "servers" with
"type": "http"):  "url": "http://127.0.0.1:8931/",
                  "headers": {"Authorization": "Bearer <the token>"}

With --socket PATH, the same over a unix socket (mode 0600, in a directory
only you can enter; on Linux each connection's peer must run as you), for
clients that can dial one (curl --unix-socket PATH http://localhost/); the
token is required there too.

Requests without the token get a 401; those with a Host that is not a
loopback name (DNS rebinding) or an Origin that is not a loopback origin
(a web page) get a 403.

A call that needs a login to an OAuth server offers the authorization URL
to the agent's client by a URL-mode elicitation when the client supports it
(MCP 2025-11-25): serve listens on http://127.0.0.1:<port>/callback as
'voltmcp auth' does, and the call goes on once the browser comes back
(within the authTimeoutMs setting, 5 minutes). A decline, a cancel or the
timeout leaves the server needs_auth, and the answer says why; a client
without URL mode is offered nothing, and the answer says to run
'voltmcp auth SERVER'.

Changes to the config apply while serve runs, within a second of the last
edit: the four config files (one created later too), the trust store,
the policy files and directories, and the plugin modules settings.plugins
names. An added server appears, a removed one stops with its processes, a
changed one restarts, and the others keep serving, their calls in flight
included. An edit that does not validate is not applied: the last good
config keeps running, and stderr names the file, line and field. An edit
to a trusted project's files takes the project's trust away until
'voltmcp trust' again. --no-watch turns this off.

serve refuses to run under a voltmcp gateway (VOLTMCP_RUN, the run mark
the gateway gives every server it starts, is set): a config entry that
starts the gateway as one of its own servers would start it again and
again. Over HTTP, every answer carries the header Voltmcp-Instance, a
random id of this serve, and a configured HTTP server that answers with
it (an .mcp.json entry whose url reaches this serve --http, whatever its
spelling: 127.0.0.1, localhost, [::1]) is refused as "server X is this
gateway itself".

With --daemon=auto or --daemon=on, serve attaches to the user's daemon
('voltmcp daemon', docs/daemon.md) instead of running a gateway of its
own: it serves the same mcp tool over stdio and forwards each call to the
daemon's engine of the --project workspace, which runs it (policy, pins,
audit: one record per call, written by the daemon) with the upstream
processes, OAuth sessions and caches every attached session shares.
auto starts a daemon in the background when none runs (its log:
<agent-dir>/daemon/daemon.log); on fails, saying how to start one. When
the daemon dies, the calls in flight fail with "the voltmcp daemon went
away", and the next call attaches again (auto: to a new daemon).
--no-daemon (the default) runs the standalone gateway.

Examples:
  voltmcp serve
  voltmcp serve --daemon=auto
  voltmcp serve --http 127.0.0.1:8931
  voltmcp serve --http 127.0.0.1:8931 --token-file ~/.config/voltmcp/http.token`,
		flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&addr, "http", "", "serve Streamable HTTP on this loopback address instead of stdio")
			fs.StringVar(&tokenFile, "token-file", "", "with --http or --socket, the file of the bearer token clients must send (default <agent-dir>/http/token)")
			fs.StringVar(&socket, "socket", "", "serve Streamable HTTP on a unix socket at this path (0600, in a directory only you can enter) instead of stdio")
			fs.BoolVar(&noWatch, "no-watch", false, "do not apply changes to the config files, policies and plugins while serving")
			fs.StringVar(&daemonFlag, "daemon", "", "attach to the user's daemon: auto (start one when none runs), on (attach or fail) or off")
			fs.BoolVar(&noDaemon, "no-daemon", false, "run a standalone gateway in this process (the default)")
			fset = fs
		},
	}
	c.run = func(ctx context.Context, e *env, args []string) error {
		if len(args) > 0 {
			return usageErrorf("serve takes no arguments")
		}
		if mark := engine.UnderGateway(e.getenv); mark != "" {
			return failuref("not serving: this process was started by a voltmcp gateway, as one of its servers or by one (%s is set), and a gateway behind itself would start its servers again, itself among them; remove the entry that runs voltmcp serve from that gateway's config (voltmcp servers shows each entry's file)", engine.RunEnv)
		}
		mode, err := parseDaemonMode(daemonFlag, fset != nil && fset.Changed("daemon"), noDaemon)
		if err != nil {
			return usageErrorf("%v", err)
		}
		if mode != daemonOff {
			if addr != "" || socket != "" {
				return usageErrorf("--daemon=%s serves stdio: give --http or --socket to a standalone serve (--no-daemon)", mode)
			}
			if e.g.approve || e.g.noApprove {
				return usageErrorf("--approve and --no-approve do not go with --daemon: the daemon keeps each project's trust ('voltmcp trust')")
			}
			return serveAttached(ctx, e, mode)
		}
		var token string
		switch {
		case addr != "" && socket != "":
			return usageErrorf("give --http or --socket, not both")
		case addr != "" || socket != "":
			if addr != "" {
				if err := checkLoopback(addr); err != nil {
					return usageErrorf("%v", err)
				}
			}
			if tokenFile == "" {
				tokenFile = defaultTokenFile(e.g.agentDir)
			}
			if token, _, err = loadOrCreateToken(tokenFile); err != nil {
				return failuref("%w", err)
			}
		case tokenFile != "":
			return usageErrorf("--token-file goes with --http or --socket")
		}
		// The engine's warnings and errors (an audit log that cannot be
		// written, once when it starts failing and once when it is
		// written again; a plugin fault; a policy that failed to load) go
		// to stderr, which an agent keeps as the server's log.
		stderr := &lockedWriter{w: e.stderr}
		e.stderr = stderr
		// A login a call needs is offered to the agent's client when it
		// supports URL-mode elicitation (agentauth.go).
		login := &agentAuth{}
		opts := e.engineOptions(cue.SurfaceServe, slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})), token)
		opts.Authorize, opts.CanAuthorize = login.authorize, engine.CanOfferURL
		eng, err := engine.New(ctx, &opts)
		if err != nil {
			return failuref("%w", err)
		}
		defer eng.Close()
		login.eng = eng
		// What loading left behind goes back to the system once idle.
		idleCtx, stopIdle := context.WithCancel(ctx)
		defer stopIdle()
		go releaseIdleMemory(idleCtx, idleCheckEvery, idleAllocs, releaseAfterAllocs, nil)
		if !noWatch {
			// Config changes apply while serving (engine.Engine.Watch);
			// the watch ends before the engine closes.
			wctx, stopWatch := context.WithCancel(ctx)
			watched := make(chan struct{})
			go func() {
				defer close(watched)
				if err := eng.Watch(wctx, nil); err != nil {
					fmt.Fprintf(e.stderr, "voltmcp serve: %v\n", err)
				}
			}()
			defer func() { stopWatch(); <-watched }()
		}
		for _, d := range eng.Diagnostics() {
			if d.Severity != cue.SeverityInfo {
				fmt.Fprintln(e.stderr, d)
			}
		}
		if off := eng.TurnedOff(); off != "" {
			// It still serves, with no tool, so the agent sees why in
			// the instructions rather than a server that failed.
			fmt.Fprintf(e.stderr, "voltmcp serve: %s\n", clean(off))
		}
		if addr == "" && socket == "" {
			// Servers never listed are listed once in the background,
			// so that the agent's first search finds their tools
			// (settings listAtStart).
			eng.ListUnlisted(ctx)
			// ServeStdio reads and writes the agent's pipes through the
			// poller.
			err = eng.ServeStdio(ctx, readCloser(e.stdin), writeCloser(e.stdout))
			if err != nil && ctx.Err() == nil && err != io.EOF {
				return failuref("serve: %w", err)
			}
			return nil
		}
		return serveHTTP(ctx, e, eng, addr, socket, token, tokenFile)
	}
	return c
}

// engineOptions are the options of an engine as this invocation's global
// flags and environment give them, for surface, logging to log, with
// token (the bearer token this process serves with, or "") among the
// gateway's own tokens. serve, rpc and the daemon's workspaces all build
// their engines from it; each adds what is its own (Authorize, ...).
func (e *env) engineOptions(surface cue.Surface, log *slog.Logger, token string) engine.Options {
	return engine.Options{
		Home: e.g.home, Project: e.g.project, AgentDir: e.g.agentDir, PolicyDirs: e.g.policies, PluginCacheDir: e.g.pluginCache,
		Surface: surface, Approve: e.g.approve, NoApprove: e.g.noApprove,
		LookupEnv: os.LookupEnv, Logger: log,
		GatewayTokens: gatewayTokens(e.g.agentDir, token),
	}
}

// checkLoopback refuses to serve on anything but a loopback address:
// the gateway runs the user's servers with the user's credentials.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--http %q: want HOST:PORT, e.g. 127.0.0.1:8931", addr)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("--http %q: serving on a non-loopback address would expose every configured server to the network; use 127.0.0.1 or ::1", addr)
	}
	return nil
}

func serveHTTP(ctx context.Context, e *env, eng *engine.Engine, addr, socket, token, tokenFile string) error {
	var ln net.Listener
	var err error
	if socket != "" {
		if ln, err = daemon.ListenSocket(socket); err != nil {
			return failuref("--%w", err)
		}
		defer os.Remove(socket)
	} else if ln, err = net.Listen("tcp", addr); err != nil {
		return failuref("listen: %w", err)
	}
	// Listed once the listener is up: an entry that reaches this serve
	// is then refused as the gateway itself, not as a refused connection.
	eng.ListUnlisted(ctx)
	srv := &http.Server{Handler: eng.HTTPHandler(token), ReadHeaderTimeout: 10 * time.Second}
	if socket != "" {
		fmt.Fprintf(e.stderr, "voltmcp: serving MCP on unix socket %s, as http://localhost/ (Ctrl-C to stop)\n", socket)
	} else {
		fmt.Fprintf(e.stderr, "voltmcp: serving MCP on http://%s/ (Ctrl-C to stop)\n", ln.Addr())
	}
	fmt.Fprintf(e.stderr, "voltmcp: clients must send \"Authorization: Bearer <token>\" with the token in %s\n", tokenFile)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
		return nil
	case err := <-errc:
		return failuref("serve: %w", err)
	}
}

// lockedWriter serializes writes to w: serve's stderr is written by the
// engine's logger and by serve itself.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// readCloser is os.Stdin as it is, an *os.File, which ServeStdio reads
// through the poller and closes, and any other reader with a Close that
// does nothing.
func readCloser(r io.Reader) io.ReadCloser {
	if f, ok := r.(*os.File); ok {
		return f
	}
	return io.NopCloser(r)
}

// writeCloser is readCloser for a writer.
func writeCloser(w io.Writer) io.WriteCloser {
	if f, ok := w.(*os.File); ok {
		return f
	}
	return nopWriteCloser{w}
}

// nopWriteCloser is a writer whose Close does nothing.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
