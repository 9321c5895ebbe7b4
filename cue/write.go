package cue

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/voltmcp/voltmcp/safefile"
)

// SetServerEnabled records enabled: true or false for a server in a
// voltmcp-owned layer (LayerUser or LayerProject), as an overlay on
// whatever lower layer defines it. The file keeps everything else it
// holds, known to voltmcp or not, in its order. The write is atomic: a
// reader sees the old file or the new one, never a mix, and a file that
// does not parse is left alone and reported. With opts.TrustStore, a
// write to a project layer of a trusted project keeps its trust (see
// [WriteOptions]). A nil opts is the zero WriteOptions.
func SetServerEnabled(ctx context.Context, loc Locations, layer Layer, id string, enabled bool, opts *WriteOptions) error {
	if !layer.VoltmcpOwned() {
		return fmt.Errorf("set server %q enabled: layer %s is not voltmcp's to write; use %s or %s", id, layer, LayerUser, LayerProject)
	}
	if NormalizeID(id) == "" {
		return fmt.Errorf("set server enabled: invalid server id %q", id)
	}
	return updateFile(ctx, loc, layer, opts, func(doc *node) error {
		servers := doc.get("servers")
		if servers == nil {
			servers = &node{kind: kindObject, fields: []field{}}
			doc.set("servers", servers)
		}
		if servers.kind != kindObject {
			return errors.New("servers is not an object")
		}
		key := id
		for _, f := range servers.fields {
			if NormalizeID(f.key) == NormalizeID(id) {
				key = f.key
				break
			}
		}
		entry := servers.get(key)
		if entry == nil || entry.kind != kindObject {
			entry = &node{kind: kindObject, fields: []field{}}
			servers.set(key, entry)
		}
		entry.set("enabled", &node{kind: kindBool, bool: enabled})
		return nil
	})
}

// WriteOptions tune a write of a voltmcp-owned config file.
type WriteOptions struct {
	// TrustStore is the file of trust records (ReadTrustRecords). When it
	// is set and the file written is a project layer, voltmcp's own edit
	// does not count as a change to the project: if the project has a
	// trust record and the file's content before the write is the content
	// that record trusts (or the file did not exist and the record has no
	// entry for it), the record is updated to the content written. The
	// config file's lock is held from the read through the rename to the
	// record's update, and the record's own lock for that update, which
	// replaces the entry only if it still holds the old content's hash.
	// An edit made by anything else, before the write or after it, still
	// leaves the project untrusted. Empty: trust records are not touched,
	// so a write to a trusted project's file revokes its trust.
	TrustStore string
}

// updateFile applies edit to the parsed tree of the voltmcp-dialect file
// of layer and writes the result atomically. A missing file starts as
// {"version": 1}. The read, the edit and the write hold the file's lock
// (safefile.Update on loc.LockFile), so edits made at once by several
// processes all land;
// the trust record is kept under the same lock (WriteOptions.TrustStore).
// A nil opts is the zero WriteOptions.
func updateFile(ctx context.Context, loc Locations, layer Layer, opts *WriteOptions, edit func(doc *node) error) error {
	path := loc.Path(layer)
	je := jsonEdit{
		fresh: func() *node {
			return &node{kind: kindObject, fields: []field{{key: "version", value: &node{kind: kindNumber, str: "1"}}}}
		},
		check: func(doc *node) error {
			if d := detectDialect(doc); d != DialectVoltmcp {
				return fmt.Errorf("the file is in the %s dialect, not voltmcp's", d)
			}
			return nil
		},
		lock:    loc.LockFile(path),
		maxSize: MaxFileSize, maxValues: MaxValues,
	}
	if opts != nil && opts.TrustStore != "" && layer.IsProject() {
		store, project := opts.TrustStore, loc.Project
		je.written = func(old, written []byte) error {
			if err := keepTrust(store, project, path, old, written); err != nil {
				return &trustKeepError{path, err}
			}
			return nil
		}
	}
	return updateJSON(ctx, path, layer, je, edit)
}

// jsonEdit says how updateJSON treats a file.
type jsonEdit struct {
	fresh  func() *node          // the tree of a missing file
	check  func(doc *node) error // refuses a file not to edit
	backup string                // where to copy the file before its first change; "" for none
	lock   string                // the lock file held (Locations.LockFile)
	// written runs after the rename, under the file's lock, with the
	// content replaced (nil for a missing file) and the content written.
	written   func(old, written []byte) error
	maxSize   int64
	maxValues int
}

// updateJSON is the one way config files are edited: read under the
// file's lock (je.lock, in voltmcp's agent directory, never beside the
// file), parse into a node tree (which keeps every field and its order),
// edit, and write atomically in the file's own layout (layoutOf). An edit that changes nothing leaves the
// file alone.
func updateJSON(ctx context.Context, path string, layer Layer, je jsonEdit, edit func(doc *node) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if je.lock == "" {
		return fmt.Errorf("update %s: no lock file named", path)
	}
	edited := false
	err := safefile.Update(ctx, path, &safefile.WriteOptions{KeepMode: true, Read: &safefile.ReadOptions{MaxSize: je.maxSize}, Written: je.written, LockFile: je.lock},
		func(data []byte) ([]byte, error) {
			edited = true
			var doc *node
			if data == nil {
				doc = je.fresh()
			} else {
				src := newSource(path, layer, data)
				var err error
				doc, _, err = parseJSONMax(src, je.maxValues)
				if err != nil {
					var se *syntaxError
					var le *limitError
					if errors.As(err, &le) {
						p := src.position(le.off)
						return nil, fmt.Errorf("update %s: not changed: at %d:%d: %s", path, p.Line, p.Col, le.msg)
					}
					if errors.As(err, &se) {
						p := src.position(se.off)
						return nil, fmt.Errorf("update %s: not changed: invalid JSON at %d:%d: %s", path, p.Line, p.Col, se.msg)
					}
					return nil, fmt.Errorf("update %s: not changed: %w", path, err)
				}
				if doc.kind != kindObject {
					return nil, fmt.Errorf("update %s: not changed: the top level is not an object", path)
				}
				if je.check != nil {
					if err := je.check(doc); err != nil {
						return nil, fmt.Errorf("update %s: not changed: %w", path, err)
					}
				}
			}
			before := doc.appendJSON(nil)
			if err := edit(doc); err != nil {
				return nil, fmt.Errorf("update %s: not changed: %w", path, err)
			}
			if data != nil && bytes.Equal(before, doc.appendJSON(nil)) {
				return data, nil
			}
			if data != nil && je.backup != "" {
				if _, err := os.Lstat(je.backup); errors.Is(err, fs.ErrNotExist) {
					if err := safefile.WriteFile(je.backup, data, &safefile.WriteOptions{Mode: 0o600}); err != nil {
						return nil, fmt.Errorf("update %s: not changed: back it up: %w", path, err)
					}
				}
			}
			return doc.render(layoutOf(data)), nil
		})
	var te *trustKeepError
	switch {
	case errors.As(err, &te):
		return err
	case err == nil || edited:
		return err
	case errors.Is(err, safefile.ErrTooLarge):
		return fmt.Errorf("update %s: file is over the %d byte limit", path, je.maxSize)
	case errors.Is(err, safefile.ErrNotRegular):
		return fmt.Errorf("update %s: not changed: %w", path, err)
	}
	return fmt.Errorf("update %s: %w", path, pathlessError(err))
}

// trustKeepError is a write that landed whose trust record could not be
// kept: the project is untrusted until `voltmcp trust` runs again.
type trustKeepError struct {
	path string
	err  error
}

func (e *trustKeepError) Error() string {
	return fmt.Sprintf("update %s: written, but the project's trust record was not updated (%v): run voltmcp trust to trust the project again", e.path, e.err)
}

func (e *trustKeepError) Unwrap() error { return e.err }

// WriteFileAtomic writes data to a temporary file beside path, syncs it
// and renames it over path, so a reader or a crash sees the old file or
// the new one, never a mix. Missing directories are created 0700. It is
// [safefile.WriteFile].
func WriteFileAtomic(path string, data []byte, mode fs.FileMode) error {
	return safefile.WriteFile(path, data, &safefile.WriteOptions{Mode: mode})
}
