package cue

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path"
	"regexp"
	"strings"

	"github.com/voltmcp/voltmcp/redact"
	"github.com/voltmcp/voltmcp/safefile"
)

// The bounds on a file of another MCP client. Such a file can hold far
// more than MCP config (Claude Code's ~/.claude.json keeps its whole
// state), so they are larger than those of a config layer, and still
// bounded.
const (
	// MaxClientFileSize is the largest client file voltmcp reads or edits.
	MaxClientFileSize = 32 << 20
	// maxClientValues bounds the JSON values of a client file.
	maxClientValues = 4 << 20
)

// ClientFileOptions say how to read another MCP client's config file.
type ClientFileOptions struct {
	// Schema validates the servers. Nil compiles the embedded schema.
	Schema *Schema
	// Dialect is the file's JSON dialect, DialectClaude (an mcpServers
	// map) or DialectVSCode (a servers map). Empty detects it.
	Dialect Dialect
	// Under is the chain of object keys that leads from the top of the
	// file to the object holding the servers map, as in ~/.claude.json's
	// {"projects": {"/abs/project": {"mcpServers": …}}}. Empty: the top.
	Under []string
	// Codex reads the file as Codex's config.toml, whose servers are
	// [mcp_servers.NAME] tables.
	Codex bool
	// Projects also lists the entries of the file's top-level projects
	// object that hold servers (Claude Code's per-project servers in
	// ~/.claude.json) in [ClientFile.Projects], whatever Under says.
	Projects bool
}

// ClientFile is what [ReadClientFile] found in one file.
type ClientFile struct {
	Path string
	// Found is false when the file does not exist, which is not an error.
	Found bool
	// Dialect is the JSON dialect the servers were read in; "codex" for
	// Codex's TOML.
	Dialect Dialect
	// Servers are the definitions found, in file order, rewritten in
	// voltmcp's dialect.
	Servers []ClientServer
	// Diagnostics are the problems found, each at its file:line. A
	// server with an error is in Servers with Invalid set.
	Diagnostics Diagnostics
	// Projects are the entries of the projects object that hold servers,
	// in file order, when [ClientFileOptions.Projects] asks for them.
	Projects []ClientProject
}

// ClientProject is one entry of the projects object of Claude Code's
// ~/.claude.json: a project directory with servers of its own, which
// Claude Code starts only in that project.
type ClientProject struct {
	// Dir is the entry's key: the project's absolute path.
	Dir string
	// Servers are the entry's servers, in file order, without any that
	// starts voltmcp serve (see [ClientServer.Gateway]).
	Servers []ClientProjectServer
}

// ClientProjectServer is a server of a [ClientProject]: its key and
// where it is written. Read the project's entry with
// [ClientFileOptions.Under] for its definition.
type ClientProjectServer struct {
	Key string
	At  Position
}

// ClientServer is one server definition of another client's file.
type ClientServer struct {
	// Key is the server's name as the file spells it; ID is its id.
	Key, ID string
	// At is where the definition is written.
	At Position
	// Invalid is true when the definition has errors (see the file's
	// Diagnostics); an invalid definition is not for writing.
	Invalid bool
	// Gateway is true when the entry starts voltmcp serve itself: it is
	// what `voltmcp setup` writes, not a server to import.
	Gateway bool
	// Secrets are the credentials the definition holds in plain text.
	Secrets []ClientSecret
	// Summary is the command line or URL, fit to print: secrets redacted.
	Summary string

	def *node // voltmcp's dialect, literal secrets as written
}

// ClientSecret is one credential a client's file holds in plain text,
// and the ${env:NAME} reference suggested in its place. It never holds
// the value.
type ClientSecret struct {
	// Field is where it is in the server: env.KEY, headers.KEY,
	// auth.token, args[2] or url.
	Field string
	// At is where the value is written.
	At Position
	// Variable is the environment variable suggested to hold it.
	Variable string
}

// Definition returns the server in voltmcp's dialect, as JSON: each
// literal secret replaced by its ${env:NAME} reference, or, with
// keepSecrets, as written in the client's file.
func (s ClientServer) Definition(keepSecrets bool) []byte {
	if s.def == nil {
		return nil
	}
	n := s.def.clone()
	if !keepSecrets {
		replaceSecrets(n, s.ID)
	}
	return n.appendJSON(nil)
}

// ReadClientFile reads the MCP servers of another client's config file:
// the mcpServers dialect (Claude Code, Claude Desktop, Cursor, Windsurf),
// VS Code's, or Codex's TOML. Each file is validated with the schema the
// loader uses, and every problem is a diagnostic at its file:line; the
// error is for a failure to read a file that exists. It writes nothing.
func ReadClientFile(path string, opts *ClientFileOptions) (*ClientFile, error) {
	var o ClientFileOptions
	if opts != nil {
		o = *opts
	}
	if o.Schema == nil {
		s, err := NewSchema()
		if err != nil {
			return nil, err
		}
		o.Schema = s
	}
	cf := &ClientFile{Path: path}
	data, err := safefile.ReadFile(path, &safefile.ReadOptions{MaxSize: MaxClientFileSize})
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return cf, nil
	case errors.Is(err, safefile.ErrTooLarge):
		return nil, fmt.Errorf("read %s: over the %d byte limit", path, MaxClientFileSize)
	case err != nil:
		return nil, fmt.Errorf("read %s: %w", path, pathlessError(err))
	}
	cf.Found = true
	src := newSource(path, LayerFile, data)
	var d diags
	var doc *node
	if o.Codex {
		cf.Dialect = "codex"
		doc = readCodex(src, &d)
		if doc == nil {
			cf.Diagnostics = d.list
			return cf, nil
		}
		o.Schema.validate(doc, DialectVoltmcp, &d)
	} else {
		top, _, err := parseJSONMax(src, maxClientValues)
		if err != nil {
			var se *syntaxError
			var le *limitError
			msg, off := err.Error(), 0
			if errors.As(err, &se) {
				msg, off = "invalid JSON: "+se.msg, se.off
			} else if errors.As(err, &le) {
				msg, off = le.msg, le.off
			}
			d.list = append(d.list, Diagnostic{Severity: SeverityError, Code: CodeJSONSyntax, Message: msg, Position: src.position(off)})
			cf.Diagnostics = d.list
			return cf, nil
		}
		if o.Projects {
			cf.Projects = clientProjects(top)
		}
		obj := top
		for _, k := range o.Under {
			obj = obj.get(k)
		}
		if obj == nil || obj.kind != kindObject {
			return cf, nil
		}
		dialect := o.Dialect
		if dialect == "" {
			dialect = detectDialect(obj)
		}
		cf.Dialect = dialect
		key := "servers"
		if dialect == DialectClaude {
			key = "mcpServers"
		}
		list := obj.get(key)
		if list == nil {
			return cf, nil
		}
		// Only the servers map is checked: the rest of the file is the
		// client's own.
		i := obj.fieldIndex(key)
		doc = &node{kind: kindObject, src: src, off: obj.off, path: obj.path, fields: []field{{key: key, keyOff: obj.fields[i].keyOff, value: list}}}
		o.Schema.validate(doc, dialect, &d)
		doc = normalize(doc, dialect, &d)
	}
	doc.prune()
	list := doc.get("servers")
	if list == nil || list.kind != kindObject {
		cf.Diagnostics = d.list
		return cf, nil
	}
	for _, f := range list.fields {
		if f.value.kind != kindObject {
			continue
		}
		cs := ClientServer{Key: f.key, ID: NormalizeID(f.key), At: list.keyPos(f.key), def: f.value,
			Invalid: f.value.bad || f.value.errs || NormalizeID(f.key) == ""}
		if cs.ID == "" {
			d.addAt(SeverityError, CodeServerID, list, f.key, "use letters, digits, - and _", "server id %q has no usable characters", f.key)
		}
		cs.Gateway = runsGateway(f.value)
		for _, s := range literalSecrets(f.value) {
			cs.Secrets = append(cs.Secrets, ClientSecret{Field: s.field, At: s.n.pos(), Variable: secretVariable(cs.ID, s.field, f.value)})
		}
		cs.Summary = serverSummary(f.value)
		cf.Servers = append(cf.Servers, cs)
	}
	d.list = d.list.unique()
	d.list.Sort()
	cf.Diagnostics = d.list
	return cf, nil
}

// clientProjects lists the entries of top's projects object whose
// mcpServers map holds servers other than voltmcp's own entry.
func clientProjects(top *node) []ClientProject {
	projects := top.get("projects")
	if projects == nil || projects.kind != kindObject {
		return nil
	}
	var out []ClientProject
	for _, p := range projects.fields {
		if p.value.kind != kindObject {
			continue
		}
		list := p.value.get("mcpServers")
		if list == nil || list.kind != kindObject {
			continue
		}
		cp := ClientProject{Dir: p.key}
		for _, f := range list.fields {
			if f.value.kind == kindObject && runsGateway(f.value) {
				continue
			}
			cp.Servers = append(cp.Servers, ClientProjectServer{Key: f.key, At: list.keyPos(f.key)})
		}
		if len(cp.Servers) > 0 {
			out = append(out, cp)
		}
	}
	return out
}

// runsGateway reports whether a server entry starts voltmcp serve: the
// entry `voltmcp setup` writes into a client's file, which voltmcp must
// neither import nor start, since it would start itself.
func runsGateway(n *node) bool {
	cmd := n.get("command")
	if cmd == nil || cmd.kind != kindString {
		return false
	}
	base := strings.ToLower(path.Base(strings.ReplaceAll(cmd.str, `\`, "/")))
	if strings.TrimSuffix(base, ".exe") != "voltmcp" {
		return false
	}
	for _, a := range n.get("args").strs() {
		if a == "serve" {
			return true
		}
	}
	return false
}

// serverSummary is the command line or URL of a server, secrets
// redacted.
func serverSummary(n *node) string {
	if u := n.get("url"); u != nil && u.kind == kindString {
		return redact.URL(u.str)
	}
	cmd := n.get("command")
	if cmd == nil || cmd.kind != kindString {
		return ""
	}
	return strings.Join(append([]string{cmd.str}, redact.Args(n.get("args").strs())...), " ")
}

var notEnvChar = regexp.MustCompile(`[^A-Z0-9_]+`)

// envName turns words into an environment variable name: upper case,
// letters, digits and _.
func envName(parts ...string) string {
	s := notEnvChar.ReplaceAllString(strings.ToUpper(strings.Join(parts, "_")), "_")
	s = strings.Trim(s, "_")
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		s = "MCP_" + s
	}
	return s
}

// secretVariable names the environment variable suggested for a literal
// secret: an env entry keeps its own name; the others are named after
// the server and the field.
func secretVariable(id, field string, n *node) string {
	switch {
	case strings.HasPrefix(field, "env"):
		return envName(lastKey(field))
	case strings.HasPrefix(field, "headers"):
		h := lastKey(field)
		if strings.EqualFold(h, "authorization") {
			return envName(id, "token")
		}
		return envName(id, strings.TrimPrefix(strings.ToLower(h), "x-"))
	case field == "auth.token":
		return envName(id, "token")
	case field == "auth.clientSecret":
		return envName(id, "client_secret")
	case field == "url":
		return envName(id, "token")
	case strings.HasPrefix(field, "args["):
		args := n.get("args").strs()
		i := 0
		fmt.Sscanf(field, "args[%d]", &i)
		if i < len(args) {
			if name, _, ok := strings.Cut(args[i], "="); ok && strings.HasPrefix(name, "-") {
				return envName(id, strings.TrimLeft(name, "-"))
			}
			if i > 0 && strings.HasPrefix(args[i-1], "-") {
				return envName(id, strings.TrimLeft(args[i-1], "-"))
			}
		}
		return envName(id, "token")
	}
	return envName(id, "secret")
}

// lastKey returns the last key of a field path such as env.KEY or
// headers["X-Api-Key"].
func lastKey(p string) string {
	if i := strings.Index(p, `["`); i >= 0 {
		return strings.TrimSuffix(p[i+2:], `"]`)
	}
	return p[strings.LastIndex(p, ".")+1:]
}

// schemeRE matches a value that frames a credential with a scheme word,
// as in "Bearer sk-…": the word is kept before the reference.
var schemeRE = regexp.MustCompile(`^([A-Za-z]+ )\S+$`)

// replaceSecrets replaces each literal secret of a server definition
// with its ${env:NAME} reference.
func replaceSecrets(n *node, id string) {
	for _, s := range literalSecrets(n) {
		ref := "${env:" + secretVariable(id, s.field, n) + "}"
		switch {
		case s.field == "url":
			s.n.str = urlWithRef(s.n.str, ref)
		case strings.HasPrefix(s.field, "args["):
			if name, _, ok := strings.Cut(s.n.str, "="); ok && strings.HasPrefix(name, "-") {
				s.n.str = name + "=" + ref
			} else {
				s.n.str = ref
			}
		case schemeRE.MatchString(s.n.str):
			s.n.str = schemeRE.FindStringSubmatch(s.n.str)[1] + ref
		default:
			s.n.str = ref
		}
	}
}

// urlWithRef replaces the credential a URL holds (a password, or the
// value of a query parameter that holds a secret) with ref.
func urlWithRef(raw, ref string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "SECRET")
	} else if u.User != nil && redact.LooksSecret(u.User.Username()) {
		u.User = url.User("SECRET")
	}
	out := u.String()
	if u.User != nil {
		out = strings.Replace(out, "SECRET", ref, 1)
	}
	base, query, ok := strings.Cut(out, "?")
	if !ok {
		return out
	}
	frag := ""
	if i := strings.Index(query, "#"); i >= 0 {
		query, frag = query[:i], query[i:]
	}
	parts := strings.Split(query, "&")
	for i, p := range parts {
		k, v, _ := strings.Cut(p, "=")
		key, _ := url.QueryUnescape(k)
		val, _ := url.QueryUnescape(v)
		if redact.IsLiteralSecret(key, val) {
			parts[i] = k + "=" + ref
		}
	}
	return base + "?" + strings.Join(parts, "&") + frag
}
