package audit

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// ProblemKind names what is wrong with a line, a link or a file.
type ProblemKind string

// The problems readers and the log report.
const (
	// ProblemTorn is a last line without its newline: a write cut short.
	ProblemTorn ProblemKind = "torn_line"
	// ProblemCorrupt is a line that is not a record: not JSON, or no seq
	// and prev. A torn line that a later append completed with a newline
	// reads as one.
	ProblemCorrupt ProblemKind = "corrupt_line"
	// ProblemTooLong is a line longer than MaxLineBytes.
	ProblemTooLong ProblemKind = "line_too_long"
	// ProblemBrokenLink is a record whose prev is not the hash of the
	// record before it: that record or this one was changed, or records
	// between them were removed, added or reordered.
	ProblemBrokenLink ProblemKind = "broken_link"
	// ProblemSeqGap is a record whose seq does not follow the one before.
	ProblemSeqGap ProblemKind = "seq_gap"
	// ProblemFileName is a rotated file whose name does not match the seq
	// of its first record.
	ProblemFileName ProblemKind = "file_name"
	// ProblemRotate is a rotation that failed; the log kept appending to
	// the active file.
	ProblemRotate ProblemKind = "rotate_failed"
	// ProblemShrunk is a log that lost records this process had written:
	// the active file was truncated or replaced behind its back. The next
	// append still chains from what this process wrote last, so Verify
	// shows the loss as a broken link.
	ProblemShrunk ProblemKind = "log_shrunk"
	// ProblemLost is an audit_gap record: its writer could not write
	// the log for a while and lost the records it names.
	ProblemLost ProblemKind = "records_lost"
	// ProblemLostPending is a note of records lost (see NoteLost) that
	// no audit_gap record names yet: a writer could not write the log,
	// and none has written it since.
	ProblemLostPending ProblemKind = "records_lost_pending"
	// ProblemUnfinished is a call_intent record that no call record
	// completes: the call may still be running, or its process ended
	// before its record was written.
	ProblemUnfinished ProblemKind = "call_unfinished"
	// ProblemJournal is an intent journal that could not be made or
	// recovered (see Log.Intend).
	ProblemJournal ProblemKind = "intent_journal"
)

// Problem is one thing a reader or the log found wrong.
type Problem struct {
	Kind ProblemKind `json:"kind"`
	// File is the file, Line its 1-based line (0 when not known), and
	// Offset the byte offset of that line.
	File   string `json:"file"`
	Line   int    `json:"line,omitempty"`
	Offset int64  `json:"offset"`
	// Seq is the record's seq, when the line is a record.
	Seq int64 `json:"seq,omitempty"`
	// Want and Got are the expected and found values of a broken link
	// (hashes) or a gap (sequence numbers).
	Want string `json:"want,omitempty"`
	Got  string `json:"got,omitempty"`
	// Message says it in a sentence.
	Message string `json:"message"`
}

func (p Problem) String() string {
	where := p.File
	if p.Line > 0 {
		where += ":" + strconv.Itoa(p.Line)
	} else {
		where += fmt.Sprintf(" at byte %d", p.Offset)
	}
	return fmt.Sprintf("%s: %s: %s", where, p.Kind, p.Message)
}

// maxReported bounds each list of problems a reader keeps; the counts go
// on beyond it.
const maxReported = 100

// line is one line of a file as lineReader returns it.
type line struct {
	b        []byte // the bytes without the newline; nil when tooLong; valid until the next call
	off      int64  // offset of the line in the file
	no       int    // 1-based line number, 0 when reading from the middle of a file
	size     int64  // bytes the line takes, newline included
	complete bool   // it ends with a newline
	tooLong  bool   // it is longer than MaxLineBytes; its bytes were not kept
}

// lineReader splits a file into lines, holding at most MaxLineBytes of
// any one line.
type lineReader struct {
	r   *bufio.Reader
	off int64
	no  int // lines read so far; -1 when line numbers are unknown
	buf []byte
}

func newLineReader(r io.Reader, off int64, numbered bool) *lineReader {
	lr := &lineReader{r: bufio.NewReaderSize(r, 64<<10), off: off}
	if !numbered {
		lr.no = -1
	}
	return lr
}

// next returns the next line, or io.EOF after the last one.
func (lr *lineReader) next() (line, error) {
	lr.buf = lr.buf[:0]
	var total int64
	tooLong := false
	for {
		chunk, err := lr.r.ReadSlice('\n')
		total += int64(len(chunk))
		if !tooLong {
			if len(lr.buf)+len(chunk) > MaxLineBytes+1 {
				tooLong = true
				lr.buf = lr.buf[:0]
			} else {
				lr.buf = append(lr.buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return line{}, err
		}
		if total == 0 {
			return line{}, io.EOF
		}
		l := line{off: lr.off, size: total, complete: err == nil, tooLong: tooLong}
		lr.off += total
		if lr.no >= 0 {
			lr.no++
			l.no = lr.no
		}
		if !tooLong {
			l.b = lr.buf
			if l.complete {
				l.b = l.b[:len(l.b)-1]
			}
			if len(l.b) > MaxLineBytes {
				l.b, l.tooLong = nil, true
			}
		}
		return l, nil
	}
}

// isHash reports whether s is 64 lowercase hex digits.
func isHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// hashLine is the value the next record's prev must hold.
func hashLine(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// tooLongProblem describes a line longer than MaxLineBytes.
func tooLongProblem(file string, l line) Problem {
	return Problem{Kind: ProblemTooLong, File: file, Line: l.no, Offset: l.off,
		Message: fmt.Sprintf("a line of %d bytes, over the %d-byte limit, skipped", l.size, MaxLineBytes)}
}

// corruptProblem describes a complete line that is not a record.
func corruptProblem(file string, l line) Problem {
	msg := fmt.Sprintf("a line of %d bytes that is not a record, skipped (a torn write completed by a later append reads like this)", l.size)
	if !l.complete {
		msg = fmt.Sprintf("the last line (%d bytes) has no newline and is not a record: a write cut short, skipped", l.size)
		return Problem{Kind: ProblemTorn, File: file, Line: l.no, Offset: l.off, Message: msg}
	}
	return Problem{Kind: ProblemCorrupt, File: file, Line: l.no, Offset: l.off, Message: msg}
}

// rotated is a rotated file and the seq its name gives.
type rotated struct {
	path string
	seq  int64
}

// rotatedName is the name a file starting at seq gets when rotated.
func rotatedName(path string, seq int64) string {
	return fmt.Sprintf("%s.%012d", path, seq)
}

// listRotated returns the rotated files of the log at path, oldest first.
func listRotated(path string) ([]rotated, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []rotated
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), base+".")
		if !ok || rest == "" || len(rest) > 19 || !e.Type().IsRegular() || strings.Trim(rest, "0123456789") != "" {
			continue
		}
		seq, err := strconv.ParseInt(rest, 10, 64)
		if err != nil {
			continue
		}
		out = append(out, rotated{filepath.Join(dir, e.Name()), seq})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out, nil
}

// logFile is one open file of a log.
type logFile struct {
	*os.File
	name    string
	nameSeq int64 // the seq its name gives; -1 for the active file
}

// openLogFiles opens every file of the log at path, oldest first: the
// rotated files, then the active one if it exists. The active file is
// opened first, so that a rotation while the files are listed cannot make
// it appear twice: the result is one consistent snapshot. It fails with an
// error wrapping fs.ErrNotExist when there is no file at all. The caller
// closes the files.
func openLogFiles(path string) ([]logFile, error) {
	var active *os.File
	var activeInfo os.FileInfo
	if f, err := openForRead(path); err == nil {
		active = f
		if activeInfo, err = f.Stat(); err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("audit: %w", err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("audit: %w", err)
	}
	rot, err := listRotated(path)
	if err != nil {
		if active != nil {
			_ = active.Close()
		}
		return nil, fmt.Errorf("audit: list %s: %w", path, err)
	}
	var out []logFile
	for _, r := range rot {
		f, err := openForRead(r.path)
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted by rotation meanwhile
		}
		if err != nil {
			closeLogFiles(out)
			if active != nil {
				_ = active.Close()
			}
			return nil, fmt.Errorf("audit: %w", err)
		}
		if fi, err := f.Stat(); err == nil && activeInfo != nil && os.SameFile(fi, activeInfo) {
			_ = f.Close() // the active file, rotated after it was opened
			continue
		}
		out = append(out, logFile{f, r.path, r.seq})
	}
	if active != nil {
		out = append(out, logFile{active, path, -1})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("audit: no audit log at %s: %w", path, os.ErrNotExist)
	}
	return out, nil
}

func closeLogFiles(files []logFile) {
	for _, f := range files {
		_ = f.Close()
	}
}

// fileState is what a scan of (part of) a file learned for the writer.
type fileState struct {
	end      int64 // offset after the last byte read
	found    bool  // a record was found
	firstSeq int64 // seq of the first record found
	lastSeq  int64
	lastHash string
	endsNL   bool // the last byte read is a newline (or nothing was read)
	// trailing are the problems after the last record found: what a crash
	// left behind.
	trailing []Problem
}

// scanState reads f from offset from to its end and returns what the
// writer needs to go on. Line numbers are known only when from is 0.
func scanState(f *os.File, name string, from int64) (fileState, error) {
	st := fileState{end: from, endsNL: true}
	lr := newLineReader(io.NewSectionReader(f, from, math.MaxInt64-from), from, from == 0)
	for {
		l, err := lr.next()
		if errors.Is(err, io.EOF) {
			return st, nil
		}
		if err != nil {
			return st, fmt.Errorf("audit: read %s: %w", name, err)
		}
		st.end = l.off + l.size
		st.endsNL = l.complete
		if l.tooLong {
			st.trailing = appendProblem(st.trailing, tooLongProblem(name, l))
			continue
		}
		// A record that lacks only its newline (no strict prefix of a
		// JSON object is one) counts: the next append completes its line.
		rec, ok := decodeLine(l.b)
		if !ok {
			st.trailing = appendProblem(st.trailing, corruptProblem(name, l))
			continue
		}
		if !st.found {
			st.found, st.firstSeq = true, rec.Seq
		}
		st.lastSeq, st.lastHash = rec.Seq, hashLine(l.b)
		st.trailing = nil
	}
}

// appendProblem adds p to list unless the list is full.
func appendProblem(list []Problem, p Problem) []Problem {
	if len(list) >= maxReported {
		return list
	}
	return append(list, p)
}
