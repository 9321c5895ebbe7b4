package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/voltmcp/voltmcp/safefile"
)

// wireRecord decodes a line: its Prev shadows Record's, so that a line
// without "prev" can be told from one with an empty prev.
type wireRecord struct {
	Record
	Prev *string `json:"prev"`
}

// decodeLine decodes one line into a record, reporting whether it is one:
// a JSON object that decodes into Record, with a positive seq and a prev
// that is empty or 64 hex digits. Every reader uses this one definition.
func decodeLine(b []byte) (Record, bool) {
	var w wireRecord
	if len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &w) != nil || w.Seq <= 0 || w.Prev == nil {
		return Record{}, false
	}
	if *w.Prev != "" && !isHash(*w.Prev) {
		return Record{}, false
	}
	w.Record.Prev = *w.Prev
	return w.Record, true
}

// eachLine reads r line by line and calls fn with each record, or with
// the problem of each line that is not one. A last line that lacks only
// its newline is a record: no strict prefix of a JSON object is one, and
// the next append completes the line.
func eachLine(r io.Reader, name string, fn func(l line, rec Record, p *Problem) error) error {
	lr := newLineReader(r, 0, true)
	for {
		l, err := lr.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("audit: read %s: %w", name, err)
		}
		if l.tooLong {
			p := tooLongProblem(name, l)
			err = fn(l, Record{}, &p)
		} else if rec, ok := decodeLine(l.b); ok {
			err = fn(l, rec, nil)
		} else {
			p := corruptProblem(name, l)
			err = fn(l, Record{}, &p)
		}
		if err != nil {
			return err
		}
	}
}

// FileSummary describes one file of the log as Verify read it.
type FileSummary struct {
	Path    string `json:"path"`
	Bytes   int64  `json:"bytes"`
	Lines   int    `json:"lines"`
	Records int64  `json:"records"`
	// FirstSeq and LastSeq are the seqs of its first and last records (0
	// when it has none).
	FirstSeq int64 `json:"first_seq,omitempty"`
	LastSeq  int64 `json:"last_seq,omitempty"`
}

// VerifyReport is what Verify found. The chain is intact when Intact is
// true: no broken link and no seq gap. Skipped lines (torn or corrupt) do
// not make it fail: a crash leaves them, and the chain runs across them.
type VerifyReport struct {
	Intact bool          `json:"intact"`
	Files  []FileSummary `json:"files"`
	// Records counts the records read; FirstSeq and LastSeq are the
	// first and last seqs. A FirstSeq above 1 means older records were
	// rotated away (or deleted: the chain cannot tell).
	Records  int64 `json:"records"`
	FirstSeq int64 `json:"first_seq"`
	LastSeq  int64 `json:"last_seq"`
	// LastHash is the hash of the last record's line: the value to
	// compare with an anchor kept elsewhere (see Log.Head).
	LastHash string `json:"last_hash"`
	// Broken is the first broken link, and BrokenLinks counts them all:
	// after a break, the chain is followed from the record that broke it.
	Broken      *Problem `json:"broken,omitempty"`
	BrokenLinks int      `json:"broken_links"`
	// Gaps lists seq gaps (the first 100), GapCount counts them.
	Gaps     []Problem `json:"gaps,omitempty"`
	GapCount int       `json:"gap_count"`
	// Skipped lists lines that are not records (the first 100), and
	// SkippedLines counts them.
	Skipped      []Problem `json:"skipped,omitempty"`
	SkippedLines int       `json:"skipped_lines"`
	// Warnings are findings that do not touch the chain, such as a
	// rotated file whose name does not match its first record.
	Warnings []Problem `json:"warnings,omitempty"`
	// Lost lists the audit_gap records (the first 100): the writer could
	// not write the log for a while and says how many records it lost.
	// LostRecords adds up their counts. Any of them makes the log not
	// intact: the chain holds, but records are missing.
	Lost        []Problem `json:"lost,omitempty"`
	LostRecords int64     `json:"lost_records"`
	// Unfinished lists the call_intent records that no call record
	// completes (the first 100), and UnfinishedCalls counts them: calls
	// made, or about to be, whose outcome is not in the log. The call
	// may still be running; else its process ended before writing the
	// record. The intents still in an intent journal (Log.Intend) count
	// too. Any of them makes the log not intact.
	Unfinished      []Problem `json:"unfinished,omitempty"`
	UnfinishedCalls int       `json:"unfinished_calls"`
}

// maxOpenIntents bounds the intents Verify keeps while it looks for the
// records that complete them.
const maxOpenIntents = 1 << 16

// Verify reads every file of the log whose active file is path, oldest
// rotated file first, and checks that each record's prev is the hash of
// the record before it and that seqs follow one another. Files that are
// missing because rotation deleted them are not an error: the chain starts
// with the oldest kept record. Verify fails only when the files cannot be
// read, with an error wrapping fs.ErrNotExist when there is no file at
// all; what it finds is in the report.
func Verify(path string) (VerifyReport, error) {
	rep := VerifyReport{}
	files, err := openLogFiles(path)
	if err != nil {
		return rep, err
	}
	defer closeLogFiles(files)
	v := &verifier{rep: &rep, open: map[int64]Problem{}}
	for _, f := range files {
		if err := v.verify(f, f.name, f.nameSeq); err != nil {
			return rep, err
		}
	}
	open := slices.SortedFunc(maps.Values(v.open), func(a, b Problem) int { return cmpSeq(a.Seq, b.Seq) })
	rep.UnfinishedCalls = len(open) + v.openDropped
	for _, p := range open {
		rep.Unfinished = appendProblem(rep.Unfinished, p)
	}
	verifyJournals(path, &rep)
	// Records a writer lost and noted, which no audit_gap names yet.
	note, err := PendingLost(path)
	if err != nil {
		rep.Warnings = appendProblem(rep.Warnings, Problem{Kind: ProblemLostPending, File: LostPath(path), Message: err.Error()})
	} else if note.Records > 0 {
		rep.LostRecords += note.Records
		rep.Lost = appendProblem(rep.Lost, Problem{Kind: ProblemLostPending, File: LostPath(path), Got: strconv.FormatInt(note.Records, 10),
			Message: fmt.Sprintf("%d records were lost and no audit_gap record names them yet: the log could not be written from %s (%s)",
				note.Records, note.Since.Format(time.RFC3339), note.Error)})
	}
	rep.Intact = rep.BrokenLinks == 0 && rep.GapCount == 0 && len(rep.Lost) == 0 && rep.UnfinishedCalls == 0
	return rep, nil
}

// verifier carries the chain from one file to the next.
type verifier struct {
	rep      *VerifyReport
	started  bool
	lastSeq  int64
	lastHash string
	lastAt   string // file:line of the last record, for messages
	// open holds the call_intent records no call record has completed
	// yet, by seq; openDropped counts those left out past
	// maxOpenIntents.
	open        map[int64]Problem
	openDropped int
}

// verify checks one file. nameSeq is the seq its name gives, or -1 for
// the active file.
func (v *verifier) verify(r io.Reader, name string, nameSeq int64) error {
	sum := FileSummary{Path: name}
	rep := v.rep
	err := eachLine(r, name, func(l line, rec Record, p *Problem) error {
		sum.Lines++
		sum.Bytes += l.size
		if p != nil {
			rep.SkippedLines++
			rep.Skipped = appendProblem(rep.Skipped, *p)
			return nil
		}
		at := name + ":" + strconv.Itoa(l.no)
		if sum.Records == 0 {
			sum.FirstSeq = rec.Seq
			if nameSeq >= 0 && rec.Seq != nameSeq {
				rep.Warnings = appendProblem(rep.Warnings, Problem{Kind: ProblemFileName, File: name, Line: l.no, Offset: l.off, Seq: rec.Seq,
					Want: strconv.FormatInt(nameSeq, 10), Got: strconv.FormatInt(rec.Seq, 10),
					Message: fmt.Sprintf("the file is named for seq %d but its first record is seq %d", nameSeq, rec.Seq)})
			}
		}
		sum.Records++
		sum.LastSeq = rec.Seq
		hash := hashLine(l.b)
		if !v.started {
			v.started = true
			rep.FirstSeq = rec.Seq
			if rec.Seq == 1 && rec.Prev != "" {
				v.broken(Problem{Kind: ProblemBrokenLink, File: name, Line: l.no, Offset: l.off, Seq: rec.Seq, Want: "", Got: rec.Prev,
					Message: "the first record (seq 1) points at a previous record"})
			}
		} else {
			if rec.Prev != v.lastHash {
				v.broken(Problem{Kind: ProblemBrokenLink, File: name, Line: l.no, Offset: l.off, Seq: rec.Seq, Want: v.lastHash, Got: rec.Prev,
					Message: fmt.Sprintf("prev is not the hash of the record before it (%s, seq %d): one of the two was changed, or records between them were removed, added or reordered", v.lastAt, v.lastSeq)})
			}
			if rec.Seq != v.lastSeq+1 {
				rep.GapCount++
				rep.Gaps = appendProblem(rep.Gaps, Problem{Kind: ProblemSeqGap, File: name, Line: l.no, Offset: l.off, Seq: rec.Seq,
					Want: strconv.FormatInt(v.lastSeq+1, 10), Got: strconv.FormatInt(rec.Seq, 10),
					Message: fmt.Sprintf("seq %d follows seq %d (%s)", rec.Seq, v.lastSeq, v.lastAt)})
			}
		}
		switch {
		case rec.Kind == KindCallIntent:
			if len(v.open) < maxOpenIntents {
				v.open[rec.Seq] = Problem{Kind: ProblemUnfinished, File: name, Line: l.no, Offset: l.off, Seq: rec.Seq,
					Message: fmt.Sprintf("the call of %s.%s at %s has no record of its outcome: it is still running, or its process ended before writing it",
						rec.Server, rec.Tool, rec.Time.Format(time.RFC3339))}
			} else {
				v.openDropped++
			}
		case rec.Intent > 0:
			delete(v.open, rec.Intent)
		}
		if rec.Kind == KindAuditGap {
			n, _ := rec.Detail["lost"].(float64)
			since, _ := rec.Detail["since"].(string)
			cause, _ := rec.Detail["error"].(string)
			rep.LostRecords += int64(n)
			rep.Lost = appendProblem(rep.Lost, Problem{Kind: ProblemLost, File: name, Line: l.no, Offset: l.off, Seq: rec.Seq,
				Got:     strconv.FormatInt(int64(n), 10),
				Message: fmt.Sprintf("%d records were lost: the log could not be written from %s to %s (%s)", int64(n), since, rec.Time.Format(time.RFC3339), cause)})
		}
		rep.Records++
		rep.LastSeq, rep.LastHash = rec.Seq, hash
		v.lastSeq, v.lastHash, v.lastAt = rec.Seq, hash, at
		return nil
	})
	rep.Files = append(rep.Files, sum)
	return err
}

func (v *verifier) broken(p Problem) {
	if v.rep.Broken == nil {
		v.rep.Broken = &p
	}
	v.rep.BrokenLinks++
}

// Query selects records for Read. Empty fields match everything.
type Query struct {
	Server, Tool, Kind, Status string
	// Since and Until bound the record's time: Since inclusive, Until
	// exclusive.
	Since, Until time.Time
	// Limit keeps only the most recent Limit matches; 0 keeps all.
	Limit int
}

// Match reports whether rec is selected by q (Limit aside).
func (q Query) Match(rec Record) bool {
	return (q.Server == "" || rec.Server == q.Server) &&
		(q.Tool == "" || rec.Tool == q.Tool) &&
		(q.Kind == "" || rec.Kind == q.Kind) &&
		(q.Status == "" || rec.Status == q.Status) &&
		(q.Since.IsZero() || !rec.Time.Before(q.Since)) &&
		(q.Until.IsZero() || rec.Time.Before(q.Until))
}

// Read returns the records of the log at path that q selects, oldest
// first, and the lines it skipped (the first 100) because they are not
// records. It does not check the chain; Verify does. It fails with an
// error wrapping fs.ErrNotExist when the log has no file at all.
func Read(path string, q Query) ([]Record, []Problem, error) {
	files, err := openLogFiles(path)
	if err != nil {
		return nil, nil, err
	}
	defer closeLogFiles(files)
	var recs []Record
	var probs []Problem
	for _, f := range files {
		err := eachLine(f, f.name, func(_ line, rec Record, p *Problem) error {
			if p != nil {
				probs = appendProblem(probs, *p)
				return nil
			}
			if q.Match(rec) {
				recs = append(recs, rec)
				if q.Limit > 0 && len(recs) >= 2*q.Limit {
					recs = append(recs[:0], recs[len(recs)-q.Limit:]...)
				}
			}
			return nil
		})
		if err != nil {
			return nil, probs, err
		}
	}
	if q.Limit > 0 && len(recs) > q.Limit {
		recs = recs[len(recs)-q.Limit:]
	}
	return recs, probs, nil
}

// pollInterval is how often Tail looks for new records when following.
const pollInterval = 200 * time.Millisecond

// Tail calls fn with the last n records of the log at path, oldest first,
// and with follow, then with each record appended after them, across
// rotations, until ctx ends (it then returns ctx.Err()) or fn returns an
// error (which Tail returns). Lines that are not records are skipped
// silently; Verify and Read report them. Without follow, a log with no
// file fails with an error wrapping fs.ErrNotExist; with follow, Tail
// waits for the log to appear.
func Tail(ctx context.Context, path string, n int, follow bool, fn func(Record) error) error {
	var f *os.File
	var off int64
	var lastSeq int64
	var recent []Record
	if file, err := openForRead(path); err == nil {
		f = file
		defer func() { _ = f.Close() }()
		if off, err = readComplete(f, path, 0, func(rec Record) error {
			lastSeq = max(lastSeq, rec.Seq)
			if n > 0 {
				recent = append(recent, rec)
				if len(recent) >= 2*n {
					recent = append(recent[:0], recent[len(recent)-n:]...)
				}
			}
			return nil
		}); err != nil {
			return err
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("audit: %w", err)
	}
	rot, err := listRotated(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("audit: %w", err)
	}
	if f == nil && len(rot) == 0 && !follow {
		return fmt.Errorf("audit: no audit log at %s: %w", path, os.ErrNotExist)
	}
	// Fill up from the rotated files, newest first, as far as needed.
	for i := len(rot) - 1; i >= 0 && len(recent) < n; i-- {
		var older []Record
		if err := readFile(rot[i].path, func(rec Record) error {
			lastSeq = max(lastSeq, rec.Seq)
			older = append(older, rec)
			return nil
		}); err != nil {
			return err
		}
		recent = append(older, recent...)
	}
	slices.SortStableFunc(recent, func(a, b Record) int { return cmpSeq(a.Seq, b.Seq) })
	recent = slices.CompactFunc(recent, func(a, b Record) bool { return a.Seq == b.Seq })
	if n > 0 && len(recent) > n {
		recent = recent[len(recent)-n:]
	}
	for _, rec := range recent {
		if err := fn(rec); err != nil {
			return err
		}
	}
	if !follow {
		return nil
	}

	emit := func(rec Record) error {
		if rec.Seq <= lastSeq {
			return nil
		}
		lastSeq = rec.Seq
		return fn(rec)
	}
	for {
		if f != nil {
			if off, err = readComplete(f, path, off, emit); err != nil {
				return err
			}
		}
		switched, err := activeChanged(f, path)
		if err != nil {
			return err
		}
		if switched {
			if f != nil {
				// Drain what was appended before the rotation.
				if _, err := readComplete(f, path, off, emit); err != nil {
					return err
				}
				_ = f.Close()
				f = nil
			}
			// Open the new active file before listing the rotated ones:
			// then every file rotated before it is in the list, and none
			// is missed when rotations follow each other quickly.
			file, err := openForRead(path)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("audit: %w", err)
			}
			// Files rotated away since: their names are their first seqs.
			rot, lerr := listRotated(path)
			if lerr != nil {
				if file != nil {
					_ = file.Close()
				}
				return fmt.Errorf("audit: %w", lerr)
			}
			for _, r := range rot {
				if r.seq > lastSeq {
					if err := readFile(r.path, emit); err != nil {
						if file != nil {
							_ = file.Close()
						}
						return err
					}
				}
			}
			if err == nil {
				f, off = file, 0
				continue
			}
		}
		t := time.NewTimer(pollInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

func cmpSeq(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// activeChanged reports whether the file at path is no longer f (rotated
// or newly created).
func activeChanged(f *os.File, path string) (bool, error) {
	pi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("audit: %w", err)
	}
	if f == nil {
		return true, nil
	}
	fi, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("audit: %w", err)
	}
	return !os.SameFile(fi, pi), nil
}

// readFile calls fn with every record of the file at path.
func readFile(path string, fn func(Record) error) error {
	f, err := openForRead(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil // rotated away meanwhile
		}
		return fmt.Errorf("audit: %w", err)
	}
	defer f.Close()
	_, err = readComplete(f, path, 0, fn)
	return err
}

// readComplete calls fn with every record on a complete line of f from
// off on, and returns the offset after the last complete line: a line
// still being written is left for the next call.
func readComplete(f *os.File, name string, off int64, fn func(Record) error) (int64, error) {
	lr := newLineReader(io.NewSectionReader(f, off, math.MaxInt64-off), off, false)
	for {
		l, err := lr.next()
		if errors.Is(err, io.EOF) {
			return off, nil
		}
		if err != nil {
			return off, fmt.Errorf("audit: read %s: %w", name, err)
		}
		if !l.complete {
			return off, nil
		}
		off = l.off + l.size
		if l.tooLong {
			continue
		}
		if rec, ok := decodeLine(l.b); ok {
			if err := fn(rec); err != nil {
				return off, err
			}
		}
	}
}

// openForRead opens a file of the log for a reader: without blocking and
// only a regular file (safefile.Open), so a FIFO or device in the log's
// place is an error that names it, not a reader that hangs.
func openForRead(path string) (*os.File, error) {
	f, _, err := safefile.Open(path, &safefile.ReadOptions{MaxSize: -1})
	return f, err
}
