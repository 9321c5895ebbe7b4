package cue

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// NewServer is a server definition to write: its key and its definition
// in voltmcp's dialect, as a JSON object.
type NewServer struct {
	Key string
	Def []byte
}

// AddOptions tune [AddServers].
type AddOptions struct {
	// Schema validates the definitions. Nil compiles the embedded schema.
	Schema *Schema
	// Replace lets a definition replace an entry the file already has
	// for the same id. Without it such an entry is an error.
	Replace bool
	// AllowLiteralSecrets writes a definition that holds a credential in
	// plain text. Without it that is an error, as in `voltmcp vet`.
	AllowLiteralSecrets bool
	// TrustStore keeps a trusted project's trust across this write, as
	// [WriteOptions.TrustStore] does.
	TrustStore string
}

// ErrServerExists is returned by [AddServers] for a server the file
// already has, and ErrServerNotFound by [RemoveServer] for one it does
// not.
var (
	ErrServerExists   = errors.New("server already defined")
	ErrServerNotFound = errors.New("server not defined in the file")
)

// CheckServer validates one server definition (a JSON object in
// voltmcp's dialect) with the schema the loader uses, and runs the
// literal-secret lint. The diagnostics point into the definition, named
// "server KEY".
func CheckServer(s *Schema, key string, def []byte) (Diagnostics, error) {
	if s == nil {
		var err error
		if s, err = NewSchema(); err != nil {
			return nil, err
		}
	}
	var d diags
	n, err := parseDef(key, def)
	if err != nil {
		return nil, err
	}
	if NormalizeID(key) == "" {
		d.list = append(d.list, Diagnostic{Severity: SeverityError, Code: CodeServerID, Message: fmt.Sprintf("server id %q has no usable characters", key),
			Hint: "use letters, digits, - and _", Position: Position{File: "server " + key}})
	}
	doc := &node{kind: kindObject, src: n.src, fields: []field{{key: "servers", keyOff: -1, value: &node{kind: kindObject, src: n.src,
		path: "servers", fields: []field{{key: key, keyOff: -1, value: n}}}}}}
	s.validate(doc, DialectVoltmcp, &d)
	rewriteRefs(n, DialectVoltmcp, &d)
	if !definesServer(n) {
		d.list = append(d.list, Diagnostic{Severity: SeverityError, Code: CodeMissingField, Message: "the server needs a command or a url",
			Position: Position{File: "server " + key}, Path: childPath("servers", key)})
	}
	lintSecrets(n, &d)
	d.list = d.list.unique()
	d.list.Sort()
	return d.list, nil
}

// parseDef parses a definition given as JSON into a node tree, with
// field paths as in a file: servers.KEY.url.
func parseDef(key string, def []byte) (*node, error) {
	src := newSource("server "+key, LayerFile, def)
	n, _, err := parseJSON(src)
	if err != nil {
		return nil, fmt.Errorf("server %q: the definition is not valid JSON: %w", key, err)
	}
	if n.kind != kindObject {
		return nil, fmt.Errorf("server %q: the definition is not an object", key)
	}
	// Re-root the paths under servers.KEY, as the schema's walk expects.
	var reroot func(n *node, p string)
	reroot = func(n *node, p string) {
		n.path = p
		for _, f := range n.fields {
			reroot(f.value, childPath(p, f.key))
		}
		for i, it := range n.items {
			reroot(it, indexPath(p, i))
		}
	}
	reroot(n, childPath("servers", key))
	return n, nil
}

// AddServers writes server definitions into a voltmcp-owned layer's
// file, all in one atomic, locked update that keeps the rest of the file.
// Each definition is first checked with [CheckServer]; one with an error
// (or a literal secret, unless AllowLiteralSecrets) stops the whole
// write, and nothing is changed.
func AddServers(ctx context.Context, loc Locations, layer Layer, servers []NewServer, opts *AddOptions) error {
	var o AddOptions
	if opts != nil {
		o = *opts
	}
	if !layer.VoltmcpOwned() {
		return fmt.Errorf("add servers: layer %s is not voltmcp's to write; use %s or %s", layer, LayerUser, LayerProject)
	}
	if o.Schema == nil {
		s, err := NewSchema()
		if err != nil {
			return err
		}
		o.Schema = s
	}
	nodes := make([]*node, len(servers))
	for i, s := range servers {
		ds, err := CheckServer(o.Schema, s.Key, s.Def)
		if err != nil {
			return err
		}
		var errs []string
		for _, d := range ds {
			if d.Severity == SeverityError && !(o.AllowLiteralSecrets && d.Code == CodeLiteralSecret) {
				msg := d.Message
				if d.Path != "" {
					msg = d.Path + ": " + msg
				}
				if d.Hint != "" {
					msg += " (" + d.Hint + ")"
				}
				errs = append(errs, msg)
			}
		}
		if len(errs) > 0 {
			return fmt.Errorf("server %q is not valid: %s", s.Key, strings.Join(errs, "; "))
		}
		nodes[i], _ = parseDef(s.Key, s.Def)
	}
	return updateFile(ctx, loc, layer, &WriteOptions{TrustStore: o.TrustStore}, func(doc *node) error {
		list, err := serversOf(doc)
		if err != nil {
			return err
		}
		for i, s := range servers {
			key := s.Key
			if have := keyFor(list, s.Key); have != "" {
				if !o.Replace {
					return fmt.Errorf("server %q: %w in %s", s.Key, ErrServerExists, loc.Path(layer))
				}
				key = have
			}
			list.set(key, plain(nodes[i]))
		}
		return nil
	})
}

// AddServer is [AddServers] for one server.
func AddServer(ctx context.Context, loc Locations, layer Layer, key string, def []byte, opts *AddOptions) error {
	return AddServers(ctx, loc, layer, []NewServer{{Key: key, Def: def}}, opts)
}

// RemoveServer removes a server's entry from a voltmcp-owned layer's
// file, atomically and keeping the rest of the file. An entry the file
// does not have is [ErrServerNotFound]: a server another file defines is
// not voltmcp's to delete. With opts.TrustStore, a trusted project keeps
// its trust (see [WriteOptions]); a nil opts is the zero WriteOptions.
func RemoveServer(ctx context.Context, loc Locations, layer Layer, id string, opts *WriteOptions) error {
	if !layer.VoltmcpOwned() {
		return fmt.Errorf("remove server %q: layer %s is not voltmcp's to write; use %s or %s", id, layer, LayerUser, LayerProject)
	}
	return updateFile(ctx, loc, layer, opts, func(doc *node) error {
		list, err := serversOf(doc)
		if err != nil {
			return err
		}
		key := keyFor(list, id)
		if key == "" {
			return fmt.Errorf("server %q: %w %s", id, ErrServerNotFound, loc.Path(layer))
		}
		list.del(key)
		return nil
	})
}

// serversOf returns the servers object of a voltmcp-dialect file,
// adding it when missing.
func serversOf(doc *node) (*node, error) {
	list := doc.get("servers")
	if list == nil {
		list = &node{kind: kindObject, fields: []field{}}
		doc.set("servers", list)
	}
	if list.kind != kindObject {
		return nil, errors.New("servers is not an object")
	}
	return list, nil
}

// keyFor returns the key under which an object holds the given server
// id, or "".
func keyFor(list *node, id string) string {
	for _, f := range list.fields {
		if NormalizeID(f.key) == NormalizeID(id) {
			return f.key
		}
	}
	return ""
}

// plain returns a copy of n with no source, as a value a writer adds.
func plain(n *node) *node {
	c := n.clone()
	var strip func(n *node)
	strip = func(n *node) {
		n.src, n.off, n.bad, n.errs = nil, 0, false, false
		for i := range n.fields {
			n.fields[i].keyOff = -1
			strip(n.fields[i].value)
		}
		for _, it := range n.items {
			strip(it)
		}
	}
	strip(c)
	return c
}

// ClientEdit is a change to the servers map of another MCP client's JSON
// config file (see [EditClientFile]).
type ClientEdit struct {
	// Under is the chain of object keys from the top of the file to the
	// object that holds the map, created when missing (see
	// [ClientFileOptions]).
	Under []string
	// Map is the servers map's key: "mcpServers" or "servers".
	Map string
	// Set adds these entries, or replaces those of the same key, with
	// the definition as given: in the client's own dialect.
	Set []NewServer
	// Remove deletes the entries of these keys.
	Remove []string
	// Backup is where to copy the file before voltmcp first changes it,
	// normally [Locations.BackupFile]. An existing backup is kept: it
	// holds the file as it was before voltmcp touched it. Empty: no
	// backup.
	Backup string
}

// EditClientFile changes the servers map of another client's JSON config
// file (~/.claude.json, .mcp.json, ~/.cursor/mcp.json, .vscode/mcp.json)
// and keeps everything else it holds, in its order. Like voltmcp's own
// files, it is read, edited and written under the file's lock
// ([Locations.LockFile], so nothing is left beside the file) and
// replaced atomically; a missing file is created, a file that does not
// parse is left alone. The file keeps its layout: its indent, one line
// or many, its line ends and its final newline.
func EditClientFile(ctx context.Context, loc Locations, path string, e *ClientEdit) error {
	if e.Map != "mcpServers" && e.Map != "servers" {
		return fmt.Errorf("edit %s: the servers map is mcpServers or servers, not %q", path, e.Map)
	}
	defs := make([]*node, len(e.Set))
	for i, s := range e.Set {
		n, err := parseDef(s.Key, s.Def)
		if err != nil {
			return err
		}
		defs[i] = plain(n)
	}
	je := jsonEdit{fresh: func() *node { return &node{kind: kindObject, fields: []field{}} },
		backup: e.Backup, lock: loc.LockFile(path), maxSize: MaxClientFileSize, maxValues: maxClientValues}
	return updateJSON(ctx, path, LayerFile, je, func(doc *node) error {
		obj := doc
		for _, k := range e.Under {
			next := obj.get(k)
			if next == nil {
				if len(e.Set) == 0 {
					return nil // nothing to remove
				}
				next = &node{kind: kindObject, fields: []field{}}
				obj.set(k, next)
			}
			if next.kind != kindObject {
				return fmt.Errorf("%s is not an object", k)
			}
			obj = next
		}
		list := obj.get(e.Map)
		if list == nil {
			if len(e.Set) == 0 {
				return nil
			}
			list = &node{kind: kindObject, fields: []field{}}
			obj.set(e.Map, list)
		}
		if list.kind != kindObject {
			return fmt.Errorf("%s is not an object", e.Map)
		}
		for _, k := range e.Remove {
			list.del(k)
		}
		for i, s := range e.Set {
			list.set(s.Key, defs[i])
		}
		return nil
	})
}
