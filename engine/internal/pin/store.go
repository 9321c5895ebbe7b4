package pin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/voltmcp/voltmcp/engine/internal/bound"
	"github.com/voltmcp/voltmcp/safefile"
)

// storeFormat is the version of the pin file format.
const storeFormat = 1

// maxStoreFile bounds a pin file read: 1000 tools of bounded metadata,
// pinned and pending, fit with room to spare.
const maxStoreFile = 256 << 20

// Pin is the pinned version of one tool.
type Pin struct {
	Meta Meta   `json:"meta"`
	Hash string `json:"hash"`
	// PinnedAt is when this version was pinned: first seen or approved.
	PinnedAt time.Time `json:"pinnedAt"`
}

// Pending is a changed version of a pinned tool, waiting for approval.
type Pending struct {
	Meta Meta   `json:"meta"`
	Hash string `json:"hash"`
	// Change rates the change from the pinned version.
	Change Change `json:"change"`
	// SeenAt is when this version was first seen.
	SeenAt time.Time `json:"seenAt"`
}

// Pins is what the store holds for one server. The zero Pins holds
// nothing.
type Pins struct {
	Format  int                `json:"format"`
	Server  string             `json:"server"`
	Tools   map[string]Pin     `json:"tools"`
	Pending map[string]Pending `json:"pending,omitempty"`
	// Approval is the server's own approval, recorded at its first sight
	// (see [Store.ObserveServer]) and by [Store.ApproveAll]. It is nil in
	// files written before servers had one; such a server was seen before
	// any quarantine could apply to it and counts as approved.
	Approval *Approval `json:"approval,omitempty"`
}

// ServerApproved reports whether the server itself is approved: it was
// not held on its first sight, or someone approved it since.
func (p Pins) ServerApproved() bool { return p.Approval == nil || p.Approval.Approved }

// Approval is a server's own approval, apart from its tools' pins.
type Approval struct {
	// Approved is false for a server first seen while quarantine applied
	// to it, until someone approves it.
	Approved bool `json:"approved"`
	// At is when the server was first seen or, once approved by a person,
	// when it was approved.
	At time.Time `json:"at"`
	// By says how the state came about: "first-sight" (not held when
	// first seen), "quarantine" (held when first seen) or "approve".
	By string `json:"by,omitempty"`
}

// The values of Approval.By.
const (
	ByFirstSight = "first-sight"
	ByQuarantine = "quarantine"
	ByApprove    = "approve"
)

// ToolChange is a tool whose metadata differs from its pin.
type ToolChange struct {
	Name   string `json:"name"`
	Change Change `json:"change"`
	// New is true when this version was first seen by this observation,
	// false when it was already pending.
	New bool `json:"new,omitempty"`
}

// Result is what [Store.Observe] found.
type Result struct {
	// New lists the tools pinned on first sight.
	New []string `json:"new,omitempty"`
	// Changed lists the tools that differ from their pin and now have a
	// pending change, with its rating.
	Changed []ToolChange `json:"changed,omitempty"`
	// Reverted lists the tools whose pending change went away because the
	// server sent the pinned version again.
	Reverted []string `json:"reverted,omitempty"`
	// Missing lists pinned tools the server no longer lists. Their pins
	// stay, so that a tool that comes back is compared with what was
	// pinned.
	Missing []string `json:"missing,omitempty"`
	// FirstSight is true when the server had no pins before: its
	// approval was recorded now (see [Store.ObserveServer]).
	FirstSight bool `json:"firstSight,omitempty"`
}

// Store keeps the pins of every server in a directory, one file a server,
// <dir>/<key>.json, mode 0600. The key that every method takes as server
// is the server's identity, which the caller computes (the engine passes
// cue.Server.Identity, a hex sha256 of what the server is): never its
// name, so that pins and approvals stay with the program they were made
// for and a name given to another program starts with none. Every write replaces the file atomically
// (a temporary file, fsync, rename, fsync of the directory), so that a
// crash at any point leaves the old file or the new one. Methods are safe
// for concurrent use, within one process and between processes: every
// read-modify-write of a server's file holds its lock file,
// <dir>/<key>.json.lock, so a gateway observing a server while
// `voltmcp approve` approves it loses neither change.
type Store struct {
	dir string
	mu  sync.Mutex
}

// OpenStore returns the store in dir, creating the directory (0700) if
// needed.
func OpenStore(dir string) (*Store, error) {
	if dir == "" {
		return nil, errors.New("pin store: no directory")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("pin store: %w", err)
	}
	return &Store{dir: dir}, nil
}

// path returns the file of server, which must be a valid id.
func (s *Store) path(server string) (string, error) {
	if !bound.ValidName(server) {
		return "", fmt.Errorf("pin store: invalid server id %q", server)
	}
	return file(s.dir, server), nil
}

// file is the pin file of server in dir.
func file(dir, server string) string { return filepath.Join(dir, server+".json") }

// Stamp identifies a version of a server's pin file, by its modification
// time and size; the zero Stamp is a missing file. Stamps compare with ==.
type Stamp struct {
	// Exists is set when the file exists.
	Exists bool
	mod    time.Time
	size   int64
}

// StampOf stamps the pin file of server in the store's directory dir,
// without opening the store (which makes the directory): a missing file
// has the zero Stamp, and any other failure to stat it is an error.
func StampOf(dir, server string) (Stamp, error) {
	info, err := os.Stat(file(dir, server))
	if errors.Is(err, fs.ErrNotExist) {
		return Stamp{}, nil
	}
	if err != nil {
		return Stamp{}, fmt.Errorf("pin store: %w", err)
	}
	return Stamp{Exists: true, mod: info.ModTime(), size: info.Size()}, nil
}

// Get returns the pins of server; a server never seen has empty Pins. A
// file that cannot be read, is corrupt, or belongs to another server is
// an error naming the file: the caller should treat the server as
// unpinned and blocked (fail closed), not start over.
func (s *Store) Get(server string) (Pins, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.load(server)
}

// lock takes the lock of server's file (safefile.Lock), which every
// read-modify-write of it holds, in this process or another.
func (s *Store) lock(server string) (unlock func(), err error) {
	path, err := s.path(server)
	if err != nil {
		return nil, err
	}
	unlock, err = safefile.Lock(context.Background(), path)
	if err != nil {
		return nil, fmt.Errorf("pin store: %w", err)
	}
	return unlock, nil
}

// load reads the pins of server.
func (s *Store) load(server string) (Pins, error) {
	p, _, err := s.loadFile(server)
	return p, err
}

// loadFile reads the pins of server and says whether its file exists.
func (s *Store) loadFile(server string) (Pins, bool, error) {
	path, err := s.path(server)
	if err != nil {
		return Pins{}, false, err
	}
	empty := Pins{Format: storeFormat, Server: server, Tools: map[string]Pin{}, Pending: map[string]Pending{}}
	data, err := safefile.ReadFile(path, &safefile.ReadOptions{MaxSize: maxStoreFile})
	if errors.Is(err, fs.ErrNotExist) {
		return empty, false, nil
	}
	p, err := decodeFile(data, err, path, server)
	return p, err == nil, err
}

// decodeFile checks the pin file of server, read with err.
func decodeFile(data []byte, err error, path, server string) (Pins, error) {
	var tooLarge *safefile.TooLargeError
	switch {
	case errors.As(err, &tooLarge):
		return Pins{}, fmt.Errorf("pin store: %s: over %d bytes", path, maxStoreFile)
	case err != nil:
		return Pins{}, fmt.Errorf("pin store: %w", err)
	}
	var p Pins
	if err := json.Unmarshal(data, &p); err != nil {
		return Pins{}, fmt.Errorf("pin store: %s: corrupt: %v", path, err)
	}
	switch {
	case p.Format != storeFormat:
		return Pins{}, fmt.Errorf("pin store: %s: format %d, want %d", path, p.Format, storeFormat)
	case p.Server != server:
		return Pins{}, fmt.Errorf("pin store: %s: holds server %q", path, p.Server)
	}
	if p.Tools == nil {
		p.Tools = map[string]Pin{}
	}
	if p.Pending == nil {
		p.Pending = map[string]Pending{}
	}
	for name, pin := range p.Tools {
		if pin.Meta.Name != name || pin.Hash == "" {
			return Pins{}, fmt.Errorf("pin store: %s: corrupt: bad pin for %q", path, name)
		}
	}
	return p, nil
}

// save writes the pins of a server atomically.
func (s *Store) save(p Pins) error {
	path, err := s.path(p.Server)
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(p, "", "\t")
	if err != nil {
		return fmt.Errorf("pin store: %w", err)
	}
	if err := safefile.WriteFile(path, append(data, '\n'), nil); err != nil {
		return fmt.Errorf("pin store: %w", err)
	}
	return nil
}

// Hash is the default tool hash of [Store.Observe]: the sha256 of the
// JSON of m, schemas and annotations as given.
func Hash(m Meta) string {
	data, _ := json.Marshal(m) // plain data; cannot fail
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// Observe compares the tools a server lists now with its pins. A tool
// seen for the first time is pinned; one whose hash differs from its pin
// gets a pending change with its rating (see [Rate]) and keeps its pin;
// one back to its pinned hash loses its pending change. hash computes a
// tool's hash; nil means [Hash]. The file is written only when something
// changed. Tools listed twice count once, the first. A server seen for
// the first time is recorded as approved, as [Store.ObserveServer] does
// when quarantine does not apply.
func (s *Store) Observe(server string, tools []Meta, hash func(Meta) string) (Result, error) {
	return s.ObserveServer(server, tools, hash, false)
}

// ObserveServer is [Store.Observe] that also records the server's own
// approval on its first sight (when it has no pin file yet): approved
// unless quarantined is true, in which case it waits for
// [Store.ApproveAll]. Result.FirstSight says that this happened; the file
// is then written even when no tool is listed, so that a server cannot
// list nothing at first and escape its quarantine later. On later sights
// quarantined is ignored: quarantine holds only servers first seen while
// it applied.
func (s *Store) ObserveServer(server string, tools []Meta, hash func(Meta) string, quarantined bool) (Result, error) {
	if hash == nil {
		hash = Hash
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	unlock, err := s.lock(server)
	if err != nil {
		return Result{}, err
	}
	defer unlock()
	p, exists, err := s.loadFile(server)
	if err != nil {
		return Result{}, err
	}
	var res Result
	now := time.Now().UTC()
	dirty := false
	if !exists {
		a := &Approval{Approved: true, At: now, By: ByFirstSight}
		if quarantined {
			a = &Approval{Approved: false, At: now, By: ByQuarantine}
		}
		p.Approval, res.FirstSight, dirty = a, true, true
	}
	listed := make(map[string]bool, len(tools))
	for _, m := range tools {
		if listed[m.Name] {
			continue
		}
		listed[m.Name] = true
		h := hash(m)
		pin, ok := p.Tools[m.Name]
		switch {
		case !ok:
			p.Tools[m.Name] = Pin{Meta: m, Hash: h, PinnedAt: now}
			res.New = append(res.New, m.Name)
			dirty = true
		case pin.Hash == h:
			if _, pending := p.Pending[m.Name]; pending {
				delete(p.Pending, m.Name)
				res.Reverted = append(res.Reverted, m.Name)
				dirty = true
			}
		default:
			prev, had := p.Pending[m.Name]
			if had && prev.Hash == h {
				res.Changed = append(res.Changed, ToolChange{Name: m.Name, Change: prev.Change})
				continue
			}
			ch := Rate(pin.Meta, m)
			if ch.Severity == SeverityNone {
				ch = Change{Severity: SeverityCosmetic, Details: []string{"the hash changed but nothing the pin records did"}}
			}
			p.Pending[m.Name] = Pending{Meta: m, Hash: h, Change: ch, SeenAt: now}
			res.Changed = append(res.Changed, ToolChange{Name: m.Name, Change: ch, New: true})
			dirty = true
		}
	}
	for name := range p.Tools {
		if !listed[name] {
			res.Missing = append(res.Missing, name)
		}
	}
	slices.Sort(res.Missing)
	if dirty {
		if err := s.save(p); err != nil {
			return Result{}, err
		}
	}
	return res, nil
}

// Approve pins the pending changes of the named tools of server; with no
// names, every pending change of server, and the server itself is
// approved (see [Store.ApproveAll]). Naming a tool without a pending
// change is an error, and then nothing is approved.
func (s *Store) Approve(server string, tools ...string) error {
	if len(tools) == 0 {
		_, _, err := s.ApproveAll(server)
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	unlock, err := s.lock(server)
	if err != nil {
		return err
	}
	defer unlock()
	p, err := s.load(server)
	if err != nil {
		return err
	}
	for _, name := range tools {
		if _, ok := p.Pending[name]; !ok {
			return fmt.Errorf("pin store: no pending change for tool %q", name)
		}
	}
	now := time.Now().UTC()
	for _, name := range tools {
		pend := p.Pending[name]
		p.Tools[name] = Pin{Meta: pend.Meta, Hash: pend.Hash, PinnedAt: now}
		delete(p.Pending, name)
	}
	return s.save(p)
}

// ApproveAll pins every pending change of server and approves the server
// itself, in one write. It returns the tools approved, sorted, and
// whether the server's own approval was recorded now: it was waiting, or
// it was never seen and is approved ahead of its first sight (quarantine
// will not hold it). Nothing is written when nothing waited.
func (s *Store) ApproveAll(server string) (tools []string, serverApproved bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	unlock, err := s.lock(server)
	if err != nil {
		return nil, false, err
	}
	defer unlock()
	p, exists, err := s.loadFile(server)
	if err != nil {
		return nil, false, err
	}
	now := time.Now().UTC()
	for name, pend := range p.Pending {
		p.Tools[name] = Pin{Meta: pend.Meta, Hash: pend.Hash, PinnedAt: now}
		tools = append(tools, name)
	}
	clear(p.Pending)
	slices.Sort(tools)
	serverApproved = !p.ServerApproved() || !exists
	if serverApproved {
		p.Approval = &Approval{Approved: true, At: now, By: ByApprove}
	}
	if len(tools) == 0 && !serverApproved {
		return nil, false, nil
	}
	if err := s.save(p); err != nil {
		return nil, false, err
	}
	return tools, serverApproved, nil
}

// Remove deletes the pins of server (its key: see [Store]) from the
// store's directory dir, holding its lock while it does: what `voltmcp
// remove` does for a server that is gone. The empty lock file stays, as
// [safefile.Lock] requires. It reports whether there was a pin file; a
// missing one, or a missing directory, is not an error. Like [StampOf],
// it does not make the directory.
func Remove(dir, server string) (bool, error) {
	if !bound.ValidName(server) {
		return false, fmt.Errorf("pin store: invalid server key %q", server)
	}
	path := file(dir, server)
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	unlock, err := safefile.Lock(context.Background(), path)
	if err != nil {
		return false, fmt.Errorf("pin store: %w", err)
	}
	defer unlock()
	switch err := os.Remove(path); {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("pin store: %w", err)
	}
	return true, nil
}
