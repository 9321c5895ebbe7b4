package output

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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

	// foreignOutputTTL is the age past which a sweep removes another
	// workspace's outputs: the schema's maximum outputCacheTtlMs.
	foreignOutputTTL = 30 * 24 * time.Hour
)

// The defaults of [StoreOptions], which are the settings' defaults
// (outputCacheTtlMs, outputCacheMaxBytes).
const (
	DefaultTTL      = 24 * time.Hour
	DefaultMaxBytes = 256 << 20
)

var (
	// ErrUnknown is the one answer for an id that was never stored, has
	// expired, was evicted, is unreadable or belongs to another
	// workspace: none of these may tell the others apart.
	ErrUnknown = errors.New("unknown or expired output id")
	// ErrInvalidID is the answer for an id that is not of the form the
	// store hands out. The id is not echoed.
	ErrInvalidID = errors.New("invalid output id: want " + outputIDPrefix + " followed by 26 characters a-z, 2-7")
)

// Store keeps full outputs under a directory (<agent-dir>/mcp/outputs),
// in files 0600 in directories 0700, one directory per workspace. It
// starts no goroutine: the caller runs [Store.Sweep] at start and
// periodically. Its methods are safe for concurrent use, and for use by
// several processes on the same directory (the quota is then enforced by
// each [Store.Put], on what it sees).
type Store struct {
	dir      string // <agent-dir>/mcp/outputs
	wsHash   string // hex; also the name of the workspace's directory
	ttl      time.Duration
	maxBytes int64
	now      func() time.Time

	mu    sync.Mutex // serializes put and sweep in this process
	ready bool       // directories created and their modes fixed
}

// StoreOptions configure a [Store]. The zero value of each field is
// usable and documented; nil *StoreOptions is the zero StoreOptions.
type StoreOptions struct {
	// TTL is how long an output is kept. Zero or less: DefaultTTL.
	TTL time.Duration
	// MaxBytes is the quota of the workspace's outputs, headers
	// included: a Put evicts the oldest outputs to stay under it, and
	// cuts an output larger than it. Zero or less: DefaultMaxBytes.
	MaxBytes int64
	// Now is the clock outputs are created and expired by. Nil:
	// time.Now.
	Now func() time.Time
}

// outputMeta is the header of an output file.
type outputMeta struct {
	Format    int    `json:"format"`
	Workspace string `json:"workspace"` // workspace hash, never the workspace itself
	Server    string `json:"server"`
	// Identity is the server's identity (see [Source]).
	Identity    string `json:"identity,omitempty"`
	Tool        string `json:"tool"`
	Created     int64  `json:"created"` // Unix nanoseconds
	ContentType string `json:"contentType"`
	// Encoding is "base64" for media kept by PutMedia: the stored bytes
	// are the base64 of data of type ContentType.
	Encoding string `json:"encoding,omitempty"`
	Bytes    int64  `json:"bytes"` // stored bytes, after the header
	Lines    int    `json:"lines"` // stored lines
	// Set when the output was larger than the quota and was cut.
	OriginalBytes int64  `json:"originalBytes,omitempty"`
	OriginalLines int    `json:"originalLines,omitempty"`
	Note          string `json:"note,omitempty"`
}

// NewStore returns the store of workspace's outputs under dir. workspace
// is an opaque string (the Engine's workspace identity) of which only a
// hash is written: ids put by the store of one workspace are not
// readable from another's. NewStore does no I/O: the directories are
// made by the first [Store.Put].
func NewStore(dir, workspace string, opts *StoreOptions) *Store {
	var o StoreOptions
	if opts != nil {
		o = *opts
	}
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	h := sha256.Sum256([]byte("voltmcp output workspace\x00" + workspace))
	return &Store{dir: dir, wsHash: hex.EncodeToString(h[:16]), ttl: o.TTL, maxBytes: o.MaxBytes, now: o.Now}
}

// wsDir is the workspace's directory.
func (s *Store) wsDir() string { return filepath.Join(s.dir, s.wsHash) }

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

// Put stores data, the output of a tool of a server, and returns the
// opaque id that reads it back. It enforces the TTL and the quota,
// evicting oldest first, before writing; an output larger than the quota
// is cut to fit it, and the stored header records its original size. Its
// errors name no path.
func (s *Store) Put(src Source, tool string, data []byte) (id string, err error) {
	return s.put(src, tool, contentType(data), "", data)
}

// Source is the server an output came from: its name, which reading the
// output shows, and its identity (the engine's cue.Server.Identity,
// taken as a plain value), by which [RemoveServer] finds the outputs of
// a server that is gone.
type Source struct {
	Server   string
	Identity string
}

// PutMedia stores binary data of type mimeType (an image or audio item
// too large to pass inline) as its standard base64, one line, which
// [Store.Read] pages through as text and reports with the type and the
// encoding. An item larger than the quota is refused rather than cut:
// the beginning of an image is no image.
func (s *Store) PutMedia(src Source, tool, mimeType string, data []byte) (id string, err error) {
	enc := make([]byte, base64.StdEncoding.EncodedLen(len(data)))
	base64.StdEncoding.Encode(enc, data)
	if int64(len(enc))+maxOutputHeader > s.maxBytes {
		return "", fmt.Errorf("output store: %d bytes of base64 exceed the cache quota of %d bytes", len(enc), s.maxBytes)
	}
	return s.put(src, tool, ClipUTF8(mimeType, maxOutputName), "base64", enc)
}

func (s *Store) put(src Source, tool, ctype, encoding string, data []byte) (id string, err error) {
	now := s.now()
	meta := outputMeta{
		Format:      outputFormat,
		Workspace:   s.wsHash,
		Server:      ClipUTF8(src.Server, maxOutputName),
		Identity:    ClipUTF8(src.Identity, maxOutputName),
		Tool:        ClipUTF8(tool, maxOutputName),
		Created:     now.UnixNano(),
		ContentType: ctype,
		Encoding:    encoding,
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
		data = data[:CutPoint(data, int(keep))]
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
func (s *Store) ensureDirs() error {
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
func (s *Store) write(id string, created time.Time, header, data []byte) (err error) {
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
func (s *Store) sweepDir(now time.Time, need int64) error {
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

// Sweep removes the workspace's expired outputs; the caller runs it at
// start and periodically. It also removes other workspaces' outputs
// older than 30 days (the longest TTL the settings allow), or than the
// store's TTL if that is longer, and their directories once empty.
func (s *Store) Sweep() {
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

// RemoveServer deletes the outputs of the server whose identity is
// identity from every workspace's directory under dir (the outputs
// directory a [Store] is made with), for `voltmcp remove`, and returns
// how many it deleted. A file it cannot read the header of is left
// alone; an empty identity removes nothing.
func RemoveServer(dir, identity string) (int, error) {
	if identity == "" {
		return 0, nil
	}
	workspaces, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, outputErr("list", err)
	}
	removed := 0
	for _, w := range workspaces {
		if !w.IsDir() || !isHex(w.Name(), 32) {
			continue
		}
		ws := filepath.Join(dir, w.Name())
		files, err := os.ReadDir(ws)
		if err != nil {
			continue
		}
		for _, e := range files {
			if !validOutputID(e.Name()) || !e.Type().IsRegular() {
				continue
			}
			path := filepath.Join(ws, e.Name())
			meta, ok := readMeta(path)
			if !ok || meta.Identity != identity {
				continue
			}
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return removed, outputErr("remove", err)
			}
			removed++
		}
	}
	return removed, nil
}

// readMeta reads the header of the output file at path.
func readMeta(path string) (outputMeta, bool) {
	f, info, err := safefile.Open(path, &safefile.ReadOptions{NoFollow: true, MaxSize: -1})
	if err != nil {
		return outputMeta{}, false
	}
	defer f.Close()
	meta, _, ok := decodeHeader(f, info.Size())
	return meta, ok
}
