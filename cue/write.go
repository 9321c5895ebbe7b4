package cue

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// SetServerEnabled records enabled: true or false for a server in a
// voltmcp-owned layer (LayerUser or LayerProject), as an overlay on
// whatever lower layer defines it. The file keeps everything else it
// holds, known to voltmcp or not, in its order. The write is atomic: a
// reader sees the old file or the new one, never a mix, and a file that
// does not parse is left alone and reported.
func SetServerEnabled(ctx context.Context, loc Locations, layer Layer, id string, enabled bool) error {
	if !layer.VoltmcpOwned() {
		return fmt.Errorf("set server %q enabled: layer %s is not voltmcp's to write; use %s or %s", id, layer, LayerUser, LayerProject)
	}
	if NormalizeID(id) == "" {
		return fmt.Errorf("set server enabled: invalid server id %q", id)
	}
	return updateFile(ctx, loc.Path(layer), layer, func(doc *node) error {
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

// updateFile applies edit to the parsed tree of a voltmcp-dialect file
// and writes the result atomically. A missing file starts as
// {"version": 1}.
func updateFile(ctx context.Context, path string, layer Layer, edit func(doc *node) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	mode := fs.FileMode(0o600)
	var doc *node
	switch {
	case errors.Is(err, fs.ErrNotExist):
		doc = &node{kind: kindObject, fields: []field{{key: "version", value: &node{kind: kindNumber, str: "1"}}}}
	case err != nil:
		return fmt.Errorf("update %s: %w", path, pathlessError(err))
	case len(data) > MaxFileSize:
		return fmt.Errorf("update %s: file is over the %d byte limit", path, MaxFileSize)
	default:
		if info, err := os.Stat(path); err == nil {
			mode = info.Mode().Perm()
		}
		src := newSource(path, layer, data)
		doc, _, err = parseJSON(src)
		if err != nil {
			var se *syntaxError
			if errors.As(err, &se) {
				p := src.position(se.off)
				return fmt.Errorf("update %s: not changed: invalid JSON at %d:%d: %s", path, p.Line, p.Col, se.msg)
			}
			return fmt.Errorf("update %s: not changed: %w", path, err)
		}
		if doc.kind != kindObject {
			return fmt.Errorf("update %s: not changed: the top level is not an object", path)
		}
		if d := detectDialect(doc); d != DialectVoltmcp {
			return fmt.Errorf("update %s: not changed: the file is in the %s dialect, not voltmcp's", path, d)
		}
	}
	if err := edit(doc); err != nil {
		return fmt.Errorf("update %s: not changed: %w", path, err)
	}
	return WriteFileAtomic(path, doc.indentJSON(), mode)
}

// WriteFileAtomic writes data to a temporary file beside path, syncs it
// and renames it over path, so a reader or a crash sees the old file or
// the new one, never a mix. Missing directories are created 0700.
func WriteFileAtomic(path string, data []byte, mode fs.FileMode) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("write %s: %w", path, pathlessError(err))
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, pathlessError(err))
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err == nil {
		err = tmp.Chmod(mode)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, pathlessError(err))
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, pathlessError(err))
	}
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync() // make the rename durable where the platform allows
		_ = d.Close()
	}
	return nil
}
