package cue

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// deepMerge overlays src on dst by the merge rules: objects merge field by
// field, anything else (arrays included) replaces, and null removes the
// field. Neither input is modified.
func deepMerge(dst, src *node) *node {
	if dst == nil || dst.kind != kindObject || src.kind != kindObject {
		return src.clone()
	}
	out := dst.clone()
	out.src, out.off, out.path = src.src, src.off, src.path
	for _, f := range src.fields {
		if f.value.kind == kindNull {
			out.del(f.key)
			continue
		}
		if i := out.fieldIndex(f.key); i >= 0 {
			out.fields[i] = field{key: f.key, keyOff: f.keyOff, value: deepMerge(out.fields[i].value, f.value)}
			continue
		}
		out.fields = append(out.fields, field{key: f.key, keyOff: f.keyOff, value: f.value.clone()})
	}
	return out
}

// mergeSettings merges the settings of the included layers over the
// defaults.
func mergeSettings(docs []*layerDoc, include func(Layer) bool, defaults *node) *node {
	merged := &node{kind: kindObject}
	for _, ld := range docs {
		if !ld.ok || !include(ld.status.Layer) {
			continue
		}
		if s := ld.doc.get("settings"); s != nil && s.kind == kindObject {
			merged = deepMerge(merged, s)
		}
	}
	return deepMerge(defaults, merged)
}

// adjustFields are the fields a layer may change on a server another
// scope defines without redefining it: they choose how and whether the
// server runs, never what it runs or with which secrets.
func adjustField(key string) bool {
	switch key {
	case "enabled", "title", "lifecycle", "includeTools", "excludeTools", "directTools",
		"connectTimeoutMs", "discoveryTimeoutMs", "callTimeoutMs", "idleTimeoutMs", "metadataRefreshMs":
		return true
	}
	return strings.HasPrefix(key, "x-")
}

// definesServer reports whether a server entry says what to run or reach,
// which makes it a definition rather than an adjustment.
func definesServer(n *node) bool {
	return n.get("command") != nil || n.get("url") != nil || n.get("transport") != nil
}

// mergedServer is one server while the layers merge.
type mergedServer struct {
	id      string
	key     string // key in the defining file
	keyNode *node  // the defining file's servers object, for positions
	def     *layerDoc
	node    *node
	invalid bool
	// entries are the entries of every layer merged into the server, so
	// that its problems can be found among the diagnostics.
	entries []*node
}

// merge merges the included layers into the effective config.
func merge(docs []*layerDoc, include func(Layer) bool, o Options, d *diags) *Config {
	settings := mergeSettings(docs, include, o.Schema.defSettings)
	servers := map[string]*mergedServer{}
	for _, ld := range docs {
		if !ld.ok || !include(ld.status.Layer) {
			continue
		}
		list := ld.doc.get("servers")
		if list == nil || list.kind != kindObject {
			continue
		}
		seen := map[string]string{}
		for _, f := range list.fields {
			id := NormalizeID(f.key)
			switch {
			case id == "":
				d.addAt(SeverityError, CodeServerID, list, f.key, "use letters, digits, - and _",
					"server id %q has no usable characters", f.key)
				continue
			case seen[id] != "":
				d.addAt(SeverityError, CodeServerIDClash, list, f.key, "rename one of them",
					"server %q and server %q both become id %q", seen[id], f.key, id)
				continue
			case id != f.key:
				d.addAt(SeverityInfo, CodeServerIDChanged, list, f.key, "", "server %q has id %q", f.key, id)
			}
			seen[id] = f.key
			if f.value.kind == kindObject && runsGateway(f.value) {
				d.addAt(SeverityInfo, CodeGatewayEntry, list, f.key, "",
					"server %q starts voltmcp serve, the gateway itself: it is the entry that points a client at voltmcp, and is not loaded", f.key)
				continue
			}
			mergeServer(servers, ld, list, f, id, d)
		}
	}
	cfg := &Config{Sources: map[string]Origin{}}
	// A project layer may lower the limits and the media caps, and turn
	// media inlining off, never the other way: where the merged value is
	// above the user layers' own (or true where theirs is false), the
	// user layers' wins.
	var user *node
	for _, block := range []string{"limits", "media"} {
		l := settings.get(block)
		if l == nil {
			continue
		}
		if user == nil {
			user = mergeSettings(docs, func(l Layer) bool { return include(l) && !l.IsProject() }, o.Schema.defSettings)
		}
		ub := user.get(block)
		for _, f := range l.fields {
			u := ub.get(f.key)
			switch {
			case u == nil || u.kind != f.value.kind:
			case u.kind == kindBool:
				if f.value.bool && !u.bool {
					l.set(f.key, u.clone())
				}
			case u.kind == kindNumber:
				uv, err1 := strconv.ParseInt(u.str, 10, 64)
				mv, err2 := strconv.ParseInt(f.value.str, 10, 64)
				if err1 == nil && err2 == nil && mv > uv {
					l.set(f.key, u.clone())
				}
			}
		}
	}
	recordSources(cfg.Sources, "settings", settings)
	if err := decodeNode(settings, &cfg.Settings); err != nil {
		// Only validated values reach here; a failure is a bug, reported
		// rather than hidden.
		d.add(SeverityError, CodeInvalidValue, settings, "settings", "", "internal error decoding settings: %v", err)
	}
	ids := make([]string, 0, len(servers))
	for id := range servers {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		ms := servers[id]
		srv := resolveServer(ms, settings, o.Schema.defServer, d)
		if o.Lint {
			lintServer(ms, srv, d)
		}
		recordSources(cfg.Sources, childPath("servers", id), ms.node)
		cfg.Servers = append(cfg.Servers, srv)
	}
	return cfg
}

// mergeServer merges one layer's entry for a server into the others'.
func mergeServer(servers map[string]*mergedServer, ld *layerDoc, list *node, f field, id string, d *diags) {
	entry := f.value
	prev := servers[id]
	if entry.kind == kindNull {
		if prev != nil {
			delete(servers, id)
		}
		return
	}
	if entry.kind != kindObject {
		return
	}
	hadErrors := entry.bad || entry.errs
	fresh := func() {
		servers[id] = &mergedServer{id: id, key: f.key, keyNode: list, def: ld, node: entry.clone(), invalid: hadErrors, entries: []*node{entry}}
	}
	switch {
	case prev == nil:
		fresh()
	case prev.def.status.Layer.scope() == ld.status.Layer.scope():
		if authType(entry) != "" && authType(entry) != authType(prev.node) {
			// Another kind of auth replaces the old one: fields of a bearer
			// token must not linger in an OAuth config.
			prev.node.del("auth")
		}
		prev.node = deepMerge(prev.node, entry)
		prev.invalid = prev.invalid || hadErrors
		prev.entries = append(prev.entries, entry)
		if definesServer(entry) {
			prev.def, prev.key, prev.keyNode = ld, f.key, list
		}
	case definesServer(entry):
		// A project definition replaces a user definition whole: nothing
		// of the user's env, headers or auth carries over.
		fresh()
		return
	default:
		prev.node = deepMerge(prev.node, adjustment(prev, entry, id, d))
		prev.invalid = prev.invalid || hadErrors
		prev.entries = append(prev.entries, entry)
	}

}

// adjustment returns the part of a project entry that may change a
// server a user layer defines, reporting the rest. An adjustment may
// narrow what the user's server exposes, never widen it: it cannot add
// what runs or its secrets, re-enable a server the user disabled, remove
// a user's value, drop an excluded tool or include a tool the user's
// includeTools leaves out.
func adjustment(prev *mergedServer, entry *node, id string, d *diags) *node {
	scope := prev.def.status.Layer.scope()
	adj := &node{kind: kindObject, src: entry.src, off: entry.off, path: entry.path}
	refuse := func(sev Severity, key, hint, format string, args ...any) {
		d.addAt(sev, CodeCrossScopeField, entry, key, hint, format, args...)
	}
	for _, af := range entry.fields {
		v, have := af.value, prev.node.get(af.key)
		switch {
		case !adjustField(af.key):
			refuse(SeverityError, af.key, "redefine the server with command or url, or set the field in the "+scope+" layer",
				"%q cannot be added to server %q, which a %s layer defines, without redefining it", af.key, id, scope)
			continue
		case v.kind == kindNull:
			refuse(SeverityError, af.key, "change it in the "+scope+" layer",
				"%q of server %q comes from a %s layer and cannot be removed here", af.key, id, scope)
			continue
		case af.key == "enabled" && v.kind == kindBool && v.bool && have != nil && have.kind == kindBool && !have.bool:
			refuse(SeverityWarning, af.key, "enable it in the "+scope+" layer",
				"server %q is disabled by a %s layer; a project cannot enable it, so this is ignored", id, scope)
			continue
		case af.key == "excludeTools" && have != nil && have.kind == kindArray && v.kind == kindArray:
			union := have.clone()
			union.src, union.off, union.path = v.src, v.off, v.path
			for _, it := range v.items {
				if !containsStr(have.strs(), it.str) {
					union.items = append(union.items, it)
				}
			}
			adj.fields = append(adj.fields, field{key: af.key, keyOff: af.keyOff, value: union})
			continue
		case af.key == "includeTools" && have != nil && len(have.items) > 0 && v.kind == kindArray:
			if wider := widens(have.strs(), v.strs()); wider != "" {
				refuse(SeverityError, af.key, "list only tools the "+scope+" layer's includeTools allows",
					"includeTools %q would let in tools the %s layer's includeTools keeps out", wider, scope)
				continue
			}
		}
		adj.fields = append(adj.fields, af)
	}
	return adj
}

// authType returns the auth type a server entry sets, or "".
func authType(n *node) string {
	if t := n.get("auth").get("type"); t != nil && t.kind == kindString {
		return t.str
	}
	return ""
}

// widens returns the first pattern of next that base does not cover: a
// name or glob that no base glob matches exactly or as a name.
func widens(base, next []string) string {
	for _, n := range next {
		covered := false
		for _, b := range base {
			if b == n || (!hasWildcard(n) && globMatch(b, n)) {
				covered = true
				break
			}
		}
		if !covered {
			return n
		}
	}
	return ""
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// resolveServer applies defaults and checks what the merged server needs.
func resolveServer(ms *mergedServer, settings, defaults *node, d *diags) Server {
	n := deepMerge(defaults, ms.node)
	n.src, n.off, n.path = ms.node.src, ms.node.off, ms.node.path
	for _, k := range []string{"connectTimeoutMs", "discoveryTimeoutMs", "callTimeoutMs", "idleTimeoutMs", "metadataRefreshMs"} {
		if n.get(k) == nil {
			n.set(k, settings.get(k))
		}
	}
	at := func(code Code, hint, format string, args ...any) {
		d.addAt(SeverityError, code, ms.keyNode, ms.key, hint, format, args...)
		ms.invalid = true
	}
	cmd, url, tr := n.get("command"), n.get("url"), n.get("transport")
	switch {
	case cmd != nil && url != nil:
		at(CodeTransportMismatch, "a server is either a command (stdio) or a url (HTTP)", "server %q has both command and url", ms.id)
	case tr != nil && tr.str == TransportStdio && cmd == nil:
		at(CodeMissingField, `add "command"`, "stdio server %q needs a command", ms.id)
	case tr != nil && tr.str != TransportStdio && url == nil:
		at(CodeMissingField, `add "url"`, "%s server %q needs a url", tr.str, ms.id)
	case cmd == nil && url == nil && tr == nil && ms.def.status.Layer == LayerFile:
		// Checked on its own, an overlay (such as .volt/mcp.json adjusting
		// a server of .mcp.json) has nothing to run; that is not an error.
		d.addAt(SeverityInfo, CodeMissingField, ms.keyNode, ms.key, "vet the layers together (voltmcp vet --project DIR) to check the merge",
			"server %q only adjusts a server defined in another file", ms.id)
		ms.invalid = true
	case cmd == nil && url == nil:
		hint := `add "command" for a local server or "url" for a remote one`
		if !definesServer(ms.node) {
			hint = "this entry only adjusts a server; define it (with command or url) in this or a lower layer"
		}
		at(CodeMissingField, hint, "server %q has neither command nor url", ms.id)
	}
	auto := false
	if tr == nil {
		switch {
		case cmd != nil:
			n.set("transport", &node{kind: kindString, str: TransportStdio})
		case url != nil:
			auto = true
			n.set("transport", &node{kind: kindString, str: TransportStreamableHTTP})
		}
	}
	stdio := cmd != nil || (tr != nil && tr.str == TransportStdio)
	for _, k := range []string{"command", "args", "cwd", "env", "envAllowlist", "url", "headers", "auth"} {
		if n.get(k) == nil {
			continue
		}
		isStdioField := k == "command" || k == "args" || k == "cwd" || k == "env" || k == "envAllowlist"
		if stdio != isStdioField && (cmd == nil || url == nil) {
			kind := "an HTTP"
			if stdio {
				kind = "a stdio"
			}
			d.addAt(SeverityError, CodeTransportMismatch, n, k, "remove it", "%q does not apply to %s server", k, kind)
			ms.invalid = true
		}
	}
	var srv Server
	if err := decodeNode(n, &srv); err != nil {
		at(CodeInvalidValue, "", "internal error decoding server %q: %v", ms.id, err)
	}
	var gw Limits
	if l := settings.get("limits"); l != nil {
		_ = decodeNode(l, &gw)
	}
	srv.Limits = gw.Min(srv.Limits)
	srv.ID, srv.Key, srv.TransportAuto = ms.id, ms.key, auto
	srv.Layer, srv.File, srv.BaseDir = ms.def.status.Layer, ms.def.status.Path, ms.def.baseDir
	if ms.invalid {
		srv.Invalid, srv.Enabled = true, false
		srv.Problem = ms.problem(d)
	}
	ms.node = n
	return srv
}

// problem returns the first error reported in the server's entries, in
// the order diagnostics are shown, as file:line:col: message.
func (ms *mergedServer) problem(d *diags) string {
	var found Diagnostics
	for _, dg := range d.list {
		if dg.Severity != SeverityError {
			continue
		}
		for _, n := range ms.entries {
			if n.src != nil && dg.File == n.src.name && (dg.Path == n.path || strings.HasPrefix(dg.Path, n.path+".") || strings.HasPrefix(dg.Path, n.path+"[")) {
				found = append(found, dg)
				break
			}
		}
	}
	if len(found) == 0 {
		return "the definition has errors"
	}
	found.Sort()
	return found[0].String()
}

// decodeNode decodes a validated node into a Go value.
func decodeNode(n *node, v any) error {
	if err := json.Unmarshal(n.appendJSON(nil), v); err != nil {
		return fmt.Errorf("decode %s: %w", n.path, err)
	}
	return nil
}

// recordSources notes where each leaf (and each array, which replaces
// whole) of the effective config came from.
func recordSources(out map[string]Origin, path string, n *node) {
	if n == nil {
		return
	}
	if n.kind == kindObject {
		for _, f := range n.fields {
			recordSources(out, childPath(path, f.key), f.value)
		}
		return
	}
	if n.src == nil {
		return // derived by the loader, such as an inferred transport
	}
	o := Origin{Layer: n.src.layer}
	if n.src.layer != LayerDefault {
		o.Position = n.pos()
	}
	out[path] = o
}
