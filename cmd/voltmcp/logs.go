package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/engine/serverlog"
)

func logsCommand() *command {
	var follow, asJSON bool
	c := &command{
		name:    "logs",
		summary: "print a server's log: its stderr and its connection errors",
		usage: `Usage: voltmcp logs SERVER [-f] [--json]

Prints the log voltmcp keeps of a server: each line a stdio server wrote to
stderr, and each failure of its connection (an HTTP server's refused
connection, error status or ended stream; a stdio server's exit), oldest
first, each with its time (UTC) and kind (stderr, error or note). Every
line was scrubbed of the server's secrets before it was written. The log
is <agent-dir>/mcp/logs/<identity>.log, 0600, found by the server's name
in the config; it is rotated at 1 MiB, and the older half
(<identity>.log.1) is printed first. With -f, keeps printing new lines,
across rotations, until interrupted. With --json, prints one object a
line: {"time","server","kind","text"}.

Examples:
  voltmcp logs github
  voltmcp logs github -f
  voltmcp logs github --json`,
		flags: func(fs *pflag.FlagSet) {
			fs.BoolVarP(&follow, "follow", "f", false, "keep printing new lines until interrupted")
			fs.BoolVar(&asJSON, "json", false, "print one JSON object a line")
		},
	}
	c.run = func(ctx context.Context, e *env, args []string) error {
		if len(args) != 1 {
			return usageErrorf("logs takes one server name")
		}
		id, path, err := serverLogPath(ctx, e, args[0])
		if err != nil {
			return err
		}
		n := 0
		print := func(r serverlog.Record) error {
			n++
			return writeLogRecord(e.stdout, r, asJSON)
		}
		if follow {
			err = serverlog.Follow(ctx, path, print)
		} else {
			err = serverlog.Read(path, print)
		}
		if err != nil {
			return failuref("%w", err)
		}
		if n == 0 && !follow {
			fmt.Fprintf(e.stderr, "voltmcp: server %q has no log yet: it wrote nothing to stderr and its connection never failed\n", id)
		}
		return nil
	}
	return c
}

// maxKnownNamed bounds the servers an unknown name's error lists.
const maxKnownNamed = 20

// serverLogPath returns the id and the log file of the server named id
// in the effective config, or an error naming it and the servers there
// are.
func serverLogPath(ctx context.Context, e *env, id string) (string, string, error) {
	res, err := cue.Load(ctx, cue.Locations{Home: e.g.home, Project: e.g.project}, &cue.Options{Approve: e.g.approve, NoApprove: e.g.noApprove,
		TrustStore: filepath.Join(e.g.agentDir, cue.TrustStoreFile)})
	if err != nil {
		return "", "", failuref("%w", err)
	}
	s, ok := res.Config.Server(id)
	if !ok {
		var known []string
		for _, s := range res.Config.Servers {
			known = append(known, s.ID)
		}
		if len(known) == 0 {
			return "", "", usageErrorf("unknown server %q: no server is configured", clean(id))
		}
		if more := len(known) - maxKnownNamed; more > 0 {
			known = append(known[:maxKnownNamed], fmt.Sprintf("and %d more", more))
		}
		return "", "", usageErrorf("unknown server %q: the servers are %s", clean(id), strings.Join(known, ", "))
	}
	return s.ID, serverlog.Path(e.g.agentDir, s.Identity()), nil
}

// logTime is how a line of `voltmcp logs` shows its time: UTC, to the
// millisecond, of one width.
const logTime = "2006-01-02T15:04:05.000Z"

// writeLogRecord prints one record of a server's log: as JSON, or as a
// line "TIME KIND TEXT" cleaned for a terminal.
func writeLogRecord(w io.Writer, r serverlog.Record, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		return enc.Encode(r)
	}
	_, err := fmt.Fprintf(w, "%s %-6s %s\n", r.Time.UTC().Format(logTime), clean(r.Kind), clean(r.Text))
	return err
}
