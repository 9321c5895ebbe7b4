package output

import (
	"bufio"
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/voltmcp/voltmcp/safefile"
)

// ReadRequest asks [Store.Read] for one page of an output.
type ReadRequest struct {
	Offset int64 // byte offset (default 0)
	// Limit is the most bytes to return: 0 or less is 51,200, above
	// 16 MiB is 16 MiB, and below 64 is refused. The gateway passes its
	// maxOutputBytes setting.
	Limit int64
	// 1-based inclusive line range; 0 = unused (StartLine 0 is line 1,
	// EndLine 0 the last line); when either is set, used instead of
	// Offset.
	StartLine, EndLine int
	// Optional regexp (RE2); when set, return only matching lines
	// (with their line numbers prefixed "N: "), still bounded by Limit.
	// It applies to the line range when one is set, else to the lines
	// from Offset on.
	Pattern string
}

// ReadResult is one page of an output, and what the store knows of the
// whole.
type ReadResult struct {
	Content    string
	Offset     int64  // where this page starts (bytes)
	NextOffset int64  // where the next page starts; 0 when done
	TotalBytes int64  // stored bytes
	TotalLines int    // stored lines
	Truncated  bool   // more remains
	Server     string // the server and tool of the output, as Put was given them (cut to 256 bytes)
	Tool       string
	// Encoding is "base64" for an item kept by PutMedia, and ContentType
	// then the type of the data the stored base64 encodes; both are empty
	// for an output kept by Put.
	ContentType string
	Encoding    string
}

// Read returns a page of the output id. A page ends on a UTF-8 boundary,
// and on a line boundary when one is in its last tenth. Continuing a page
// is asking again with Offset: NextOffset (and the same Pattern). An id
// not of the form [Store.Put] returns is [ErrInvalidID]; an id unknown,
// expired, evicted, unreadable or of another workspace is [ErrUnknown].
// Its errors name no path.
func (s *Store) Read(id string, req ReadRequest) (ReadResult, error) {
	if !validOutputID(id) {
		return ReadResult{}, ErrInvalidID
	}
	limit := req.Limit
	switch {
	case limit <= 0:
		limit = defaultReadLimit
	case limit < minReadLimit:
		return ReadResult{}, fmt.Errorf("limit must be at least %d bytes", minReadLimit)
	case limit > maxReadLimit:
		limit = maxReadLimit
	}
	if req.Offset < 0 || req.StartLine < 0 || req.EndLine < 0 {
		return ReadResult{}, errors.New("offset and lines must not be negative")
	}
	if req.EndLine > 0 && req.StartLine > req.EndLine {
		return ReadResult{}, fmt.Errorf("start line %d is after end line %d", req.StartLine, req.EndLine)
	}
	var re *regexp.Regexp
	if req.Pattern != "" {
		if len(req.Pattern) > maxReadPattern {
			return ReadResult{}, fmt.Errorf("pattern is over %d bytes", maxReadPattern)
		}
		var err error
		if re, err = regexp.Compile(req.Pattern); err != nil {
			return ReadResult{}, fmt.Errorf("invalid pattern: %s", strings.TrimPrefix(err.Error(), "error parsing regexp: "))
		}
	}

	f, meta, dataOff, err := s.open(id)
	if err != nil {
		return ReadResult{}, err
	}
	defer f.Close()
	r := io.NewSectionReader(f, dataOff, meta.Bytes)
	res := ReadResult{TotalBytes: meta.Bytes, TotalLines: meta.Lines, Server: meta.Server, Tool: meta.Tool}
	if meta.Encoding != "" {
		res.ContentType, res.Encoding = meta.ContentType, meta.Encoding
	}

	// The span [from, to) to read, and the number of the line at from.
	from, to, line := req.Offset, meta.Bytes, 0
	if req.StartLine > 0 || req.EndLine > 0 {
		start := max(req.StartLine, 1)
		if start > meta.Lines {
			return ReadResult{}, fmt.Errorf("start line %d is past the end (%d lines)", start, meta.Lines)
		}
		if from, err = lineStart(r, meta.Bytes, start); err != nil {
			return ReadResult{}, err
		}
		if req.EndLine > 0 && req.EndLine < meta.Lines {
			if to, err = lineStart(r, meta.Bytes, req.EndLine+1); err != nil {
				return ReadResult{}, err
			}
		}
		line = start
	} else if from > meta.Bytes {
		return ReadResult{}, fmt.Errorf("offset %d is past the end (%d bytes)", from, meta.Bytes)
	} else if from, err = runeStart(r, from, meta.Bytes); err != nil {
		return ReadResult{}, err
	}
	res.Offset = from

	var next int64
	if re == nil {
		res.Content, next, err = readSpan(r, from, to, meta.Bytes, limit)
	} else {
		if line == 0 {
			n, err := countNewlines(r, from)
			if err != nil {
				return ReadResult{}, err
			}
			line = n + 1
		}
		res.Content, next, err = grepSpan(r, from, to, line, limit, re)
	}
	if err != nil {
		return ReadResult{}, err
	}
	if next < to {
		res.NextOffset, res.Truncated = next, true
	}
	return res, nil
}

// open opens an output of this workspace that has not expired, and
// returns it with its meta and the offset of its data.
func (s *Store) open(id string) (*os.File, outputMeta, int64, error) {
	var meta outputMeta
	path := filepath.Join(s.wsDir(), id)
	// Opened without blocking and without following a link, and only a
	// regular file: a FIFO or device planted in the store would hang a
	// blocking open, and every reader of the store with it.
	f, info, err := safefile.Open(path, &safefile.ReadOptions{NoFollow: true, MaxSize: -1})
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, safefile.ErrNotRegular):
		return nil, meta, 0, ErrUnknown
	case err != nil:
		return nil, meta, 0, outputErr("read", err)
	}
	fail := func(err error) (*os.File, outputMeta, int64, error) {
		f.Close()
		return nil, meta, 0, err
	}
	meta, dataOff, ok := decodeHeader(f, info.Size())
	if !ok {
		return fail(ErrUnknown)
	}
	switch {
	case subtle.ConstantTimeCompare([]byte(meta.Workspace), []byte(s.wsHash)) != 1:
		return fail(ErrUnknown)
	case meta.Bytes < 0 || meta.Lines < 0 || dataOff+meta.Bytes != info.Size():
		return fail(ErrUnknown) // cut short or grown: not ours
	case s.now().Sub(time.Unix(0, meta.Created)) >= s.ttl:
		f.Close()
		_ = os.Remove(path)
		return nil, meta, 0, ErrUnknown
	}
	return f, meta, dataOff, nil
}

// readSpan reads at most limit bytes of [from, to), cut with CutPoint
// when more of the span remains, and returns them and where it stopped.
// size is the whole data's, to look one byte past to.
func readSpan(r io.ReaderAt, from, to, size, limit int64) (string, int64, error) {
	n := min(to-from, limit)
	if n <= 0 {
		return "", from, nil
	}
	buf := make([]byte, n, n+1)
	if from+n < to && from+n < size {
		buf = buf[:n+1] // the byte after, to see whether n splits a rune
	}
	if _, err := r.ReadAt(buf, from); err != nil {
		return "", 0, outputErr("read", err)
	}
	cut := int(n)
	if from+n < to {
		cut = CutPoint(buf, int(n))
		if cut == 0 {
			cut = int(n) // no boundary: not UTF-8; cut anyway, to progress
		}
	}
	return string(buf[:cut]), from + int64(cut), nil
}

// grepSpan returns the lines of [from, to) that match re, each as
// "N: line\n" with N counted from line at from, as many as fit in limit,
// and where it stopped: at the first line it did not look at or could
// not fit. A line is matched, and shown, on at most its first
// maxMatchLine bytes. A single match too long for the limit is cut to
// fit, and the page after it starts at the next line.
func grepSpan(r io.ReaderAt, from, to int64, line int, limit int64, re *regexp.Regexp) (string, int64, error) {
	br := bufio.NewReaderSize(io.NewSectionReader(r, from, to-from), 64<<10)
	var out []byte
	var text []byte
	pos := from
	for pos < to {
		// Read one line: keep its first maxMatchLine bytes, count all.
		text = text[:0]
		var n int64
		for {
			chunk, err := br.ReadSlice('\n')
			n += int64(len(chunk))
			if room := maxMatchLine - len(text); room > 0 {
				text = append(text, chunk[:min(room, len(chunk))]...)
			}
			if err == bufio.ErrBufferFull {
				continue
			}
			if err != nil && err != io.EOF {
				return "", 0, outputErr("read", err)
			}
			break
		}
		if n == 0 {
			break
		}
		text = bytes.TrimSuffix(text, []byte{'\n'})
		if re.Match(text) {
			prefix := strconv.Itoa(line) + ": "
			entry := int64(len(prefix) + len(text) + 1)
			if int64(len(out))+entry > limit {
				if len(out) > 0 {
					return string(out), pos, nil
				}
				keep := min(int(limit)-len(prefix)-1, len(text))
				text = text[:CutPoint(text, keep)]
				out = append(append(append(out, prefix...), text...), '\n')
				return string(out), pos + n, nil
			}
			out = append(append(append(out, prefix...), text...), '\n')
		}
		pos += n
		line++
	}
	return string(out), pos, nil
}

// lineStart returns the offset at which 1-based line starts: after the
// (line-1)th newline, or size when there are fewer.
func lineStart(r io.ReaderAt, size int64, line int) (int64, error) {
	need := line - 1
	if need <= 0 {
		return 0, nil
	}
	buf := make([]byte, 64<<10)
	for off := int64(0); off < size; {
		n, err := r.ReadAt(buf[:min(int64(len(buf)), size-off)], off)
		chunk := buf[:n]
		for {
			i := bytes.IndexByte(chunk, '\n')
			if i < 0 {
				break
			}
			if need--; need == 0 {
				return off + int64(n-len(chunk)+i+1), nil
			}
			chunk = chunk[i+1:]
		}
		off += int64(n)
		if err != nil && err != io.EOF {
			return 0, outputErr("read", err)
		}
	}
	return size, nil
}

// countNewlines counts the newlines before off.
func countNewlines(r io.ReaderAt, off int64) (int, error) {
	buf := make([]byte, 64<<10)
	count := 0
	for pos := int64(0); pos < off; {
		n, err := r.ReadAt(buf[:min(int64(len(buf)), off-pos)], pos)
		count += bytes.Count(buf[:n], []byte{'\n'})
		pos += int64(n)
		if err != nil && err != io.EOF {
			return 0, outputErr("read", err)
		}
	}
	return count, nil
}

// runeStart moves off forward past UTF-8 continuation bytes (at most
// three), so that a page asked for in the middle of a rune starts at
// the next one.
func runeStart(r io.ReaderAt, off, size int64) (int64, error) {
	var b [utf8.UTFMax - 1]byte
	n, err := r.ReadAt(b[:min(int64(len(b)), size-off)], off)
	if err != nil && err != io.EOF {
		return 0, outputErr("read", err)
	}
	for i := range n {
		if utf8.RuneStart(b[i]) {
			return off + int64(i), nil
		}
	}
	if n < len(b) {
		return off + int64(n), nil // continuation bytes up to the end
	}
	return off, nil // not UTF-8 here
}

// decodeHeader reads the header line of an output file of size bytes
// from f, at its start, and returns it with the offset of the data.
func decodeHeader(f io.Reader, size int64) (outputMeta, int64, bool) {
	var meta outputMeta
	head := make([]byte, min(size, maxOutputHeader))
	if _, err := io.ReadFull(f, head); err != nil {
		return meta, 0, false
	}
	nl := bytes.IndexByte(head, '\n')
	if nl < 0 || !bytes.HasPrefix(head, []byte(outputMagic)) ||
		json.Unmarshal(head[len(outputMagic):nl], &meta) != nil || meta.Format != outputFormat {
		return meta, 0, false
	}
	return meta, int64(nl + 1), true
}
