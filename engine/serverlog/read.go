package serverlog

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"time"

	"github.com/voltmcp/voltmcp/safefile"
)

// maxReadLine bounds one line read back: a record's text is at most
// MaxLineBytes, which JSON escaping can grow sixfold.
const maxReadLine = 8 * MaxLineBytes

// followPoll is how often [Follow] looks for new lines.
const followPoll = 200 * time.Millisecond

// Read calls fn with each record of the log at path, the older
// generation first, and stops at fn's first error, which it returns. A
// log that does not exist yet has no records. A line that is not a
// record (a torn line, another program's text) is passed on as a
// [KindNote] record saying so.
func Read(path string, fn func(Record) error) error {
	cur, err := openRead(path)
	if err != nil {
		return err
	}
	if cur != nil {
		defer cur.Close()
	}
	if err := readOld(path, cur, fn); err != nil {
		return err
	}
	if cur == nil {
		return nil
	}
	var r lineReader
	return r.read(cur, fn)
}

// Follow is [Read], then it waits for new records and calls fn with
// each, across rotations, until ctx ends (returning nil) or fn fails.
// It looks for new records five times a second; when the log was rotated
// twice between two looks, the generation in between is read whole
// before the newest one (a log rotated more often than that loses its
// older generations to rotation itself).
func Follow(ctx context.Context, path string, fn func(Record) error) error {
	tick := time.NewTicker(followPoll)
	defer tick.Stop()
	return follow(path, fn, func() bool {
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
			return true
		}
	})
}

// follow is Follow, waiting between looks with wait, which reports false
// to end it.
func follow(path string, fn func(Record) error, wait func() bool) error {
	cur, err := openRead(path)
	if err != nil {
		return err
	}
	defer func() {
		if cur != nil {
			cur.Close()
		}
	}()
	if err := readOld(path, cur, fn); err != nil {
		return err
	}
	var r lineReader
	for {
		if cur != nil {
			if err := r.read(cur, fn); err != nil {
				return err
			}
		}
		// A rotation renamed the file read: what was written to it
		// before is read above, and the new one from its start.
		if info, err := os.Lstat(path); err == nil {
			curInfo, _ := statOf(cur)
			if curInfo == nil || !os.SameFile(info, curInfo) {
				next, err := openRead(path)
				if err != nil {
					return err
				}
				if cur != nil {
					if err := r.read(cur, fn); err != nil {
						next.Close()
						return err
					}
					err := readBetween(path, curInfo, next, fn)
					cur.Close()
					if err != nil {
						next.Close()
						return err
					}
				}
				cur, r = next, lineReader{}
				continue
			}
		}
		if !wait() {
			return nil
		}
	}
}

// readBetween reads, whole, the older generation of the log at path when
// it is neither the file last read (curInfo: one rotation since) nor
// next, the newest: then the log was rotated twice since the last look,
// and that generation was never read.
func readBetween(path string, curInfo os.FileInfo, next *os.File, fn func(Record) error) error {
	old, err := openRead(path + ".1")
	if err != nil || old == nil {
		return err
	}
	defer old.Close()
	oi, err := old.Stat()
	if err != nil {
		return err
	}
	if curInfo != nil && os.SameFile(oi, curInfo) {
		return nil
	}
	if ni, _ := statOf(next); ni != nil && os.SameFile(oi, ni) {
		return nil
	}
	var r lineReader
	return r.read(old, fn)
}

// statOf returns what fstat says of f, nil for a nil f.
func statOf(f *os.File) (os.FileInfo, error) {
	if f == nil {
		return nil, nil
	}
	return f.Stat()
}

// openRead opens the log at path for reading as safefile does (a
// regular file only, never blocking); nil for a log that does not exist.
func openRead(path string) (*os.File, error) {
	f, _, err := safefile.Open(path, &safefile.ReadOptions{MaxSize: -1, NoFollow: true})
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return f, err
}

// readOld reads the older generation of the log at path, unless it is
// cur (a rotation between the two opens).
func readOld(path string, cur *os.File, fn func(Record) error) error {
	old, err := openRead(path + ".1")
	if err != nil || old == nil {
		return err
	}
	defer old.Close()
	if ci, _ := statOf(cur); ci != nil {
		if oi, err := old.Stat(); err == nil && os.SameFile(oi, ci) {
			return nil
		}
	}
	var r lineReader
	return r.read(old, fn)
}

// lineReader reads the whole lines of a file from where it stopped,
// keeping a line whose newline has not come yet.
type lineReader struct {
	partial []byte
	skip    bool // the line in progress is over maxReadLine: skip it
}

// read reads f to its end and calls fn with each whole line's record.
func (r *lineReader) read(f *os.File, fn func(Record) error) error {
	br := bufio.NewReaderSize(f, 64<<10)
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 && !r.skip {
			r.partial = append(r.partial, chunk...)
		}
		if len(r.partial) > maxReadLine {
			r.partial, r.skip = r.partial[:0], true
		}
		switch {
		case err == nil:
			line := bytes.TrimSuffix(r.partial, []byte("\n"))
			skipped := r.skip
			r.partial, r.skip = r.partial[:0], false
			if skipped {
				line = nil
			}
			if err := fn(parse(line)); err != nil {
				return err
			}
		case errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF):
			return nil
		default:
			return err
		}
	}
}

// parse returns the record of one line.
func parse(line []byte) Record {
	var rec Record
	if err := json.Unmarshal(line, &rec); err != nil || rec.Kind == "" {
		return Record{Kind: KindNote, Text: "a line of the log is not a record"}
	}
	return rec
}
