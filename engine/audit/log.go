package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/voltmcp/voltmcp/safefile"
)

// Defaults of Options.
const (
	DefaultMaxFileBytes = 16 << 20
	DefaultMaxFiles     = 8
)

// maxProblems bounds the problems a Log keeps for Problems.
const maxProblems = maxReported

// ErrClosed is returned by Append on a closed Log.
var ErrClosed = errors.New("audit: log closed")

// WriteError is the error of an append that could not write to the log
// file (a full disk, a file too large, an I/O error, a file that can no
// longer be opened or locked): Records of the records given may not be
// in the log. An append whose only trouble is a record that cannot be
// encoded returns no WriteError.
type WriteError struct {
	Records int
	Err     error
}

func (e *WriteError) Error() string { return e.Err.Error() }

func (e *WriteError) Unwrap() error { return e.Err }

// Options tune a Log. The zero value (or a nil *Options) is a log that
// rotates at 16 MiB, keeps 8 rotated files, writes strings as given and
// does not fsync.
type Options struct {
	// MaxFileBytes rotates the active file when appending a line would
	// make it larger. Zero means DefaultMaxFileBytes (16 MiB); a negative
	// value never rotates. A line larger than the limit still goes into a
	// file of its own.
	MaxFileBytes int64
	// MaxFiles is how many rotated files are kept; older ones are deleted
	// at rotation. Zero means DefaultMaxFiles (8); a negative value keeps
	// every rotated file, for an operator who archives them elsewhere.
	MaxFiles int
	// Redact is applied to every string of a record — fields, argument
	// keys and descriptions, policy reasons, and every key and string
	// value inside Detail — before the record is encoded. It must be safe
	// for concurrent use. Nil leaves strings as they are.
	Redact func(string) string
	// Now is the clock for records without a time. Nil means time.Now.
	Now func() time.Time
	// Sync calls fsync after every append, so that a record survives a
	// power loss or kernel crash, not only the death of the process. It
	// costs a disk flush per record. False leaves flushing to the kernel.
	Sync bool
	// HoldLock keeps the log's file lock for this long after an append
	// takes it, so that the appends that follow within that time skip
	// three of an append's four system calls: taking the lock, looking
	// for other processes' records, and letting the lock go. Another
	// process waits at most this long (plus its own backoff) for the log.
	// Zero lets the lock go after each append.
	HoldLock time.Duration
	// Journal keeps the intents of Log.Intend in an intent journal, a
	// file of this Log's own mapped into memory, so that writing an
	// intent ahead of its call costs no system call; the intent joins
	// the log with the records that follow it (see Log.Intend). It is
	// for a long-lived writer: making the journal costs a few system
	// calls at Open. False makes Intend fail, for the caller to Append
	// the intent instead. Either way Open recovers the intents that the
	// journals of ended writers still hold.
	Journal bool
}

// Log appends records to an audit log. Its methods are safe for
// concurrent use.
type Log struct {
	path   string
	opts   Options
	mu     sync.Mutex
	f      *os.File    // the active file, O_APPEND
	fi     os.FileInfo // f's identity, from fstat when f was opened; nil when unknown
	lock   *os.File    // <path>.lock, nil where there is no flock
	closed bool

	// held is true while the lock is kept between appends (HoldLock);
	// release lets it go.
	held    bool
	release *time.Timer

	// buf holds the line being written, reused from one append to the
	// next; enc encodes into it.
	buf bytes.Buffer
	enc *json.Encoder
	// line holds the line appendLine wrote, reused as buf is.
	line []byte
	// batch holds the lines of an AppendAll until they are written,
	// reused from one append to the next.
	batch []byte

	// details maps a record's DetailKey to its Detail, redacted and
	// encoded; it starts over when full (maxDetails).
	details map[string][]byte

	size      int64  // bytes of the active file this Log knows of
	seq       int64  // seq of the last record
	prev      string // hash of the last record's line
	fileFirst int64  // seq the active file starts with: the name it gets at rotation
	newline   bool   // the active file ends mid-line: write a newline first
	dirty     bool   // a write failed: look at the file again before the next
	problems  []Problem

	// journal is the Log's intent journal (Options.Journal), nil when it
	// has none.
	journal *journal
}

// Open opens the audit log whose active file is path, creating it and its
// directory when missing, and reads enough of it to go on with the chain:
// the last record of the active file or, when it has none, of the newest
// rotated file. Damage found at the end (a torn line after a crash) does
// not fail Open: it is reported by Problems, and the next record starts
// on a fresh line. opts may be nil.
func Open(path string, opts *Options) (*Log, error) {
	if path == "" {
		return nil, errors.New("audit: open: empty path")
	}
	l := &Log{path: path}
	if opts != nil {
		l.opts = *opts
	}
	if l.opts.MaxFileBytes == 0 {
		l.opts.MaxFileBytes = DefaultMaxFileBytes
	}
	if l.opts.MaxFiles == 0 {
		l.opts.MaxFiles = DefaultMaxFiles
	}
	if l.opts.Now == nil {
		l.opts.Now = time.Now
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("audit: open: %w", err)
	}
	lock, err := openLock(path)
	if err != nil {
		return nil, fmt.Errorf("audit: open: %w", err)
	}
	l.lock = lock
	if err := lockFile(context.Background(), l.lock, func() {}); err != nil {
		l.closeFiles()
		return nil, fmt.Errorf("audit: open: lock: %w", err)
	}
	err = l.reopen()
	unlockFile(l.lock)
	if err != nil {
		l.closeFiles()
		return nil, err
	}
	l.recoverJournals()
	if l.opts.Journal {
		j, err := openJournal(path)
		if err != nil {
			l.note(Problem{Kind: ProblemJournal, File: journalDir(path), Message: fmt.Sprintf("no intent journal, intents are appended: %v", err)})
		}
		l.journal = j
	}
	return l, nil
}

// Intend keeps r, a call_intent record, in the Log's intent journal
// (Options.Journal): r is redacted as Append redacts it and stored in the
// journal's shared mapping, where it survives the process as an
// unsynced append does, without a system call. The returned Pending's
// Record goes to the log with the records that follow it (Append,
// AppendAll, in order), and Pending.Name makes the call's record name it
// there; the journal lets go of r once the log holds it. Should the
// process end first, the next Open of the log appends r from the
// journal. Intend fails when the Log has no journal, the journal is full
// or r does not fit one of its slots: the caller then appends r itself.
func (l *Log) Intend(r Record) (*Pending, error) {
	j := l.journal
	if j == nil {
		return nil, errors.New("audit: no intent journal")
	}
	if r.Kind != KindCallIntent {
		return nil, fmt.Errorf("audit: intend: a %s record is not an intent", r.Kind)
	}
	r = prepare(r, l.opts.Now, l.opts.Redact)
	var buf [journalSlotBytes]byte
	line, ok := appendLine(buf[:0], &r, nil)
	if !ok {
		return nil, errJournalFull
	}
	slot, err := j.put(bytes.TrimSuffix(line, []byte("\n")))
	if err != nil {
		return nil, err
	}
	return &Pending{j: j, slot: slot, rec: r}, nil
}

// recoverJournals appends the intents that the journals of ended writers
// still hold (see journal.go) and deletes the journals. A journal whose
// intents cannot be appended is kept for the next Open. It runs before
// the Log has a journal of its own.
func (l *Log) recoverJournals() {
	dir := journalDir(l.path)
	ents, err := os.ReadDir(dir)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			l.note(Problem{Kind: ProblemJournal, File: dir, Message: fmt.Sprintf("intent journals not recovered: %v", err)})
		}
		return
	}
	for i, e := range ents {
		if i == maxJournalFiles {
			l.note(Problem{Kind: ProblemJournal, File: dir, Message: fmt.Sprintf("more than %d intent journals: the rest wait for the next open", maxJournalFiles)})
			break
		}
		if !journalName(e.Name()) {
			continue
		}
		name := filepath.Join(dir, e.Name())
		f, b, err := takeDeadJournal(name)
		if err != nil {
			l.note(Problem{Kind: ProblemJournal, File: name, Message: fmt.Sprintf("intent journal not recovered: %v", err)})
			continue
		}
		if f == nil {
			continue
		}
		recs, damaged := journalIntents(b)
		for k := range recs {
			recs[k].Seq, recs[k].Prev, recs[k].Intent = 0, "", 0
			recs[k].Reason = recoveredReason(e.Name())
		}
		if damaged > 0 {
			since := time.Now()
			if fi, err := f.Stat(); err == nil {
				since = fi.ModTime()
			}
			recs = append(recs, Record{Kind: KindAuditGap, Status: "resumed", Detail: map[string]any{"lost": damaged,
				"since": since.UTC().Format(time.RFC3339Nano), "error": fmt.Sprintf("%d intents in the journal %s of an ended process could not be read", damaged, e.Name())}})
		}
		if len(recs) > 0 {
			if err := l.AppendAll(context.Background(), recs); err != nil {
				l.note(Problem{Kind: ProblemJournal, File: name, Message: fmt.Sprintf("intent journal not recovered: %v", err)})
				_ = f.Close()
				continue
			}
		}
		if err := os.Remove(name); err != nil {
			l.note(Problem{Kind: ProblemJournal, File: name, Message: fmt.Sprintf("recovered intent journal not deleted: %v", err)})
		}
		_ = f.Close()
	}
}

// Problems returns what Open found at the end of the log (a torn or
// corrupt last line, left in place and skipped), and what the log worked
// around since (a failed rotation, a file that shrank). It keeps at most
// 100.
func (l *Log) Problems() []Problem {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Problem(nil), l.problems...)
}

// Head returns the seq and line hash of the last record written, or 0 and
// "" for an empty log. Keeping them somewhere the log's writer cannot
// reach protects the newest records, which no later line vouches for yet.
func (l *Log) Head() (seq int64, hash string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq, l.prev
}

// Append writes r as the next record: it sets Seq and Prev, sets a zero
// Time to now, applies Options.Redact, and writes the line with one
// write(2). A record whose line would exceed MaxLineBytes is shrunk (see
// Record) rather than refused. The context bounds the wait for another
// process's lock; the write itself is not interrupted. After an error the
// record may or may not be in the file; the log stays usable. A hook set
// with WithBeforeWait runs before Append first waits.
func (l *Log) Append(ctx context.Context, r Record) error {
	return l.AppendAll(ctx, []Record{r})
}

// AppendAll writes rs, in order, as the next records, each as Append
// writes one, with one write(2) for all of them: the lock is taken, and
// the file looked at for other processes' records, once. A rotation
// between two of them splits the write in two. When a write fails, the
// records of that write may or may not be in the file, and those after
// it are not written; the error says how many of rs that is. A record
// that cannot be encoded is left out, the others chained as if it had
// not been, and the error names its place in rs.
func (l *Log) AppendAll(ctx context.Context, rs []Record) error {
	_, err := l.AppendAllSeq(ctx, rs)
	return err
}

// AppendAllSeq is AppendAll that also returns the seq of the last
// record written: the seq a record of its own got, for a caller that
// names it in a later record (an outcome naming its intent).
func (l *Log) AppendAllSeq(ctx context.Context, rs []Record) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if len(rs) == 0 {
		return 0, nil
	}
	// Redaction and the rest of prepare need no lock.
	type prepared struct {
		r      Record
		detail map[string]any // the Detail of a keyed record, encoded under l.mu
	}
	var one [1]prepared // Append's, on the stack
	ps := one[:0]
	if len(rs) > 1 {
		ps = make([]prepared, 0, len(rs))
	}
	for _, r := range rs {
		var detail map[string]any
		if r.DetailKey != "" && len(r.Detail) > 0 {
			detail, r.Detail = r.Detail, nil
		}
		ps = append(ps, prepared{prepare(r, l.opts.Now, l.opts.Redact), detail})
	}

	wait := beforeWait(ctx)
	if !l.mu.TryLock() {
		wait() // another append is in progress
		l.mu.Lock()
	}
	defer l.mu.Unlock()
	if l.closed {
		return 0, ErrClosed
	}
	// While the lock is held from an earlier append, no other process
	// has written: there is nothing to catch up with, unless a write of
	// ours failed.
	locked := !l.held
	if locked {
		if err := lockFile(ctx, l.lock, wait); err != nil {
			if ctx.Err() != nil {
				return 0, fmt.Errorf("audit: append: lock: %w", err)
			}
			return 0, &WriteError{len(rs), fmt.Errorf("audit: append: lock: %w", err)}
		}
		if l.opts.HoldLock > 0 && l.lock != nil {
			l.hold()
		} else {
			defer unlockFile(l.lock)
		}
	}
	if locked || l.dirty {
		if err := l.catchUp(); err != nil {
			l.dirty = true // look again next time
			return 0, &WriteError{len(rs), err}
		}
	}
	defer l.releaseBuf()

	// batch holds the lines not yet written, the records from first on;
	// seq and prev are where the chain stands once they are.
	batch, first := l.batch[:0], 0
	seq, prev := l.seq, l.prev
	// pend are the journaled intents (Log.Intend) among the records in
	// batch: their slots are freed once the batch is written.
	var pend []*Pending
	write := func(next int) error {
		if len(batch) == 0 {
			first = next
			return nil
		}
		n, err := l.f.Write(batch)
		l.size += int64(n)
		batch = batch[:0]
		if err == nil {
			for _, p := range pend {
				if !p.freed { // a record appended twice frees its slot once
					p.freed = true
					p.j.done(p.slot)
				}
			}
		}
		pend = pend[:0]
		if err != nil {
			l.dirty = true
			if len(rs) > 1 {
				return &WriteError{len(rs) - first, fmt.Errorf("audit: append: %d of %d records may not be written: %w", len(rs)-first, len(rs), err)}
			}
			return &WriteError{1, fmt.Errorf("audit: append: %w", err)}
		}
		l.seq, l.prev, l.newline = seq, prev, false
		if l.opts.Sync {
			if err := l.f.Sync(); err != nil {
				return &WriteError{len(rs) - first, fmt.Errorf("audit: append: sync: %w", err)}
			}
		}
		first = next
		return nil
	}
	defer func() { l.batch = batch[:0] }()
	var errs []error
	for i, p := range ps {
		r := p.r
		var encodedDetail []byte
		if p.detail != nil {
			if encodedDetail = l.detail(r.DetailKey, p.detail); encodedDetail == nil {
				r.Detail = plainDetail(p.detail, l.opts.Redact)
			}
		}
		r.Seq, r.Prev = seq+1, prev
		if r.intentOf != nil {
			r.Intent = r.intentOf.seq
		}
		line, err := l.encodeWith(r, encodedDetail)
		if err == nil && len(line)-1 > MaxLineBytes {
			if encodedDetail != nil {
				r.Detail = plainDetail(p.detail, l.opts.Redact)
			}
			line, err = l.encode(shrink(r, len(line)-1))
		}
		if err != nil {
			// This record is lost, not the others.
			if len(rs) > 1 {
				err = fmt.Errorf("%w (record %d of %d)", err, i+1, len(rs))
			}
			errs = append(errs, err)
			continue
		}
		extra := int64(0)
		if l.newline && len(batch) == 0 {
			extra = 1
		}
		if size := l.size + int64(len(batch)); l.opts.MaxFileBytes > 0 && size > 0 && size+extra+int64(len(line)) > l.opts.MaxFileBytes {
			// The file is full: what waits goes into it, this record
			// into the next.
			if err := write(i); err != nil {
				return 0, errors.Join(append(errs, err)...)
			}
			if err := l.rotate(); err != nil {
				l.note(Problem{Kind: ProblemRotate, File: l.path, Offset: l.size, Seq: r.Seq,
					Message: fmt.Sprintf("rotation failed, appending to the active file: %v", err)})
			}
			extra = 0
			if l.newline {
				extra = 1 // the rotation failed, and the file ends mid-line
			}
		}
		if extra == 1 {
			batch = append(batch, '\n')
		}
		batch = append(batch, line...)
		seq, prev = r.Seq, hashLine(line[:len(line)-1])
		if r.pending != nil {
			r.pending.seq = r.Seq
			pend = append(pend, r.pending)
		}
	}
	if err := write(len(ps)); err != nil {
		errs = append(errs, err)
	}
	return l.seq, errors.Join(errs...)
}

// hold keeps the lock just taken for HoldLock. It runs with l.mu held.
func (l *Log) hold() {
	l.held = true
	if l.release == nil {
		l.release = time.AfterFunc(l.opts.HoldLock, l.letGo)
	} else {
		l.release.Reset(l.opts.HoldLock)
	}
}

// letGo lets go of a lock kept by hold.
func (l *Log) letGo() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held && l.lock != nil {
		unlockFile(l.lock)
	}
	l.held = false
}

// Close closes the log, letting go of its lock. Appends after Close
// fail with ErrClosed; Close may be called more than once.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	if l.release != nil {
		l.release.Stop()
	}
	l.held = false
	err := l.closeFiles()
	if l.journal != nil {
		if jerr := l.journal.close(); jerr != nil {
			err = errors.Join(err, fmt.Errorf("audit: close: intent journal: %w", jerr))
		}
	}
	return err
}

func (l *Log) closeFiles() error {
	var errs []error
	if l.f != nil {
		errs = append(errs, l.f.Close())
		l.f, l.fi = nil, nil
	}
	if l.lock != nil {
		errs = append(errs, l.lock.Close())
		l.lock = nil
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("audit: close: %w", err)
	}
	return nil
}

// encode returns r's line, newline included. The line is held in l.line
// or l.buf: it is valid until the next encode. It runs with l.mu held.
func (l *Log) encode(r Record) ([]byte, error) {
	return l.encodeWith(r, nil)
}

// encodeLine encodes v, a record, as encode does.
func (l *Log) encodeLine(v any) ([]byte, error) {
	if l.enc == nil {
		l.enc = json.NewEncoder(&l.buf)
		l.enc.SetEscapeHTML(false)
	}
	l.buf.Reset()
	if err := l.enc.Encode(v); err != nil {
		return nil, fmt.Errorf("audit: encode: %w", err)
	}
	return l.buf.Bytes(), nil
}

// encodeWith is encode for a record whose Detail comes already encoded,
// when detail is not nil. The detail is the record's last field, so the
// line is the one encode would make of the record with its Detail. The
// line is written by hand (appendLine) when it can be, by encoding/json
// otherwise.
func (l *Log) encodeWith(r Record, detail []byte) ([]byte, error) {
	if line, ok := appendLine(l.line[:0], &r, detail); ok {
		l.line = line
		return line, nil
	}
	if detail == nil {
		return l.encodeLine(r)
	}
	r.Detail = nil
	return l.encodeLine(struct {
		Record
		Detail json.RawMessage `json:"detail"`
	}{r, detail})
}

// maxDetails bounds how many encoded details a Log keeps.
const maxDetails = 1024

// detail returns d, redacted and encoded as encode encodes a record's
// Detail, kept under key; nil when it cannot be encoded. It runs with
// l.mu held.
func (l *Log) detail(key string, d map[string]any) []byte {
	if b, ok := l.details[key]; ok {
		return b
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(plainDetail(d, l.opts.Redact)); err != nil {
		return nil
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if l.details == nil || len(l.details) >= maxDetails {
		l.details = make(map[string][]byte)
	}
	l.details[key] = b
	return b
}

// maxKeptBuf bounds the line buffer a Log keeps between appends: an
// occasional large record does not pin its memory.
const maxKeptBuf = 64 << 10

// releaseBuf lets go of a line or batch buffer grown beyond maxKeptBuf. It runs
// with l.mu held.
func (l *Log) releaseBuf() {
	if l.buf.Cap() > maxKeptBuf {
		l.buf = bytes.Buffer{}
	}
	if cap(l.line) > maxKeptBuf {
		l.line = nil
	}
	if cap(l.batch) > maxKeptBuf {
		l.batch = nil
	}
}

// note keeps a problem for Problems.
func (l *Log) note(p Problem) {
	if len(l.problems) < maxProblems {
		l.problems = append(l.problems, p)
	}
}

// reopen opens the active file afresh and reads where the chain stands.
// It runs with the process lock held.
func (l *Log) reopen() error {
	if l.f != nil {
		_ = l.f.Close()
		l.f, l.fi = nil, nil
	}
	// Not a FIFO, device or link in the log's place: it would block
	// the writer, or take records somewhere else.
	f, fi, err := safefile.OpenAppend(l.path, 0o600)
	if err != nil {
		return fmt.Errorf("audit: open: %w", err)
	}
	if fi.Mode().Perm()&^0o600 != 0 {
		if err := f.Chmod(0o600); err != nil {
			_ = f.Close()
			return fmt.Errorf("audit: open: %w", err)
		}
	}
	st, err := scanState(f, l.path, 0)
	if err != nil {
		_ = f.Close()
		return err
	}
	knownSeq, knownPrev := l.seq, l.prev
	l.f, l.fi, l.size, l.newline, l.dirty = f, fi, st.end, !st.endsNL, false
	for _, p := range st.trailing {
		l.note(p)
	}
	if st.found {
		l.seq, l.prev, l.fileFirst = st.lastSeq, st.lastHash, st.firstSeq
	} else {
		l.seq, l.prev = 0, ""
		rot, err := listRotated(l.path)
		if err != nil {
			return fmt.Errorf("audit: open: %w", err)
		}
		for i := len(rot) - 1; i >= 0; i-- {
			rf, err := os.Open(rot[i].path)
			if err != nil {
				return fmt.Errorf("audit: open: %w", err)
			}
			rst, err := scanState(rf, rot[i].path, 0)
			_ = rf.Close()
			if err != nil {
				return err
			}
			if rst.found {
				l.seq, l.prev = rst.lastSeq, rst.lastHash
				break
			}
		}
		l.fileFirst = l.seq + 1
	}
	if knownSeq > l.seq {
		// Records this process wrote are gone. Chain from what it wrote,
		// so that the loss shows in Verify instead of being papered over.
		l.note(Problem{Kind: ProblemShrunk, File: l.path, Offset: l.size, Seq: knownSeq,
			Message: fmt.Sprintf("the log ends at seq %d, but seq %d was written: records were removed", l.seq, knownSeq)})
		l.seq, l.prev = knownSeq, knownPrev
	}
	return nil
}

// catchUp makes the Log's view of the file current before an append: it
// follows a rotation or an append by another process, and looks again
// after a failed write. It runs with the process lock held.
//
// Where there is flock (Unix), one stat of the path tells all of it. The
// identity of the open file (device and inode) comes from the fstat when
// it was opened: it cannot change while the file is open, and no other
// file can take it over. When the path still names that file, the stat
// read that very inode, so its size is the open file's size. Elsewhere
// the open file is asked for its size as well.
func (l *Log) catchUp() error {
	if l.f == nil {
		return l.reopen() // an earlier reopen failed
	}
	fi := l.fi
	if fi == nil || l.lock == nil {
		var err error
		if fi, err = l.f.Stat(); err != nil {
			return fmt.Errorf("audit: append: %w", err)
		}
		l.fi = fi
	}
	pi, err := os.Stat(l.path)
	if err != nil || !os.SameFile(fi, pi) {
		return l.reopen()
	}
	size := pi.Size()
	if l.lock == nil {
		size = fi.Size()
	}
	if l.dirty || size < l.size || (size > l.size && l.newline) {
		return l.reopen()
	}
	if size == l.size {
		return nil
	}
	st, err := scanState(l.f, l.path, l.size)
	if err != nil {
		return err
	}
	l.size, l.newline = st.end, !st.endsNL
	if st.found {
		l.seq, l.prev = st.lastSeq, st.lastHash
	}
	for _, p := range st.trailing {
		l.note(p)
	}
	return nil
}

// rotate renames the active file after the seq of its first record,
// starts a new one, and deletes the rotated files beyond MaxFiles. It runs
// with the process lock held.
func (l *Log) rotate() error {
	name := rotatedName(l.path, l.fileFirst)
	if _, err := os.Lstat(name); err == nil {
		return fmt.Errorf("%s already exists", filepath.Base(name))
	}
	if err := os.Rename(l.path, name); err != nil {
		return err
	}
	f, _, err := safefile.OpenAppend(l.path, 0o600)
	if err != nil {
		// Go on in the renamed file; the next append looks again.
		l.dirty = true
		return err
	}
	_ = l.f.Close()
	l.f, l.fi, l.size, l.newline, l.fileFirst = f, nil, 0, false, l.seq+1
	if l.opts.Sync {
		if d, err := os.Open(filepath.Dir(l.path)); err == nil {
			_ = d.Sync()
			_ = d.Close()
		}
	}
	if l.opts.MaxFiles < 0 {
		return nil
	}
	rot, err := listRotated(l.path)
	if err != nil {
		return err
	}
	var errs []error
	for i := 0; i < len(rot)-l.opts.MaxFiles; i++ {
		if err := os.Remove(rot[i].path); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

type beforeWaitKey struct{}

// WithBeforeWait returns a context that makes Append call f before it
// first waits: for another goroutine's append in progress, or for
// another process's hold on the file lock. f runs at most once per
// Append, and not at all when the append waits for nothing. A caller
// that must not block while others depend on it (a connection's only
// reader, say) hands that work over in f; an append that need not wait
// then costs no handover.
func WithBeforeWait(ctx context.Context, f func()) context.Context {
	return context.WithValue(ctx, beforeWaitKey{}, f)
}

// beforeWait returns the hook WithBeforeWait put in ctx, made to run at
// most once, or a function that does nothing.
func beforeWait(ctx context.Context) func() {
	f, _ := ctx.Value(beforeWaitKey{}).(func())
	if f == nil {
		return func() {}
	}
	return sync.OnceFunc(f)
}
