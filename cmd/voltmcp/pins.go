package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/voltmcp/voltmcp/engine"
)

func pinsCommand() *command {
	var asJSON bool
	c := &command{
		name:    "pins",
		summary: "list pinned tools and the changes waiting for approval",
		usage: `Usage: voltmcp pins [SERVER] [--json]

voltmcp pins each tool's metadata (title, description, input schema,
annotations, risk) the first time a discovery sees it. When a later
discovery ('voltmcp refresh', or a refresh while serving) finds a tool
changed, the change waits for approval, rated:

  cosmetic           white space or letter case only
  description        reworded
  schema-compatible  every call that was valid still is (a new optional field)
  schema-breaking    a call that was valid may not be (a new required field)
  escalation         the tool may now do more, may slip past a rule that
                     held it, or its text addresses the model (its risk
                     rose or fell, a risk hint such as readOnlyHint or
                     destructiveHint changed either way, new imperative
                     phrases, links or addresses)

A schema-breaking or escalation change is held: agents see the pinned
version and the default policy refuses calls until 'voltmcp approve'. The
other changes are shown as listed and stay callable; they are listed here
for review.

Lists every pin of SERVER, or of every configured server, with each
pending change's rating, findings and a line diff from the pinned version
("-" removed, "+" added). Starts nothing.

Examples:
  voltmcp pins
  voltmcp pins github
  voltmcp pins github --json | jq '.[] | select(.pending)'`,
		flags: func(fs *pflag.FlagSet) {
			fs.BoolVar(&asJSON, "json", false, "print JSON")
		},
	}
	c.run = func(ctx context.Context, e *env, args []string) error {
		if len(args) > 1 {
			return usageErrorf("pins takes at most one server id")
		}
		server := ""
		if len(args) == 1 {
			server = args[0]
		}
		eng, err := openEngine(ctx, e)
		if err != nil {
			return err
		}
		defer eng.Close()
		pins, err := eng.Pins(ctx, server)
		if err != nil {
			if errors.Is(err, engine.ErrUnknownServer) {
				return usageErrorf("%w", err)
			}
			return failuref("%w", err)
		}
		if asJSON {
			return writeJSONValue(e.stdout, pins)
		}
		return writePins(e.stdout, pins)
	}
	return c
}

// writePins prints pins as a table, then each pending change in full.
func writePins(w io.Writer, pins []engine.PinView) error {
	if len(pins) == 0 {
		_, err := fmt.Fprintln(w, "(nothing pinned yet: 'voltmcp refresh' pins the tools it lists)")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tTOOL\tSTATE\tRISK\tCHANGE\tPINNED")
	pending := 0
	for _, p := range pins {
		change := "-"
		if p.Pending != nil {
			pending++
			change = p.Pending.Severity
			if p.Pending.Held {
				change += " (held)"
			}
		}
		risk := p.Risk
		if risk == "" {
			risk = "unknown"
		}
		state := p.State
		if p.Quarantined {
			state += " (quarantined)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", p.Server, p.Tool, state, risk, change, p.PinnedAt.Local().Format("2006-01-02 15:04"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	held := map[string]bool{}
	for _, p := range pins {
		if p.Quarantined && !held[p.Server] {
			held[p.Server] = true
			fmt.Fprintf(w, "\n%s: quarantined: first seen while new servers are held for review; its tools are listed as pending and cannot be called\n", p.Server)
			fmt.Fprintf(w, "  approve: voltmcp approve %s\n", p.Server)
		}
	}
	for _, p := range pins {
		if p.Pending == nil {
			continue
		}
		fmt.Fprintf(w, "\n%s %s: %s change", p.Server, p.Tool, p.Pending.Severity)
		if p.Pending.Held {
			fmt.Fprintf(w, ", held until approved")
		}
		fmt.Fprintf(w, " (seen %s)\n", p.Pending.SeenAt.Local().Format("2006-01-02 15:04"))
		for _, d := range p.Pending.Details {
			fmt.Fprintf(w, "  * %s\n", clean(d))
		}
		for _, line := range strings.Split(strings.TrimRight(p.Pending.Diff, "\n"), "\n") {
			fmt.Fprintf(w, "    %s\n", clean(line))
		}
		fmt.Fprintf(w, "  approve: voltmcp approve %s %s\n", p.Server, p.Tool)
	}
	if pending > 0 {
		_, err := fmt.Fprintf(w, "\n%d change(s) wait for approval.\n", pending)
		return err
	}
	return nil
}

func approveCommand() *command {
	c := &command{
		name:    "approve",
		summary: "accept the pending changes of a server's tools",
		usage: `Usage: voltmcp approve SERVER [TOOL...]

Accepts the pending changes of the named tools of SERVER, or of all its
tools when none is named (see 'voltmcp pins' for what changed): each
change becomes the tool's pin, and a held tool is shown and callable in
its new version. Naming a tool without a pending change is an error, and
then nothing is approved. Prints the server's pins afterwards.

With no tool named, SERVER itself is approved too. When a policy turns on
quarantine_new_servers (see docs/policies.md), a server first seen while
it applies has its tools listed as pending and not callable until it is
approved this way; a server approved before it is ever seen is not held.
Every approval is written to the audit log.

Examples:
  voltmcp pins github
  voltmcp approve github create_issue
  voltmcp approve github`,
	}
	c.run = func(ctx context.Context, e *env, args []string) error {
		if len(args) < 1 {
			return usageErrorf("approve takes a server id and optionally tool names")
		}
		eng, err := openEngine(ctx, e)
		if err != nil {
			return err
		}
		defer eng.Close()
		if err := eng.Approve(ctx, args[0], args[1:]...); err != nil {
			if errors.Is(err, engine.ErrUnknownServer) {
				return usageErrorf("%w", err)
			}
			return failuref("%w", err)
		}
		pins, err := eng.Pins(ctx, args[0])
		if err != nil {
			return failuref("%w", err)
		}
		return writePins(e.stdout, pins)
	}
	return c
}
