package engine

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/voltmcp/voltmcp/safefile"
)

// The output store keeps the full output of a tool call whose inline
// copy was capped, so that the model can page through the rest with
// read_cache. Layout:
//
//	<agent-dir>/mcp/outputs/                       0700
//	<agent-dir>/mcp/outputs/<workspace-hash>/      0700, one per workspace
//	<agent-dir>/mcp/outputs/<workspace-hash>/<id>  0600, one per output
//
// An output file is a header line, outputMagic followed by the JSON of
// outputMeta and "\n", then the stored bytes. Files are written to a
// temporary name and renamed, so a reader sees a whole file or none;
// their modification time is set to their creation time, which is what
// the TTL and the oldest-first eviction go by without opening them.
//
// Each workspace has its own directory, TTL and quota (the settings are
// the workspace's); the header also records the workspace hash and read
// checks it. A sweep also removes, from other workspaces' directories,
// files older than foreignOutputTTL, so that the outputs of a workspace
// no longer opened do not stay forever.

const (
	outputIDPrefix = "mcpout_"
	outputIDRand   = 26 // base32 characters: 130 bits
	outputMagic    = "voltmcp-output/1 "
	outputFormat   = 1
	outputTmp      = ".tmp-"

	maxOutputHeader  = 8 << 10  // bytes read to find the header line
	maxOutputName    = 256      // server and tool names kept in meta
	defaultReadLimit = 51200    // Limit when the caller passes none
	minReadLimit     = 64       // below this a page could not hold a rune and a line number
	maxReadLimit     = 16 << 20 // the schema's maximum maxOutputBytes
	maxReadPattern   = 4096     // bytes of a read pattern
	maxMatchLine     = 1 << 20  // bytes of one line a pattern is matched against

	defaultOutputTTL      = 24 * time.Hour
	defaultOutputMaxBytes = 256 << 20
	// foreignOutputTTL is the age past which a sweep removes another
	// workspace's outputs: the schema's maximum outputCacheTtlMs.
	foreignOutputTTL = 30 * 24 * time.Hour
)

var (
	// errUnknownOutput is the one answer for an id that was never
	// stored, has expired, was evicted, is unreadable or belongs to
	// another workspace: none of these may tell the others apart.
	errUnknownOutput = errors.New("unknown or expired output id")
	// errInvalidOutputID is the answer for an id that is not of the
	// form the store hands out. The id is not echoed.
	errInvalidOutputID = errors.New("invalid output id: want " + outputIDPrefix + " followed by 26 characters a-z, 2-7")
)

// outputStore keeps full outputs under dir (<agent-dir>/mcp/outputs),
// files 0600 in a 0700 dir. It starts no goroutine: the caller runs
// sweep at start and periodically. Its methods are safe for concurrent
// use, and for use by several processes on the same directory (the
// quota is then enforced by each put, on what it sees).
type outputStore struct {
	dir      string // <agent-dir>/mcp/outputs
	wsHash   string // hex; also the name of the workspace's directory
	ttl      time.Duration
	maxBytes int64
	now      func() time.Time

	mu    sync.Mutex // serializes put and sweep in this process
	ready bool       // directories created and their modes fixed
}

// outputMeta is the header of an output file.
type outputMeta struct {
	Format      int    `json:"format"`
	Workspace   string `json:"workspace"` // workspace hash, never the workspace itself
	Server      string `json:"server"`
	Tool        string `json:"tool"`
	Created     int64  `json:"created"` // Unix nanoseconds
	ContentType string `json:"contentType"`
	Bytes       int64  `json:"bytes"` // stored bytes, after the header
	Lines       int    `json:"lines"` // stored lines
	// Set when the output was larger than the quota and was cut.
	OriginalBytes int64  `json:"originalBytes,omitempty"`
	OriginalLines int    `json:"originalLines,omitempty"`
	Note          string `json:"note,omitempty"`
}

// newOutputStore: workspace is an opaque string (the Engine's workspace
// identity); ids from one workspace are not readable from another. A
// non-positive ttl or maxBytes takes the settings' default; a nil now is
// time.Now. It does no I/O: the directories are made by the first put.
func newOutputStore(dir, workspace string, ttl time.Duration, maxBytes int64, now func() time.Time) *outputStore {
	if ttl <= 0 {
		ttl = defaultOutputTTL
	}
	if maxBytes <= 0 {
		maxBytes = defaultOutputMaxBytes
	}
	if now == nil {
		now = time.Now
	}
	h := sha256.Sum256([]byte("voltmcp output workspace\x00" + workspace))
	return &outputStore{dir: dir, wsHash: hex.EncodeToString(h[:16]), ttl: ttl, maxBytes: maxBytes, now: now}
}

// wsDir is the workspace's directory.
func (s *outputStore) wsDir() string { return filepath.Join(s.dir, s.wsHash) }

// outputErr wraps a file-system error without the path it names: the
// errors of the store reach the model.
func outputErr(op string, err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		err = pe.Err
	case errors.As(err, &le):
		err = le.Err
	}
	return fmt.Errorf("output store: %s: %w", op, err)
}

// newOutputID returns "mcpout_" and 26 crypto-random base32 characters.
func newOutputID() string {
	return outputIDPrefix + strings.ToLower(rand.Text()[:outputIDRand])
}

// validOutputID reports whether id has the form newOutputID gives, which
// also keeps it a plain file name.
func validOutputID(id string) bool {
	if len(id) != len(outputIDPrefix)+outputIDRand || !strings.HasPrefix(id, outputIDPrefix) {
		return false
	}
	for _, c := range []byte(id[len(outputIDPrefix):]) {
		if (c < 'a' || c > 'z') && (c < '2' || c > '7') {
			return false
		}
	}
	return true
}

// put stores data with a small meta record and returns an opaque id. It
// enforces the TTL and the quota, evicting oldest first, before
// writing; an output larger than the quota is cut to fit it, and its
// meta says so.
func (s *outputStore) put(server, tool string, data []byte) (id string, err error) {
	now := s.now()
	meta := outputMeta{
		Format:      outputFormat,
		Workspace:   s.wsHash,
		Server:      clipUTF8(server, maxOutputName),
		Tool:        clipUTF8(tool, maxOutputName),
		Created:     now.UnixNano(),
		ContentType: contentType(data),
		Bytes:       int64(len(data)),
		Lines:       countLinesBytes(data),
	}
	header, err := encodeOutputHeader(&meta)
	if err != nil {
		return "", err
	}
	if int64(len(header))+int64(len(data)) > s.maxBytes {
		// Size the cut with the header as it will be: the stored
		// counts are no longer than the original ones.
		meta.OriginalBytes, meta.OriginalLines = meta.Bytes, meta.Lines
		meta.Note = "output of " + strconv.Itoa(len(data)) + " bytes exceeded the cache quota of " +
			strconv.FormatInt(s.maxBytes, 10) + " bytes; only its beginning was kept"
		h0, err := encodeOutputHeader(&meta)
		if err != nil {
			return "", err
		}
		keep := max(s.maxBytes-int64(len(h0)), 0)
		data = data[:cutPoint(data, int(keep))]
		meta.Bytes, meta.Lines = int64(len(data)), countLinesBytes(data)
		if header, err = encodeOutputHeader(&meta); err != nil {
			return "", err
		}
	}
	size := int64(len(header)) + int64(len(data))

	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ensureDirs(); err != nil {
		return "", err
	}
	if err := s.sweepDir(now, size); err != nil {
		return "", err
	}
	id = newOutputID()
	if err := s.write(id, now, header, data); err != nil {
		return "", err
	}
	return id, nil
}

// encodeOutputHeader returns the header line of an output file.
func encodeOutputHeader(m *outputMeta) ([]byte, error) {
	j, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("output store: %w", err)
	}
	// json.Marshal escapes control characters: j holds no newline.
	return slices.Concat([]byte(outputMagic), j, []byte{'\n'}), nil
}

// ensureDirs makes the store's directory and the workspace's, 0700.
func (s *outputStore) ensureDirs() error {
	ws := s.wsDir()
	if err := os.MkdirAll(ws, 0o700); err != nil {
		s.ready = false
		return outputErr("create directory", err)
	}
	if s.ready {
		return nil
	}
	for _, d := range []string{s.dir, ws} {
		info, err := os.Lstat(d)
		if err != nil {
			return outputErr("create directory", err)
		}
		if !info.IsDir() {
			return errors.New("output store: the output directory is not a plain directory")
		}
		if info.Mode().Perm() != 0o700 {
			if err := os.Chmod(d, 0o700); err != nil {
				return outputErr("create directory", err)
			}
		}
	}
	s.ready = true
	return nil
}

// write stores one output under its id, atomically, 0600, with its
// modification time set to its creation time.
func (s *outputStore) write(id string, created time.Time, header, data []byte) (err error) {
	ws := s.wsDir()
	f, err := os.CreateTemp(ws, outputTmp+"*")
	if err != nil {
		return outputErr("write", err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	if err = f.Chmod(0o600); err == nil {
		if _, err = f.Write(header); err == nil {
			_, err = f.Write(data)
		}
	}
	// No fsync: this is a cache, and a file cut short by a crash fails
	// the size check in read and reads as unknown.
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chtimes(tmp, created, created)
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(ws, id))
	}
	if err != nil {
		return outputErr("write", err)
	}
	return nil
}

// storedOutput is one file found by a directory scan.
type storedOutput struct {
	name    string
	size    int64
	created time.Time
}

// sweepDir removes the workspace's expired outputs and left-over
// temporary files, then, to make room for need bytes, the oldest
// outputs until the rest and need fit the quota.
func (s *outputStore) sweepDir(now time.Time, need int64) error {
	ws := s.wsDir()
	entries, err := os.ReadDir(ws)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return outputErr("list", err)
	}
	var live []storedOutput
	var total int64
	for _, e := range entries {
		name := e.Name()
		isOutput := validOutputID(name)
		if (!isOutput && !strings.HasPrefix(name, outputTmp)) || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		if now.Sub(info.ModTime()) >= s.ttl {
			_ = os.Remove(filepath.Join(ws, name))
			continue
		}
		if isOutput {
			live = append(live, storedOutput{name, info.Size(), info.ModTime()})
			total += info.Size()
		}
	}
	if need <= 0 || total+need <= s.maxBytes {
		return nil
	}
	slices.SortFunc(live, func(a, b storedOutput) int {
		if c := a.created.Compare(b.created); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	for _, o := range live {
		if total+need <= s.maxBytes {
			break
		}
		if err := os.Remove(filepath.Join(ws, o.name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return outputErr("evict", err)
		}
		total -= o.size
	}
	return nil
}

// sweep removes expired files; called at start and periodically by the
// caller. It also removes other workspaces' outputs older than
// foreignOutputTTL, and their directories once empty.
func (s *outputStore) sweep() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	_ = s.sweepDir(now, 0)
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return
	}
	old := max(foreignOutputTTL, s.ttl)
	for _, e := range entries {
		name := e.Name()
		if name == s.wsHash || !e.IsDir() || !isHex(name, len(s.wsHash)) {
			continue
		}
		dir := filepath.Join(s.dir, name)
		files, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, f := range files {
			if !f.Type().IsRegular() || (!validOutputID(f.Name()) && !strings.HasPrefix(f.Name(), outputTmp)) {
				continue
			}
			if info, err := f.Info(); err == nil && now.Sub(info.ModTime()) >= old {
				_ = os.Remove(filepath.Join(dir, f.Name()))
			}
		}
		_ = os.Remove(dir) // only if empty
	}
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

type readRequest struct {
	Offset int64 // byte offset (default 0)
	Limit  int64 // max bytes to return (default and cap: the caller passes maxOutputBytes)
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

type readResult struct {
	Content    string
	Offset     int64 // where this page starts (bytes)
	NextOffset int64 // where the next page starts; 0 when done
	TotalBytes int64 // stored bytes
	TotalLines int   // stored lines
	Truncated  bool  // more remains
	Server     string
	Tool       string
}

// read returns a page of an output. A page ends on a UTF-8 boundary,
// and on a line boundary when one is in its last tenth. Continuing a
// page is asking again with Offset: NextOffset (and the same Pattern).
func (s *outputStore) read(id string, req readRequest) (readResult, error) {
	if !validOutputID(id) {
		return readResult{}, errInvalidOutputID
	}
	limit := req.Limit
	switch {
	case limit <= 0:
		limit = defaultReadLimit
	case limit < minReadLimit:
		return readResult{}, fmt.Errorf("limit must be at least %d bytes", minReadLimit)
	case limit > maxReadLimit:
		limit = maxReadLimit
	}
	if req.Offset < 0 || req.StartLine < 0 || req.EndLine < 0 {
		return readResult{}, errors.New("offset and lines must not be negative")
	}
	if req.EndLine > 0 && req.StartLine > req.EndLine {
		return readResult{}, fmt.Errorf("start line %d is after end line %d", req.StartLine, req.EndLine)
	}
	var re *regexp.Regexp
	if req.Pattern != "" {
		if len(req.Pattern) > maxReadPattern {
			return readResult{}, fmt.Errorf("pattern is over %d bytes", maxReadPattern)
		}
		var err error
		if re, err = regexp.Compile(req.Pattern); err != nil {
			return readResult{}, fmt.Errorf("invalid pattern: %s", strings.TrimPrefix(err.Error(), "error parsing regexp: "))
		}
	}

	f, meta, dataOff, err := s.open(id)
	if err != nil {
		return readResult{}, err
	}
	defer f.Close()
	r := io.NewSectionReader(f, dataOff, meta.Bytes)
	res := readResult{TotalBytes: meta.Bytes, TotalLines: meta.Lines, Server: meta.Server, Tool: meta.Tool}

	// The span [from, to) to read, and the number of the line at from.
	from, to, line := req.Offset, meta.Bytes, 0
	if req.StartLine > 0 || req.EndLine > 0 {
		start := max(req.StartLine, 1)
		if start > meta.Lines {
			return readResult{}, fmt.Errorf("start line %d is past the end (%d lines)", start, meta.Lines)
		}
		if from, err = lineStart(r, meta.Bytes, start); err != nil {
			return readResult{}, err
		}
		if req.EndLine > 0 && req.EndLine < meta.Lines {
			if to, err = lineStart(r, meta.Bytes, req.EndLine+1); err != nil {
				return readResult{}, err
			}
		}
		line = start
	} else if from > meta.Bytes {
		return readResult{}, fmt.Errorf("offset %d is past the end (%d bytes)", from, meta.Bytes)
	} else if from, err = runeStart(r, from, meta.Bytes); err != nil {
		return readResult{}, err
	}
	res.Offset = from

	var next int64
	if re == nil {
		res.Content, next, err = readSpan(r, from, to, meta.Bytes, limit)
	} else {
		if line == 0 {
			n, err := countNewlines(r, from)
			if err != nil {
				return readResult{}, err
			}
			line = n + 1
		}
		res.Content, next, err = grepSpan(r, from, to, line, limit, re)
	}
	if err != nil {
		return readResult{}, err
	}
	if next < to {
		res.NextOffset, res.Truncated = next, true
	}
	return res, nil
}

// open opens an output of this workspace that has not expired, and
// returns it with its meta and the offset of its data.
func (s *outputStore) open(id string) (*os.File, outputMeta, int64, error) {
	var meta outputMeta
	path := filepath.Join(s.wsDir(), id)
	// Opened without blocking and without following a link, and only a
	// regular file: a FIFO or device planted in the store would hang a
	// blocking open, and every reader of the store with it.
	f, info, err := safefile.Open(path, &safefile.ReadOptions{NoFollow: true, MaxSize: -1})
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, safefile.ErrNotRegular):
		return nil, meta, 0, errUnknownOutput
	case err != nil:
		return nil, meta, 0, outputErr("read", err)
	}
	fail := func(err error) (*os.File, outputMeta, int64, error) {
		f.Close()
		return nil, meta, 0, err
	}
	head := make([]byte, min(info.Size(), maxOutputHeader))
	if _, err := io.ReadFull(f, head); err != nil {
		return fail(errUnknownOutput)
	}
	nl := bytes.IndexByte(head, '\n')
	if nl < 0 || !bytes.HasPrefix(head, []byte(outputMagic)) ||
		json.Unmarshal(head[len(outputMagic):nl], &meta) != nil || meta.Format != outputFormat {
		return fail(errUnknownOutput)
	}
	dataOff := int64(nl + 1)
	switch {
	case subtle.ConstantTimeCompare([]byte(meta.Workspace), []byte(s.wsHash)) != 1:
		return fail(errUnknownOutput)
	case meta.Bytes < 0 || meta.Lines < 0 || dataOff+meta.Bytes != info.Size():
		return fail(errUnknownOutput) // cut short or grown: not ours
	case s.now().Sub(time.Unix(0, meta.Created)) >= s.ttl:
		f.Close()
		_ = os.Remove(path)
		return nil, meta, 0, errUnknownOutput
	}
	return f, meta, dataOff, nil
}

// readSpan reads at most limit bytes of [from, to), cut with cutPoint
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
		cut = cutPoint(buf, int(n))
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
				text = text[:cutPoint(text, keep)]
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

// countLines counts lines: the newlines, and a last line without one.
func countLines(s string) int {
	n := strings.Count(s, "\n")
	if len(s) > 0 && s[len(s)-1] != '\n' {
		n++
	}
	return n
}

// countLinesBytes is countLines of a []byte.
func countLinesBytes(b []byte) int {
	n := bytes.Count(b, []byte{'\n'})
	if len(b) > 0 && b[len(b)-1] != '\n' {
		n++
	}
	return n
}

// cutPoint returns where to cut s to keep at most n bytes of it: after
// the last newline in the last tenth of s[:n] when there is one, else at
// the last UTF-8 boundary at or before n. It looks at s[n], so it knows
// whether n splits a rune. Where s is not UTF-8 around n, it cuts at n.
func cutPoint[T ~string | ~[]byte](s T, n int) int {
	if n >= len(s) {
		return len(s)
	}
	if n <= 0 {
		return 0
	}
	for i := n - 1; i >= n-n/10 && i >= 0; i-- {
		if s[i] == '\n' {
			return i + 1
		}
	}
	for i := n; i >= 0 && i > n-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			// A valid rune starting at i ends at or after n.
			return i
		}
	}
	return n
}

// clipUTF8 cuts s to at most n bytes on a UTF-8 boundary.
func clipUTF8(s string, n int) string { return s[:cutUTF8(s, n)] }

// cutUTF8 is cutPoint without the preference for line boundaries.
func cutUTF8[T ~string | ~[]byte](s T, n int) int {
	if n >= len(s) {
		return len(s)
	}
	for i := n; i >= 0 && i > n-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			return i
		}
	}
	return n
}

// contentType names what an output holds.
func contentType(data []byte) string {
	switch {
	case json.Valid(data):
		return "application/json"
	case utf8.Valid(data):
		return "text/plain; charset=utf-8"
	default:
		return "application/octet-stream"
	}
}

type capResult struct {
	// At most maxBytes bytes and maxLines lines, cut on a line boundary
	// when one exists in the last 10% of the budget, else on a UTF-8
	// boundary. Always a prefix of the input.
	Text          string
	Truncated     bool
	ReturnedBytes int
	TotalBytes    int
	ReturnedLines int
	TotalLines    int
}

// capOutput caps text to maxBytes bytes and maxLines lines; a
// non-positive limit is no limit. A line is counted with its newline;
// "a\nb" and "a\nb\n" are both two lines.
func capOutput(text string, maxBytes, maxLines int) capResult {
	res := capResult{TotalBytes: len(text), TotalLines: countLines(text)}
	end := len(text)
	if maxLines > 0 && res.TotalLines > maxLines {
		// After the maxLines-th newline.
		seen, i := 0, 0
		for seen < maxLines {
			i += strings.IndexByte(text[i:], '\n') + 1
			seen++
		}
		end = i
	}
	if maxBytes > 0 && end > maxBytes {
		end = cutPoint(text, maxBytes)
	}
	res.Text = text[:end]
	res.Truncated = end < len(text)
	res.ReturnedBytes = end
	res.ReturnedLines = countLines(res.Text)
	return res
}
