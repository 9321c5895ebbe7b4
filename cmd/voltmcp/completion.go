package main

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/voltmcp/voltmcp/cue"
)

// The completion scripts are generated from the command table
// (commands()) and each command's flag set, so that they cannot drift
// from the CLI: a command, a flag or a subcommand added there is
// completed without touching this file. Server names come from the
// hidden __complete command at completion time.

// complFlag is one flag as a completion script offers it.
type complFlag struct {
	name, short, usage string
	value              bool // takes a value (not a boolean)
	server             bool // its value is a server id
}

// complCommand is one command as a completion script offers it.
type complCommand struct {
	name, summary string
	flags         []complFlag
	// words are the first argument's fixed choices: the subcommands its
	// synopsis names (audit verify|tail|query, completion bash|zsh|fish).
	words []string
	// server is set when an argument is a server id (SERVER in the
	// synopsis).
	server bool
}

// flagsOf lists the flags of a flag set, as registered.
func flagsOf(fs *pflag.FlagSet) []complFlag {
	var out []complFlag
	fs.VisitAll(func(f *pflag.Flag) {
		out = append(out, complFlag{name: f.Name, short: f.Shorthand, usage: f.Usage,
			value: f.Value.Type() != "bool", server: f.Name == "server"})
	})
	return out
}

// globalFlags are the flags every command takes, and --help.
func globalFlags() []complFlag {
	fs := pflag.NewFlagSet("voltmcp", pflag.ContinueOnError)
	new(globals).register(fs)
	fs.BoolP("help", "h", false, "show help")
	return flagsOf(fs)
}

var synopsisWord = regexp.MustCompile(`^[a-z][a-z0-9-]*(\|[a-z][a-z0-9-]*)*$`)

// complCommands describes every visible command for the completion
// scripts: its own flags and --help (the global flags are offered
// everywhere), and from its usage's synopsis (the lines before the
// first blank one) its subcommands and whether it takes a SERVER.
func complCommands() []complCommand {
	var out []complCommand
	for _, c := range commands() {
		if c.hidden {
			continue
		}
		fs := pflag.NewFlagSet(c.name, pflag.ContinueOnError)
		if c.flags != nil {
			c.flags(fs)
		}
		cc := complCommand{name: c.name, summary: c.summary, flags: flagsOf(fs)}
		synopsis, _, _ := strings.Cut(strings.TrimSpace(c.usage), "\n\n")
		for _, line := range strings.Split(synopsis, "\n") {
			f := strings.Fields(line)
			for i, tok := range f {
				if strings.Trim(tok, "[].") == "SERVER" {
					cc.server = true
				}
				if tok == "voltmcp" && i+2 < len(f) && f[i+1] == c.name && synopsisWord.MatchString(f[i+2]) {
					for _, w := range strings.Split(f[i+2], "|") {
						if !slices.Contains(cc.words, w) {
							cc.words = append(cc.words, w)
						}
					}
				}
			}
		}
		out = append(out, cc)
	}
	return out
}

func completionCommand() *command {
	c := &command{
		name:    "completion",
		summary: "print a shell completion script (bash, zsh or fish)",
		usage: `Usage: voltmcp completion bash|zsh|fish

Prints a script that completes voltmcp's commands, their subcommands and
flags, and server ids where an argument is a SERVER (from the config of
the directory you are in, as 'voltmcp servers' sees it).

Examples:
  source <(voltmcp completion bash)          # bash, in ~/.bashrc
  voltmcp completion zsh > "${fpath[1]}/_voltmcp"   # zsh, then compinit
  voltmcp completion fish > ~/.config/fish/completions/voltmcp.fish`,
	}
	c.run = func(_ context.Context, e *env, args []string) error {
		if len(args) != 1 {
			return usageErrorf("completion takes one shell: bash, zsh or fish")
		}
		var script string
		switch args[0] {
		case "bash":
			script = bashCompletion(complCommands(), globalFlags())
		case "zsh":
			script = zshCompletion(complCommands(), globalFlags())
		case "fish":
			script = fishCompletion(complCommands(), globalFlags())
		default:
			return usageErrorf("unknown shell %q: want bash, zsh or fish", args[0])
		}
		_, err := fmt.Fprint(e.stdout, script)
		return err
	}
	return c
}

// completeCommand is the hidden command the scripts call to complete
// server ids: one id a line, from the effective config, starting
// nothing. It prints nothing when the config does not load.
func completeCommand() *command {
	c := &command{
		name: "__complete", summary: "complete values for the shell completion scripts", hidden: true,
		usage: "Usage: voltmcp __complete servers\n\nExample:\n  voltmcp __complete servers",
	}
	c.run = func(ctx context.Context, e *env, args []string) error {
		if len(args) != 1 || args[0] != "servers" {
			return usageErrorf("__complete takes servers")
		}
		res, err := cue.Load(ctx, cue.Locations{Home: e.g.home, Project: e.g.project}, &cue.Options{
			Surface: cue.SurfaceInteractive, Approve: e.g.approve, NoApprove: e.g.noApprove,
			TrustStore: filepath.Join(e.g.agentDir, cue.TrustStoreFile),
		})
		if err != nil {
			return nil
		}
		for _, s := range res.Config.Servers {
			fmt.Fprintln(e.stdout, clean(s.ID))
		}
		return nil
	}
	return c
}

// longFlags lists flags as --name words.
func longFlags(fl []complFlag, value bool) []string {
	var out []string
	for _, f := range fl {
		if value && !f.value {
			continue
		}
		out = append(out, "--"+f.name)
		if f.short != "" {
			out = append(out, "-"+f.short)
		}
	}
	return out
}

func bashCompletion(cmds []complCommand, global []complFlag) string {
	var b strings.Builder
	var names []string
	for _, c := range cmds {
		names = append(names, c.name)
	}
	valueFlags := longFlags(global, true)
	for _, c := range cmds {
		valueFlags = append(valueFlags, longFlags(c.flags, true)...)
	}
	slices.Sort(valueFlags)
	valueFlags = slices.Compact(valueFlags)
	fmt.Fprintf(&b, `# bash completion for voltmcp, made by 'voltmcp completion bash'.
_voltmcp_servers() {
  voltmcp __complete servers 2>/dev/null
}

_voltmcp() {
  local cur prev cmd i nargs=0
  COMPREPLY=()
  cur="${COMP_WORDS[COMP_CWORD]}"
  prev="${COMP_WORDS[COMP_CWORD-1]}"
  for ((i = 1; i < COMP_CWORD; i++)); do
    case "${COMP_WORDS[i]}" in
      %s) ((i++)) ;;
      -*) ;;
      *) if [[ -z "$cmd" ]]; then cmd="${COMP_WORDS[i]}"; else ((nargs++)); fi ;;
    esac
  done
  local global=%q
  if [[ "$prev" == --server ]]; then
    COMPREPLY=($(compgen -W "$(_voltmcp_servers)" -- "$cur"))
    return
  fi
  case "$prev" in
    %s) COMPREPLY=($(compgen -f -- "$cur")); return ;;
  esac
  if [[ -z "$cmd" ]]; then
    if [[ "$cur" == -* ]]; then
      COMPREPLY=($(compgen -W "$global --version" -- "$cur"))
    else
      COMPREPLY=($(compgen -W %q -- "$cur"))
    fi
    return
  fi
  local flags="" words="" server=0
  case "$cmd" in
`, strings.Join(valueFlags, "|"), strings.Join(longFlags(global, false), " "), strings.Join(valueFlags, "|"), strings.Join(names, " "))
	for _, c := range cmds {
		fmt.Fprintf(&b, "    %s) flags=%q; words=%q; server=%d ;;\n", c.name, strings.Join(longFlags(c.flags, false), " "),
			strings.Join(c.words, " "), boolInt(c.server))
	}
	b.WriteString(`  esac
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$flags $global" -- "$cur"))
  elif [[ -n "$words" && $nargs -eq 0 ]]; then
    COMPREPLY=($(compgen -W "$words" -- "$cur"))
  elif ((server)); then
    COMPREPLY=($(compgen -W "$(_voltmcp_servers)" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}
complete -F _voltmcp voltmcp
`)
	return b.String()
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// zshQuote quotes s in single quotes for zsh and fish.
func zshQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func zshCompletion(cmds []complCommand, global []complFlag) string {
	var b strings.Builder
	valueFlags := longFlags(global, true)
	for _, c := range cmds {
		valueFlags = append(valueFlags, longFlags(c.flags, true)...)
	}
	slices.Sort(valueFlags)
	valueFlags = slices.Compact(valueFlags)
	b.WriteString("#compdef voltmcp\n# zsh completion for voltmcp, made by 'voltmcp completion zsh'.\n\n_voltmcp() {\n  local -a cmds global flags\n  cmds=(\n")
	for _, c := range cmds {
		fmt.Fprintf(&b, "    %s\n", zshQuote(c.name+":"+strings.ReplaceAll(c.summary, ":", `\:`)))
	}
	fmt.Fprintf(&b, "  )\n  global=(%s)\n", strings.Join(quoteAll(longFlags(global, false)), " "))
	fmt.Fprintf(&b, `  local cmd="" i nargs=0 server=0
  for ((i = 2; i < CURRENT; i++)); do
    case "${words[i]}" in
      %s) ((i++)) ;;
      -*) ;;
      *) if [[ -z "$cmd" ]]; then cmd="${words[i]}"; else ((nargs++)); fi ;;
    esac
  done
  if [[ "${words[CURRENT-1]}" == --server ]]; then
    compadd -- ${(f)"$(voltmcp __complete servers 2>/dev/null)"}
    return
  fi
  case "${words[CURRENT-1]}" in
    %s) _files; return ;;
  esac
  if [[ -z "$cmd" ]]; then
    if [[ "$PREFIX" == -* ]]; then
      compadd -- $global --version
    else
      _describe 'command' cmds
    fi
    return
  fi
  local -a sub
  case "$cmd" in
`, strings.Join(valueFlags, "|"), strings.Join(valueFlags, "|"))
	for _, c := range cmds {
		fmt.Fprintf(&b, "    %s) flags=(%s); sub=(%s); server=%d ;;\n", c.name, strings.Join(quoteAll(longFlags(c.flags, false)), " "),
			strings.Join(quoteAll(c.words), " "), boolInt(c.server))
	}
	b.WriteString(`  esac
  if [[ "$PREFIX" == -* ]]; then
    compadd -- $flags $global
  elif (( ${#sub} )) && (( nargs == 0 )); then
    compadd -- $sub
  elif (( server )); then
    compadd -- ${(f)"$(voltmcp __complete servers 2>/dev/null)"}
  else
    _files
  fi
}

if [[ "$funcstack[1]" == _voltmcp ]]; then
  _voltmcp "$@"
else
  compdef _voltmcp voltmcp
fi
`)
	return b.String()
}

func quoteAll(ws []string) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = zshQuote(w)
	}
	return out
}

func fishCompletion(cmds []complCommand, global []complFlag) string {
	var b strings.Builder
	var names []string
	for _, c := range cmds {
		names = append(names, c.name)
	}
	b.WriteString("# fish completion for voltmcp, made by 'voltmcp completion fish'.\ncomplete -c voltmcp -f\n")
	fmt.Fprintf(&b, "complete -c voltmcp -n %s -l version -d %s\n", zshQuote("not __fish_seen_subcommand_from "+strings.Join(names, " ")), zshQuote("print the version"))
	flag := func(cond string, f complFlag) {
		line := "complete -c voltmcp"
		if cond != "" {
			line += " -n " + zshQuote(cond)
		}
		line += " -l " + f.name
		if f.short != "" {
			line += " -s " + f.short
		}
		if f.value {
			line += " -r"
			if f.server {
				line += " -a '(voltmcp __complete servers 2>/dev/null)'"
			} else {
				line += " -F"
			}
		}
		fmt.Fprintf(&b, "%s -d %s\n", line, zshQuote(f.usage))
	}
	for _, f := range global {
		flag("", f)
	}
	for _, c := range cmds {
		fmt.Fprintf(&b, "complete -c voltmcp -n %s -a %s -d %s\n", zshQuote("not __fish_seen_subcommand_from "+strings.Join(names, " ")),
			c.name, zshQuote(c.summary))
		seen := "__fish_seen_subcommand_from " + c.name
		for _, f := range c.flags {
			flag(seen, f)
		}
		if len(c.words) > 0 {
			fmt.Fprintf(&b, "complete -c voltmcp -n %s -a %s\n", zshQuote(seen+"; and not __fish_seen_subcommand_from "+strings.Join(c.words, " ")),
				zshQuote(strings.Join(c.words, " ")))
		}
		if c.server {
			fmt.Fprintf(&b, "complete -c voltmcp -n %s -a '(voltmcp __complete servers 2>/dev/null)'\n", zshQuote(seen))
		}
	}
	return b.String()
}
