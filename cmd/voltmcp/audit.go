package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/voltmcp/voltmcp/engine/audit"
)

// auditFlags are the flags of 'voltmcp audit', and which subcommand each
// belongs to ("" for all of them).
type auditFlags struct {
	file         string
	lines        int
	follow       bool
	asJSON       bool
	server, tool string
	kind, status string
	since, until string
	limit        int
}

var auditFlagOwners = map[string]string{
	"lines": "tail", "follow": "tail",
	"server": "query", "tool": "query", "kind": "query", "status": "query", "since": "query", "until": "query", "limit": "query",
}

func auditCommand() *command {
	var f auditFlags
	var flags *pflag.FlagSet
	c := &command{
		name:    "audit",
		summary: "verify, tail or query the tamper-evident audit log",
		usage: `Usage: voltmcp audit verify [--file F] [--json]
       voltmcp audit tail [-n N] [--follow] [--json] [--file F]
       voltmcp audit query [--server S] [--tool T] [--kind K] [--status S]
                           [--since DUR|TIME] [--until DUR|TIME] [--limit N] [--json] [--file F]

Reads the audit log: one JSON record a line, each carrying the hash of the
line before it, in <agent-dir>/audit/audit.jsonl and its rotated files
audit.jsonl.<first seq>.

verify walks every kept file, oldest first, and checks the hash chain and
the sequence numbers. It prints the first broken link (file, line, seq,
expected and found hash) and exits 1 when the chain is broken or a record
is missing. Torn lines left by a crash are listed and skipped; they do not
fail the check.

tail prints the last N records (default 20); with --follow it keeps
printing new records, across rotations, until interrupted.

query prints the records that match every filter given. --since and
--until take a duration back from now (90s, 15m, 2h, 7d) or a time
(2026-05-01, 2026-05-01T12:00:00Z); --since is inclusive, --until
exclusive. --limit keeps the newest N matches.

Human output is one line a record: time, kind, server/tool, status, risk,
duration, and the policy's verdict with its reasons. With --json, tail and
query print one record a line (JSON Lines) and verify prints its report.

Examples:
  voltmcp audit verify
  voltmcp audit tail -n 50 --follow
  voltmcp audit query --server github --since 24h
  voltmcp audit query --kind pin_change --json | jq -r .tool`,
	}
	c.flags = func(fs *pflag.FlagSet) {
		flags = fs
		fs.StringVar(&f.file, "file", "", "the log's active file (default <agent-dir>/audit/audit.jsonl)")
		fs.IntVarP(&f.lines, "lines", "n", 20, "tail: how many of the newest records to print")
		fs.BoolVarP(&f.follow, "follow", "f", false, "tail: keep printing records as they are appended")
		fs.BoolVar(&f.asJSON, "json", false, "print JSON (tail, query: one record a line)")
		fs.StringVar(&f.server, "server", "", "query: only records of this server")
		fs.StringVar(&f.tool, "tool", "", "query: only records of this tool")
		fs.StringVar(&f.kind, "kind", "", "query: only records of this kind (call, trust, pin_change, ...)")
		fs.StringVar(&f.status, "status", "", "query: only records with this status")
		fs.StringVar(&f.since, "since", "", "query: only records at or after this time or duration ago")
		fs.StringVar(&f.until, "until", "", "query: only records before this time or duration ago")
		fs.IntVar(&f.limit, "limit", 0, "query: keep only the newest N matches (0: all)")
	}
	c.run = func(ctx context.Context, e *env, args []string) error {
		if len(args) != 1 || (args[0] != "verify" && args[0] != "tail" && args[0] != "query") {
			return usageErrorf("want 'voltmcp audit verify', 'voltmcp audit tail' or 'voltmcp audit query'")
		}
		sub := args[0]
		var misplaced error
		flags.Visit(func(fl *pflag.Flag) {
			if owner := auditFlagOwners[fl.Name]; owner != "" && owner != sub && misplaced == nil {
				misplaced = usageErrorf("--%s belongs to 'voltmcp audit %s', not %s", fl.Name, owner, sub)
			}
		})
		if misplaced != nil {
			return misplaced
		}
		path := f.file
		if path == "" {
			path = audit.DefaultPath(e.g.agentDir)
		}
		switch sub {
		case "verify":
			return auditVerify(e, path, f.asJSON)
		case "tail":
			return auditTail(ctx, e, path, f)
		}
		return auditQuery(e, path, f, time.Now())
	}
	return c
}

// noLog turns a missing log into a clear failure that names the flag
// (fileFlag, e.g. "--file") the command takes the log's path with.
func noLog(path, fileFlag string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return failuref("no audit log at %s (nothing recorded yet, or the wrong --agent-dir or %s)", path, fileFlag)
	}
	return failuref("%w", err)
}

func auditVerify(e *env, path string, asJSON bool) error {
	rep, err := audit.Verify(path)
	if err != nil {
		return noLog(path, "--file", err)
	}
	if asJSON {
		err = writeJSONValue(e.stdout, rep)
	} else {
		err = writeVerifyText(e.stdout, rep)
	}
	if err != nil {
		return failuref("write output: %w", err)
	}
	if !rep.Intact {
		return errFindings
	}
	return nil
}

func writeVerifyText(w io.Writer, rep audit.VerifyReport) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s in %d %s", rep.Records, plural(int(min(rep.Records, 2)), "record"), len(rep.Files), plural(len(rep.Files), "file"))
	if rep.Records > 0 {
		fmt.Fprintf(&b, ", seq %d to %d; last line hash %s", rep.FirstSeq, rep.LastSeq, rep.LastHash)
	}
	b.WriteString("\n")
	if rep.FirstSeq > 1 {
		fmt.Fprintf(&b, "the chain starts at seq %d: older records were rotated away (or deleted; the chain cannot tell which)\n", rep.FirstSeq)
	}
	if rep.SkippedLines > 0 {
		fmt.Fprintf(&b, "%d lines skipped (a crash leaves a torn line; these do not break the chain):\n", rep.SkippedLines)
		for _, p := range rep.Skipped {
			fmt.Fprintf(&b, "  %s\n", clean(p.String()))
		}
	}
	for _, p := range rep.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", clean(p.String()))
	}
	if rep.LostRecords > 0 || len(rep.Lost) > 0 {
		fmt.Fprintf(&b, "%d records LOST while the log could not be written:\n", rep.LostRecords)
		for _, p := range rep.Lost {
			fmt.Fprintf(&b, "  %s\n", clean(p.String()))
		}
	}
	if rep.UnfinishedCalls > 0 {
		fmt.Fprintf(&b, "%d %s UNFINISHED: an intent written before the call, and no record of its outcome:\n", rep.UnfinishedCalls, plural(min(rep.UnfinishedCalls, 2), "call"))
		for _, p := range rep.Unfinished {
			fmt.Fprintf(&b, "  %s\n", clean(p.String()))
		}
	}
	if rep.Intact {
		b.WriteString("chain intact\n")
	} else {
		if p := rep.Broken; p != nil {
			fmt.Fprintf(&b, "chain BROKEN at %s:%d (seq %d): %s\n  prev found:    %q\n  prev expected: %q\n",
				clean(p.File), p.Line, p.Seq, clean(p.Message), clean(p.Got), p.Want)
		}
		fmt.Fprintf(&b, "%d broken links, %d seq gaps, %d records lost, %d calls unfinished\n", rep.BrokenLinks, rep.GapCount, rep.LostRecords, rep.UnfinishedCalls)
		for _, p := range rep.Gaps {
			fmt.Fprintf(&b, "  %s\n", clean(p.String()))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func auditTail(ctx context.Context, e *env, path string, f auditFlags) error {
	if f.lines < 0 {
		return usageErrorf("-n wants a number of records, 0 or more")
	}
	write := recordWriter(e.stdout, f.asJSON)
	err := audit.Tail(ctx, path, f.lines, f.follow, write)
	if f.follow && errors.Is(err, context.Canceled) {
		return nil // an interrupt is how --follow ends
	}
	var we *writeError
	if errors.As(err, &we) {
		return failuref("write output: %w", we.err)
	}
	if err != nil {
		return noLog(path, "--file", err)
	}
	return nil
}

func auditQuery(e *env, path string, f auditFlags, now time.Time) error {
	if f.limit < 0 {
		return usageErrorf("--limit wants a number of records, 0 or more")
	}
	q := audit.Query{Server: f.server, Tool: f.tool, Kind: f.kind, Status: f.status, Limit: f.limit}
	var err error
	if q.Since, err = parseWhen(f.since, now); err != nil {
		return usageErrorf("--since: %w", err)
	}
	if q.Until, err = parseWhen(f.until, now); err != nil {
		return usageErrorf("--until: %w", err)
	}
	recs, probs, err := audit.Read(path, q)
	if err != nil {
		return noLog(path, "--file", err)
	}
	for _, p := range probs {
		fmt.Fprintf(e.stderr, "voltmcp audit: skipped %s\n", clean(p.String()))
	}
	write := recordWriter(e.stdout, f.asJSON)
	for _, r := range recs {
		if err := write(r); err != nil {
			var we *writeError
			errors.As(err, &we)
			return failuref("write output: %w", we.err)
		}
	}
	return nil
}

// writeError marks a failure to write output, as opposed to reading the
// log.
type writeError struct{ err error }

func (e *writeError) Error() string { return e.err.Error() }

// recordWriter returns a function that prints one record, as JSON or as a
// line for people.
func recordWriter(w io.Writer, asJSON bool) func(audit.Record) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return func(r audit.Record) error {
		var err error
		if asJSON {
			err = enc.Encode(r)
		} else {
			_, err = io.WriteString(w, formatRecord(r)+"\n")
		}
		if err != nil {
			return &writeError{err}
		}
		return nil
	}
}

// formatRecord is a record's line for people: time, kind, target, status,
// risk, duration, verdict. Text from the record is cleaned of control
// characters, so a hostile server name cannot drive the terminal.
func formatRecord(r audit.Record) string {
	target := r.Server
	if what := firstNonEmpty(r.Tool, r.Resource, r.Prompt); what != "" {
		target += "/" + what
	}
	parts := []string{
		r.Time.UTC().Format("2006-01-02T15:04:05.000Z"),
		fmt.Sprintf("%-13s", clean(r.Kind)),
		fmt.Sprintf("%-28s", clean(firstNonEmpty(target, "-"))),
		fmt.Sprintf("%-9s", clean(firstNonEmpty(r.Status, "-"))),
	}
	if r.Risk != "" {
		parts = append(parts, "risk="+clean(r.Risk))
	}
	if r.DurationMS > 0 {
		parts = append(parts, strconv.FormatInt(r.DurationMS, 10)+"ms")
	}
	if d := r.Decision; d != nil && (!d.Allowed || len(d.Reasons) > 0) {
		verdict := "allowed"
		if !d.Allowed {
			verdict = "denied"
		}
		if len(d.Reasons) > 0 {
			verdict += ": " + clean(strings.Join(d.Reasons, "; "))
		}
		parts = append(parts, verdict)
	}
	return strings.TrimRight(strings.Join(parts, "  "), " ")
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// parseWhen reads a --since or --until value: empty, a duration back from
// now (Go syntax, plus whole days as "7d"), or a time in RFC 3339, with or
// without seconds, or a date (both in UTC when no zone is given).
func parseWhen(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n >= 0 {
			return now.AddDate(0, 0, -n), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("%q: give a duration back from now without a sign", s)
		}
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is neither a duration (90s, 15m, 2h, 7d) nor a time (2026-05-01, 2026-05-01T12:00:00Z)", s)
}
