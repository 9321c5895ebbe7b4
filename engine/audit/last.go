package audit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
)

// lastChunk is how much Last reads at a time, backward.
const lastChunk = 64 << 10

// Last returns the last n records of the log at path for which match
// reports true, newest first. It reads the files of the log from their
// ends backward (the active file, then the rotated ones, newest first),
// and stops once it has n, or has read maxBytes bytes in all: it never
// reads a whole log to find a few records. Lines that are not records
// (a line being written, a corrupt one, one over MaxLineBytes) are
// skipped, as Tail skips them. A log with no file is no records and no
// error.
func Last(path string, n int, maxBytes int64, match func(Record) bool) ([]Record, error) {
	if n <= 0 || maxBytes <= 0 {
		return nil, nil
	}
	rot, err := listRotated(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("audit: %w", err)
	}
	files := []string{path}
	for i := len(rot) - 1; i >= 0; i-- {
		files = append(files, rot[i].path)
	}
	var out []Record
	budget := maxBytes
	// A rotation while the files are read may show a record twice:
	// newest first, a record's seq is below every one before it.
	var below int64
	for _, name := range files {
		if len(out) >= n || budget <= 0 {
			break
		}
		err := lastOf(name, &budget, func(rec Record) bool {
			if below > 0 && rec.Seq >= below {
				return true
			}
			below = rec.Seq
			if match(rec) {
				out = append(out, rec)
			}
			return len(out) < n
		})
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// lastOf calls fn with the records of the file at name from its last
// line backward, reading at most *budget bytes (and taking what it read
// from it), until fn returns false. A missing file is no records.
func lastOf(name string, budget *int64, fn func(Record) bool) error {
	f, err := openForRead(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	pos := info.Size()
	// tail holds the bytes after pos not yet taken: the start of a line
	// whose beginning lies before pos. skipping is set while the line
	// being put together is over MaxLineBytes: it is dropped.
	var tail []byte
	skipping := false
	for pos > 0 && *budget > 0 {
		size := min(int64(lastChunk), pos, *budget)
		chunk := make([]byte, size, size+int64(len(tail)))
		if _, err := f.ReadAt(chunk, pos-size); err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("audit: read %s: %w", name, err)
		}
		pos -= size
		*budget -= size
		buf := append(chunk, tail...)
		// Every line after the first newline of buf is whole.
		for {
			i := bytes.LastIndexByte(buf, '\n')
			if i < 0 {
				break
			}
			line := buf[i+1:]
			buf = buf[:i]
			if skipping {
				skipping = false
				continue
			}
			if len(line) == 0 || len(line) > MaxLineBytes {
				continue
			}
			if rec, ok := decodeLine(line); ok && !fn(rec) {
				return nil
			}
		}
		switch {
		case skipping:
			tail = nil // still the line over the limit
		case len(buf) > MaxLineBytes:
			tail, skipping = nil, true
		default:
			tail = buf
		}
	}
	if pos == 0 && !skipping && len(tail) > 0 {
		// The file's first line.
		if rec, ok := decodeLine(tail); ok {
			fn(rec)
		}
	}
	return nil
}
