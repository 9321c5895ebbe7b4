package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/pflag"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/engine"
)

// Exit codes. They are part of the CLI's contract: scripts and CI depend
// on them.
const (
	exitOK       = 0 // success
	exitFindings = 1 // the command ran and found problems (vet errors)
	exitUsage    = 2 // bad flags or arguments
	exitFailure  = 3 // the command could not do its job
)

// exitError carries an exit code through a command's error return.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return &exitError{exitUsage, fmt.Errorf(format, args...)}
}

func failuref(format string, args ...any) error {
	return &exitError{exitFailure, fmt.Errorf(format, args...)}
}

// findings is returned by a command that ran and reports problems it
// already printed.
var errFindings = &exitError{exitFindings, errors.New("findings reported")}

// env is what a command may touch of the process: its streams and its
// environment. Tests supply their own.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	g              globals
}

// globals are the flags every command shares.
type globals struct {
	home      string
	project   string
	agentDir  string
	approve   bool
	noApprove bool
	policies  []string
	// pluginCache is wazero's compilation cache: the engine's
	// DefaultPluginCacheDir of home and the environment.
	pluginCache string
}

func (g *globals) register(fs *pflag.FlagSet) {
	fs.StringVar(&g.home, "home", g.home, "root of the user config layers (default $VOLTMCP_HOME, else $HOME)")
	fs.StringVar(&g.project, "project", g.project, "root of the project config layers (default the working directory)")
	fs.StringVar(&g.agentDir, "agent-dir", g.agentDir, "state directory (default <home>/.volt/agent)")
	fs.BoolVar(&g.approve, "approve", g.approve, "trust the project's MCP config for this run")
	fs.BoolVar(&g.noApprove, "no-approve", g.noApprove, "ignore the project's MCP config")
	fs.StringArrayVar(&g.policies, "policy", g.policies, "add a Rego file or directory to the policy bundle as a user policy (repeatable)")
}

// resolve fills defaults for the global flags and checks them.
func (g *globals) resolve(getenv func(string) string) error {
	if g.approve && g.noApprove {
		return usageErrorf("--approve and --no-approve contradict each other")
	}
	if g.home == "" {
		g.home = getenv("VOLTMCP_HOME")
	}
	if g.home == "" {
		g.home = getenv("HOME")
	}
	if g.home == "" {
		return usageErrorf("cannot find the home directory: set --home or $HOME")
	}
	if g.project == "" {
		g.project = "."
	}
	if g.agentDir == "" {
		g.agentDir = filepath.Join(g.home, ".volt", "agent")
	}
	g.pluginCache = engine.DefaultPluginCacheDir(g.home, func(k string) (string, bool) {
		v := getenv(k)
		return v, v != ""
	})
	for i, p := range g.policies {
		if abs, err := filepath.Abs(p); err == nil {
			g.policies[i] = abs
		}
	}
	return nil
}

// command is one subcommand.
type command struct {
	name    string
	summary string
	// usage is the synopsis, description and at least one example.
	usage string
	// flags registers the command's own flags.
	flags func(fs *pflag.FlagSet)
	run   func(ctx context.Context, e *env, args []string) error
	// hidden keeps the command out of the usage and the completions: it
	// serves the completion scripts (__complete).
	hidden bool
	// choices are the words the first argument may be, for the
	// completion scripts (completion's shells); nil when it is free.
	choices []string
}

func commands() []*command {
	return append([]*command{vetCommand(), configCommand(), schemaCommand(), versionCommand(),
		serversCommand(), listCommand(), trustCommand(), untrustCommand(), refreshCommand(), enableCommand(), disableCommand(), serveCommand(), demoCommand(), auditCommand(), pluginCommand(), policyCommand(), pinsCommand(), approveCommand(),
		importCommand(), addCommand(), removeCommand(), setupCommand(), logsCommand(),

		toolsCommand(), doctorCommand(), completionCommand(), completeCommand(), authCommand(), logoutCommand(), rpcCommand(), daemonCommand(), eventsCommand(), uiCommand()},
		gatewayCommands()...)
}

const globalUsage = `voltmcp is an MCP gateway: one MCP server in front of all of yours.

Usage:
  voltmcp [global flags] <command> [flags] [args]
  voltmcp --version   (what 'voltmcp version' prints)

Commands:
%s
Global flags (accepted before or after the command):
%s
Exit codes: 0 ok, 1 findings (vet found errors), 2 usage, 3 failure.
Run 'voltmcp <command> --help' for a command's flags and examples.
`

func printUsage(w io.Writer) {
	var b strings.Builder
	cmds := slices.DeleteFunc(commands(), func(c *command) bool { return c.hidden })
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].name < cmds[j].name })
	width := 0
	for _, c := range cmds {
		width = max(width, len(c.name))
	}
	for _, c := range cmds {
		fmt.Fprintf(&b, "  %-*s %s\n", width, c.name, c.summary)
	}
	fs := pflag.NewFlagSet("voltmcp", pflag.ContinueOnError)
	new(globals).register(fs)
	fmt.Fprintf(w, globalUsage, b.String(), fs.FlagUsages())
}

// run is the whole CLI: it parses args, runs one command and returns the
// exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv}
	top := pflag.NewFlagSet("voltmcp", pflag.ContinueOnError)
	top.SetOutput(io.Discard)
	top.SetInterspersed(false)
	e.g.register(top)
	help := top.BoolP("help", "h", false, "show help")
	version := top.Bool("version", false, "print the version, as the version command does")
	if err := top.Parse(args); err != nil {
		fmt.Fprintf(stderr, "voltmcp: %v\n\n", err)
		printUsage(stderr)
		return exitUsage
	}
	rest := top.Args()
	if *version && !*help {
		if len(rest) > 0 {
			fmt.Fprintf(stderr, "voltmcp: --version takes no command (voltmcp version prints the same)\n")
			return exitUsage
		}
		return report(stderr, "version", versionCommand().run(ctx, e, nil))
	}
	if *help || len(rest) == 0 {
		if len(rest) == 0 && !*help {
			printUsage(stderr)
			return exitUsage
		}
		printUsage(stdout)
		return exitOK
	}
	name := rest[0]
	if name == "help" {
		if len(rest) > 1 && !strings.HasPrefix(rest[1], "-") {
			name, rest = rest[1], []string{rest[1], "--help"}
		} else {
			printUsage(stdout)
			return exitOK
		}
	}
	var cmd *command
	var names []string
	for _, c := range commands() {
		if !c.hidden {
			names = append(names, c.name)
		}
		if c.name == name {
			cmd = c
		}
	}
	if cmd == nil {
		fmt.Fprintf(stderr, "voltmcp: unknown command %q%s\nRun 'voltmcp --help' for the list.\n", name, suggest(name, names))
		return exitUsage
	}
	fs := pflag.NewFlagSet("voltmcp "+cmd.name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	e.g.register(fs)
	if cmd.flags != nil {
		cmd.flags(fs)
	}
	cmdHelp := fs.BoolP("help", "h", false, "show help")
	if err := fs.Parse(rest[1:]); err != nil {
		fmt.Fprintf(stderr, "voltmcp %s: %v\n\n", cmd.name, err)
		printCommandUsage(stderr, cmd, fs)
		return exitUsage
	}
	if *cmdHelp {
		printCommandUsage(stdout, cmd, fs)
		return exitOK
	}
	if err := e.g.resolve(getenv); err != nil {
		return report(stderr, cmd.name, err)
	}
	return report(stderr, cmd.name, cmd.run(ctx, e, fs.Args()))
}

func printCommandUsage(w io.Writer, cmd *command, fs *pflag.FlagSet) {
	fmt.Fprintf(w, "%s\n\nFlags:\n%s", strings.TrimSpace(cmd.usage), fs.FlagUsages())
}

// report prints a command's error and maps it to an exit code.
func report(stderr io.Writer, name string, err error) int {
	if err == nil {
		return exitOK
	}
	if errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "voltmcp %s: interrupted\n", name)
		return exitFailure
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee != errFindings {
			fmt.Fprintf(stderr, "voltmcp %s: %s\n", name, clean(fmt.Sprint(ee.err)))
		}
		return ee.code
	}
	fmt.Fprintf(stderr, "voltmcp %s: %s\n", name, clean(err.Error()))
	return exitFailure
}

// suggest returns " (did you mean X?)" for a near miss among names.
func suggest(s string, names []string) string {
	if best := cue.Closest(s, names); best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return ""
}
