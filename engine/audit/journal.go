package audit

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// An intent journal is where a long-lived writer keeps the intents it
// wrote ahead of their calls (Log.Intend) until the log holds them: a
// file of its own, mapped into its memory, so that writing an intent
// ahead of its call is a copy into memory rather than a system call.
//
// A store into a shared mapping of a file is in the kernel's page cache
// once it is made, as a write(2) is: it survives the process (a crash,
// SIGKILL, the OOM killer), though not the machine, exactly as the log's
// own unsynced appends do. The journal's blocks are allocated when it is
// made, so a store never meets a full disk. The writer holds an exclusive
// flock on its journal for as long as it lives; a journal whose flock can
// be taken belongs to a process that ended, and the next Open of the log
// appends the intents it still holds (Log.recoverJournals) and deletes it.
//
// The journal lives in the directory <path>.intents beside the log's
// active file, one file per writer, named j-<pid>-<random>. It is made of
// journalSlots slots of journalSlotBytes bytes: a state byte (slotFree or
// slotPending), three bytes of padding, the length of the record as a
// little-endian uint32, and the record as JSON. The state byte is stored
// last when an intent is written and first when it is done, so that a
// slot caught halfway by a crash is free, or holds an intent that fails to
// decode and is reported as lost (an audit_gap record).

// Bounds of an intent journal.
const (
	journalSlotBytes = 1024
	journalSlots     = 128
	journalBytes     = journalSlotBytes * journalSlots
	// maxJournalFiles bounds how many journals one Open looks at.
	maxJournalFiles = 256
)

// Slot states.
const (
	slotFree    = 0
	slotPending = 'I'
)

// errJournalFull is Log.Intend's answer when every slot holds an intent
// (or the intent does not fit one): the caller writes it to the log.
var errJournalFull = errors.New("audit: intent journal full")

// journalDir is where the intent journals of the log at path live.
func journalDir(path string) string { return path + ".intents" }

// journal is one writer's intent journal (see above).
type journal struct {
	path string
	f    *os.File
	mem  []byte // the mapping, journalBytes long

	mu     sync.Mutex
	free   []int // free slots
	closed bool  // mem is unmapped
}

// Pending is an intent in a journal (Log.Intend) on its way to the log:
// the intent record that Record returns goes to the log, and the call's
// record named by Name names it there. Its slot is freed once the log has
// taken the record.
type Pending struct {
	j    *journal
	slot int
	rec  Record
	// seq is the seq the intent got in the log, once written, and freed
	// says its slot was freed; both are set under the Log's mu.
	seq   int64
	freed bool
}

// Record returns the intent record to append to the log, after which the
// journal lets go of it.
func (p *Pending) Record() Record {
	r := p.rec
	r.pending = p
	return r
}

// Name makes r, a record appended after p's intent record by the same
// Log, name the intent (Record.Intent).
func (p *Pending) Name(r *Record) { r.intentOf = p }

// put copies line into a free slot and returns it.
func (j *journal) put(line []byte) (int, error) {
	if len(line) > journalSlotBytes-8 {
		return 0, errJournalFull
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	n := len(j.free)
	if n == 0 || j.closed {
		return 0, errJournalFull
	}
	slot := j.free[n-1]
	j.free = j.free[:n-1]
	s := j.mem[slot*journalSlotBytes : (slot+1)*journalSlotBytes]
	binary.LittleEndian.PutUint32(s[4:8], uint32(len(line)))
	copy(s[8:], line)
	s[0] = slotPending
	return slot, nil
}

// done frees slot, once the log holds its intent.
func (j *journal) done(slot int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return
	}
	j.mem[slot*journalSlotBytes] = slotFree
	j.free = append(j.free, slot)
}

// close lets go of the journal: deleted when it holds no intent, kept for
// the next Open of the log to recover otherwise.
func (j *journal) close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil
	}
	j.closed = true
	var errs []error
	if len(j.free) == journalSlots {
		if err := os.Remove(j.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if err := unmapJournal(j.mem); err != nil {
		errs = append(errs, err)
	}
	if err := j.f.Close(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// journalIntents decodes the intents a journal's bytes hold: the records,
// and how many slots held one that does not decode.
func journalIntents(b []byte) (recs []Record, damaged int) {
	for off := 0; off+journalSlotBytes <= len(b); off += journalSlotBytes {
		s := b[off : off+journalSlotBytes]
		if s[0] != slotPending {
			continue
		}
		n := int(binary.LittleEndian.Uint32(s[4:8]))
		var r Record
		if n > journalSlotBytes-8 || json.Unmarshal(s[8:8+n], &r) != nil || r.Kind != KindCallIntent {
			damaged++
			continue
		}
		recs = append(recs, r)
	}
	return recs, damaged
}

// journalName reports whether name is that of an intent journal.
func journalName(name string) bool {
	return strings.HasPrefix(name, "j-") && !strings.ContainsAny(name, `/\`) && filepath.Base(name) == name
}

// recoveredReason is the Reason of an intent recovered from the journal
// of a process that ended.
func recoveredReason(file string) string {
	return fmt.Sprintf("recovered from the intent journal %s: its process ended before the log held the intent", file)
}

// verifyJournals adds to rep the intents that the journals beside the log
// at path hold (see Verify): each is a call whose outcome is not in the
// log, and a slot that does not decode is a record lost.
func verifyJournals(path string, rep *VerifyReport) {
	dir := journalDir(path)
	ents, err := os.ReadDir(dir)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			rep.Warnings = appendProblem(rep.Warnings, Problem{Kind: ProblemJournal, File: dir, Message: err.Error()})
		}
		return
	}
	for i, e := range ents {
		if i == maxJournalFiles {
			rep.Warnings = appendProblem(rep.Warnings, Problem{Kind: ProblemJournal, File: dir, Message: fmt.Sprintf("more than %d intent journals: the rest were not read", maxJournalFiles)})
			break
		}
		if !journalName(e.Name()) {
			continue
		}
		name := filepath.Join(dir, e.Name())
		b, err := readJournal(name)
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				rep.Warnings = appendProblem(rep.Warnings, Problem{Kind: ProblemJournal, File: name, Message: err.Error()})
			}
			continue
		}
		recs, damaged := journalIntents(b)
		for _, r := range recs {
			rep.UnfinishedCalls++
			rep.Unfinished = appendProblem(rep.Unfinished, Problem{Kind: ProblemUnfinished, File: name,
				Message: fmt.Sprintf("the call of %s.%s at %s has no record of its outcome: its intent is in the journal of a writer that is still running, or that ended before the log held it (the next writer to open the log appends it)",
					r.Server, r.Tool, r.Time.Format(time.RFC3339))})
		}
		if damaged > 0 {
			rep.LostRecords += int64(damaged)
			rep.Lost = appendProblem(rep.Lost, Problem{Kind: ProblemJournal, File: name, Got: strconv.Itoa(damaged),
				Message: fmt.Sprintf("%d intents in the journal cannot be read", damaged)})
		}
	}
}
