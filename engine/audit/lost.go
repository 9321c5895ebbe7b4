package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/voltmcp/voltmcp/safefile"
)

// A writer that cannot write the log keeps count of the records it lost
// in a note beside it, <path>.lost, so that the loss outlives the
// process: the next writer that writes the log (this process or
// another) names the records in an audit_gap record and takes them off
// the note, and Verify reports a note that none has named yet. The note
// is small and written whole (safefile.Update, serialized between
// processes), so it can be written where the log cannot grow.

// LostNote is what the note of lost records holds.
type LostNote struct {
	// Records is how many records were lost and are not yet named by
	// an audit_gap record.
	Records int64 `json:"lost"`
	// Since is when the first of them was lost, Error the first
	// failure.
	Since time.Time `json:"since"`
	Error string    `json:"error,omitempty"`
}

// maxLostNote bounds the note a reader takes in.
const maxLostNote = 64 << 10

// LostPath is the note of lost records of the log whose active file is
// path.
func LostPath(path string) string { return path + ".lost" }

// NoteLost adds n lost records to the note of the log at path; since and
// cause are kept when the note has none yet.
func NoteLost(ctx context.Context, path string, n int64, since time.Time, cause string) error {
	return editLost(ctx, path, func(note *LostNote) {
		if note.Records <= 0 {
			note.Since, note.Error = since, cause
		}
		note.Records += n
	})
}

// ForgetLost takes n records, now named by an audit_gap record in the
// log, off the note of the log at path. Records another writer noted
// meanwhile stay.
func ForgetLost(ctx context.Context, path string, n int64) error {
	return editLost(ctx, path, func(note *LostNote) {
		note.Records -= n
		if note.Records <= 0 {
			*note = LostNote{}
		}
	})
}

// PendingLost reads the note of the log at path: the zero LostNote when
// there is none.
func PendingLost(path string) (LostNote, error) {
	var note LostNote
	b, err := safefile.ReadFile(LostPath(path), &safefile.ReadOptions{MaxSize: maxLostNote})
	if errors.Is(err, fs.ErrNotExist) {
		return note, nil
	}
	if err != nil {
		return note, fmt.Errorf("audit: lost records: %w", err)
	}
	if len(b) == 0 {
		return note, nil
	}
	if err := json.Unmarshal(b, &note); err != nil {
		return note, fmt.Errorf("audit: lost records: %s: %w", LostPath(path), err)
	}
	return note, nil
}

func editLost(ctx context.Context, path string, edit func(*LostNote)) error {
	err := safefile.Update(ctx, LostPath(path), &safefile.WriteOptions{Read: &safefile.ReadOptions{MaxSize: maxLostNote}}, func(old []byte) ([]byte, error) {
		var note LostNote
		if len(old) > 0 {
			// A note that does not parse is counted from zero rather
			// than left to block every later note.
			_ = json.Unmarshal(old, &note)
		}
		edit(&note)
		return json.Marshal(note)
	})
	if err != nil {
		return fmt.Errorf("audit: lost records: %w", err)
	}
	return nil
}
