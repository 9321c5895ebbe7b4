package cue

import (
	_ "embed"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	cuelang "cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/token"

	"github.com/voltmcp/voltmcp/redact"
)

//go:embed schema.cue
var schemaSource []byte

// SchemaSource returns the embedded CUE schema, for `voltmcp schema --cue`
// and for readers who want the source of truth.
func SchemaSource() []byte { return append([]byte(nil), schemaSource...) }

// Schema is the compiled config schema. It is safe for concurrent use;
// compile it once with NewSchema and share it between loads.
type Schema struct {
	mu       sync.Mutex // guards ctx: a CUE context is not safe for concurrent use
	ctx      *cuelang.Context
	root     cuelang.Value
	files    map[Dialect]cuelang.Value
	servers  map[Dialect]cuelang.Value
	settings cuelang.Value
	auth     map[string]cuelang.Value
	// defaults are #Defaults as nodes, so merged values can cite them.
	defSettings *node
	defServer   *node
}

// NewSchema compiles the embedded schema.
func NewSchema() (*Schema, error) {
	ctx := cuecontext.New()
	root := ctx.CompileBytes(schemaSource, cuelang.Filename("schema.cue"))
	if err := root.Validate(); err != nil {
		return nil, fmt.Errorf("compile embedded schema: %w", err)
	}
	s := &Schema{
		ctx:      ctx,
		root:     root,
		settings: root.LookupPath(cuelang.ParsePath("#Settings")),
		files: map[Dialect]cuelang.Value{
			DialectVoltmcp: root.LookupPath(cuelang.ParsePath("#VoltmcpFile")),
			DialectClaude:  root.LookupPath(cuelang.ParsePath("#ClaudeFile")),
			DialectVSCode:  root.LookupPath(cuelang.ParsePath("#VSCodeFile")),
		},
		servers: map[Dialect]cuelang.Value{
			DialectVoltmcp: root.LookupPath(cuelang.ParsePath("#Server")),
			DialectClaude:  root.LookupPath(cuelang.ParsePath("#ClaudeServer")),
			DialectVSCode:  root.LookupPath(cuelang.ParsePath("#VSCodeServer")),
		},
		auth: map[string]cuelang.Value{
			"none":   root.LookupPath(cuelang.ParsePath("#AuthNone")),
			"bearer": root.LookupPath(cuelang.ParsePath("#AuthBearer")),
			"env":    root.LookupPath(cuelang.ParsePath("#AuthEnv")),
			"oauth":  root.LookupPath(cuelang.ParsePath("#AuthOAuth")),
		},
	}
	defaults := root.LookupPath(cuelang.ParsePath("#Defaults"))
	for _, v := range []cuelang.Value{s.settings, defaults} {
		if !v.Exists() {
			return nil, fmt.Errorf("embedded schema: missing definition: %v", v.Err())
		}
	}
	js, err := defaults.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("embedded schema: defaults: %w", err)
	}
	src := newSource("(defaults)", LayerDefault, js)
	def, _, err := parseJSON(src)
	if err != nil {
		return nil, fmt.Errorf("embedded schema: defaults: %w", err)
	}
	s.defSettings, s.defServer = def.get("settings"), def.get("server")
	return s, nil
}

// fieldNames lists the named fields a definition allows, sorted.
func fieldNames(def cuelang.Value) []string {
	var names []string
	it, err := def.Fields(cuelang.Optional(true))
	if err != nil {
		return nil
	}
	for it.Next() {
		names = append(names, it.Selector().Unquoted())
	}
	sort.Strings(names)
	return names
}

// namesOf returns *cache, filling it with the def's field names first.
func namesOf(cache *[]string, def cuelang.Value) []string {
	if *cache == nil {
		if *cache = fieldNames(def); *cache == nil {
			*cache = []string{}
		}
	}
	return *cache
}

// requiredNames lists the fields a definition requires.
func requiredNames(def cuelang.Value) []string {
	var names []string
	it, err := def.Fields()
	if err != nil {
		return nil
	}
	for it.Next() {
		if !it.IsOptional() {
			names = append(names, it.Selector().Unquoted())
		}
	}
	return names
}

// checker validates one file's tree against the schema.
type checker struct {
	s    *Schema
	d    *diags
	file *token.File
	// byOffset finds the node a CUE error position points at.
	byOffset map[int]*node
}

// validate checks doc, a whole file in the given dialect. Unknown fields
// are reported with the closest known name and left out of the value CUE
// sees, so one typo cannot mask other errors.
func (s *Schema) validate(doc *node, dialect Dialect, d *diags) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := &checker{s: s, d: d, byOffset: map[int]*node{}}
	if doc.src != nil {
		c.file = token.NewFile(doc.src.name, -1, len(doc.src.data))
		c.file.SetLinesForContent(doc.src.data)
	}
	expr := c.walk(doc, s.files[dialect], dialect, 0)
	c.unify(s.files[dialect], expr, doc.path)
}

// walk checks field names under n and returns n as a CUE expression with
// its file positions, without unknown fields, null removals and auth
// objects (which are checked on their own against the branch their type
// selects).
func (c *checker) walk(n *node, def cuelang.Value, dialect Dialect, depth int) ast.Expr {
	c.byOffset[n.off] = n
	switch n.kind {
	case kindObject:
		st := &ast.StructLit{Lbrace: c.pos(n.off), Rbrace: c.pos(n.off)}
		var named []string // the def's field names, listed only when needed
		for _, f := range n.fields {
			if f.value.kind == kindNull {
				continue // removes an inherited value; nothing to check
			}
			var child cuelang.Value
			switch {
			case depth == 0 && dialect == DialectClaude && f.key == "servers" && n.get("mcpServers") != nil:
				f.value.bad = true // reported as dialect-conflict
				continue
			case depth == 0 && (f.key == "servers" || f.key == "mcpServers"):
				if f.value.kind == kindObject {
					st.Elts = append(st.Elts, c.field(f, c.walkServers(f, dialect, n.path)))
					continue
				}
			case def.Allows(cuelang.Str(f.key)):
				child = def.LookupPath(cuelang.MakePath(cuelang.Str(f.key).Optional()))
			case len(namesOf(&named, def)) == 0:
				f.value.bad = true
				c.d.add(SeverityError, CodeInvalidValue, f.value, "", "", "%q is not a valid name here", f.key)
				c.d.list[len(c.d.list)-1].Position = n.src.position(f.keyOff)
				continue
			default:
				c.unknown(n, f, named, dialect)
				continue
			}
			if f.key == "auth" && child.Exists() && f.value.kind == kindObject {
				c.walkAuth(f.value, dialect)
				continue
			}
			st.Elts = append(st.Elts, c.field(f, c.walk(f.value, child, dialect, depth+1)))
		}
		return st
	case kindArray:
		elem := def.LookupPath(cuelang.MakePath(cuelang.AnyIndex))
		l := &ast.ListLit{Lbrack: c.pos(n.off), Rbrack: c.pos(n.off)}
		for _, it := range n.items {
			l.Elts = append(l.Elts, c.walk(it, elem, dialect, depth+1))
		}
		return l
	}
	return c.leaf(n)
}

func (c *checker) walkServers(sf field, dialect Dialect, docPath string) ast.Expr {
	n := sf.value
	st := &ast.StructLit{Lbrace: c.pos(n.off), Rbrace: c.pos(n.off)}
	// The servers are unified with the file's definition a chunk at a
	// time, not with the rest of the file: the CUE values of a chunk are
	// garbage once it is checked, so the memory validation holds at once
	// is serverChunk servers' however many the file has, while a chunk
	// spares each server the fixed cost of a unification of its own.
	chunk := &ast.StructLit{}
	flush := func() {
		if len(chunk.Elts) == 0 {
			return
		}
		file := &ast.StructLit{Elts: []ast.Decl{c.field(sf, chunk)}}
		c.unify(c.s.files[dialect], file, docPath)
		chunk = &ast.StructLit{}
	}
	for _, f := range n.fields {
		c.byOffset[f.value.off] = f.value
		if f.value.kind == kindNull {
			continue
		}
		if f.value.kind != kindObject {
			f.value.bad = true
			c.d.add(SeverityError, CodeInvalidType, f.value, "", "", "want a server object, got %s", f.value.kind)
			continue
		}
		chunk.Elts = append(chunk.Elts, c.field(f, c.walk(f.value, c.s.servers[dialect], dialect, 2)))
		if len(chunk.Elts) == serverChunk {
			flush()
		}
	}
	flush()
	return st
}

// serverChunk is how many servers of a file are unified with its
// definition at once (see walkServers).
const serverChunk = 32

// walkAuth validates an auth object against the branch its type selects,
// which gives one precise message instead of one per branch.
func (c *checker) walkAuth(n *node, dialect Dialect) {
	t := n.get("type")
	before := len(c.d.list)
	defer func() {
		if len(c.d.list) > before {
			n.bad = true
		}
	}()
	if t == nil {
		c.d.add(SeverityError, CodeMissingField, n, childPath(n.path, "type"), `add "type": "bearer", "env", "oauth" or "none"`, "auth needs a type")
		return
	}
	def, ok := c.s.auth[t.str]
	if t.kind != kindString || !ok {
		c.d.add(SeverityError, CodeInvalidValue, t, "", "", "invalid auth type%s: want one of %q, %q, %q, %q",
			quoteIfSafe(t), "none", "bearer", "env", "oauth")
		return
	}
	for _, name := range requiredNames(def) {
		if v := n.get(name); v == nil || v.kind == kindNull {
			c.d.add(SeverityError, CodeMissingField, n, childPath(n.path, name), "", "auth type %q needs %q", t.str, name)
		}
	}
	expr := c.walk(n, def, dialect, 3)
	c.unify(def, expr, n.path)
}

func (c *checker) unknown(parent *node, f field, named []string, dialect Dialect) {
	hint := ""
	if alt := dialectAlias(dialect, f.key); alt != "" {
		hint = fmt.Sprintf("this file uses the %s dialect, which spells it %q", dialect, alt)
	} else if s := Closest(f.key, named); s != "" {
		hint = fmt.Sprintf("did you mean %q?", s)
	}
	f.value.bad = true
	c.d.add(SeverityError, CodeUnknownField, f.value, "", hint, "unknown field %q", f.key)
	c.d.list[len(c.d.list)-1].Position = parent.src.position(f.keyOff)
}

func (c *checker) field(f field, v ast.Expr) *ast.Field {
	label := ast.NewString(f.key)
	label.ValuePos = c.pos(f.keyOff)
	return &ast.Field{Label: label, Value: v}
}

func (c *checker) pos(off int) token.Pos {
	if c.file == nil || off < 0 {
		return token.NoPos
	}
	return c.file.Pos(off, token.NoRelPos)
}

func (c *checker) leaf(n *node) ast.Expr {
	switch n.kind {
	case kindNull:
		l := ast.NewNull()
		l.ValuePos = c.pos(n.off)
		return l
	case kindBool:
		l := ast.NewBool(n.bool)
		l.ValuePos = c.pos(n.off)
		return l
	case kindNumber:
		lit := strings.TrimPrefix(n.str, "-")
		kind := token.INT
		if strings.ContainsAny(lit, ".eE") {
			kind = token.FLOAT
		}
		var e ast.Expr = &ast.BasicLit{Kind: kind, Value: lit, ValuePos: c.pos(n.off)}
		if lit != n.str {
			e = &ast.UnaryExpr{Op: token.SUB, OpPos: c.pos(n.off), X: e}
		}
		return e
	default:
		l := ast.NewString(n.str)
		l.ValuePos = c.pos(n.off)
		return l
	}
}

// unify checks expr against def and turns CUE's errors into diagnostics.
func (c *checker) unify(def cuelang.Value, expr ast.Expr, base string) {
	v := def.Unify(c.s.ctx.BuildExpr(expr))
	err := v.Validate(cuelang.Concrete(true))
	if err == nil {
		return
	}
	type group struct {
		n    *node
		path []string
		errs []cueerrors.Error
	}
	var order []string
	groups := map[string]*group{}
	for _, e := range cueerrors.Errors(err) {
		var at *node
		for _, p := range cueerrors.Positions(e) {
			if c.file != nil && p.Filename() == c.file.Name() {
				if n, ok := c.byOffset[p.Offset()]; ok {
					at = n
					break
				}
			}
		}
		var path []string
		for _, sel := range e.Path() {
			if !strings.HasPrefix(sel, "#") {
				path = append(path, sel)
			}
		}
		key := strings.Join(path, "\x00")
		g := groups[key]
		if g == nil {
			g = &group{path: path}
			groups[key] = g
			order = append(order, key)
		}
		if g.n == nil {
			g.n = at
		}
		g.errs = append(g.errs, e)
	}
	for _, key := range order {
		g := groups[key]
		c.report(def, g.n, g.path, g.errs, base)
	}
}

var (
	boundRE    = regexp.MustCompile(`out of bound ([<>]=?|!=)\s*(-?[0-9.eE+]+)\)`)
	patternRE  = regexp.MustCompile(`out of bound (=~|!~)(".*")\)`)
	quotedRE   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	conflictRE = regexp.MustCompile(`conflicting values ("(?:[^"\\]|\\.)*"|\S+) and ("(?:[^"\\]|\\.)*"|\S+)`)
)

// report turns the CUE errors for one field into one diagnostic. CUE's
// own text quotes the offending value; ours quotes it only when it cannot
// be a secret.
func (c *checker) report(def cuelang.Value, n *node, path []string, errs []cueerrors.Error, base string) {
	if n != nil {
		n.bad = true
	}
	where := base
	for _, p := range path {
		if isIndex(p) {
			where = where + "[" + p + "]"
		} else {
			where = childPath(where, strings.Trim(p, `"`))
		}
	}
	if n != nil {
		where = n.path
	}
	var enum []string
	var types []string
	for _, e := range errs {
		format, args := e.Msg()
		msg := fmt.Sprintf(format, args...)
		switch {
		case strings.Contains(msg, "incomplete value"):
			// Required fields are checked in Go, where the message can
			// point at the object that lacks them.
			if n != nil {
				n.bad = false
			}
			return
		case boundRE.MatchString(msg):
			m := boundRE.FindStringSubmatch(msg)
			c.d.add(SeverityError, CodeOutOfRange, n, where, "", "value%s is out of range: want %s %s", quoteIfSafe(n), m[1], m[2])
			return
		case patternRE.MatchString(msg):
			m := patternRE.FindStringSubmatch(msg)
			c.d.add(SeverityError, CodeInvalidValue, n, where, patternHint(m[2]), "value%s does not match %s", quoteIfSafe(n), m[2])
			return
		case strings.Contains(msg, "mismatched types"):
			types = append(types, schemaKinds(msg, n)...)
		case conflictRE.MatchString(msg):
			m := conflictRE.FindStringSubmatch(msg)
			for _, lit := range m[1:] {
				if schemaLiteral(lit, n) {
					enum = append(enum, lit)
				}
			}
		case strings.Contains(msg, "errors in empty disjunction"):
		default:
			c.d.add(SeverityError, CodeInvalidValue, n, where, "", "%s", sanitizeCUEMessage(msg))
			return
		}
	}
	switch {
	case len(enum) > 0:
		sort.Strings(enum)
		c.d.add(SeverityError, CodeInvalidValue, n, where, "", "invalid value%s: want one of %s", quoteIfSafe(n), strings.Join(dedupe(enum), ", "))
	case len(types) > 0:
		got := "a value"
		if n != nil {
			got = n.kind.String()
		}
		c.d.add(SeverityError, CodeInvalidType, n, where, "", "want %s, got %s", strings.Join(dedupe(types), " or "), got)
	default:
		c.d.add(SeverityError, CodeInvalidValue, n, where, "", "invalid value")
	}
}

// schemaLiteral reports whether a literal quoted in a CUE conflict is the
// schema's side, not the user's value. Anything that might be the user's
// value is left out: it can be a secret. CUE's quoting differs from Go's,
// so a literal that does not unquote cleanly is left out too.
func schemaLiteral(lit string, n *node) bool {
	if !strings.HasPrefix(lit, `"`) {
		return false // a type or a number: not an enum member
	}
	v, err := strconv.Unquote(lit)
	if err != nil || redact.LooksSecret(v) || !plainWord.MatchString(v) {
		return false
	}
	return n == nil || n.kind != kindString || v != n.str
}

// schemaKinds extracts the schema's side of a "mismatched types A and B"
// message: the kind that is not the value's own.
func schemaKinds(msg string, n *node) []string {
	i := strings.Index(msg, "mismatched types ")
	parts := strings.Fields(strings.Trim(msg[i+len("mismatched types "):], ")"))
	if len(parts) != 3 {
		return nil
	}
	own := ""
	if n != nil {
		own = cueKind(n.kind)
	}
	var out []string
	for _, p := range []string{parts[0], parts[2]} {
		if p != own {
			out = append(out, jsonKindName(p))
		}
	}
	return out
}

func cueKind(k jsonKind) string {
	switch k {
	case kindNull:
		return "null"
	case kindBool:
		return "bool"
	case kindString:
		return "string"
	case kindObject:
		return "struct"
	case kindArray:
		return "list"
	}
	return "number"
}

func jsonKindName(cue string) string {
	switch cue {
	case "int":
		return "integer"
	case "float", "number":
		return "number"
	case "bool":
		return "boolean"
	case "struct":
		return "object"
	case "list":
		return "array"
	}
	return cue
}

func patternHint(re string) string {
	switch {
	case strings.Contains(re, "https?"):
		return "use an http:// or https:// URL"
	case strings.Contains(re, "[A-Za-z_][A-Za-z0-9_]*"):
		return "environment variable names are letters, digits and _, not starting with a digit"
	case strings.Contains(re, "{1,64}"):
		return "tool names and globs are 1 to 64 of A-Z a-z 0-9 _ - and the wildcards * ?"
	}
	return ""
}

// sanitizeCUEMessage removes quoted values from a CUE message, which may
// hold a secret.
func sanitizeCUEMessage(msg string) string {
	return quotedRE.ReplaceAllString(msg, `"…"`)
}

// quoteIfSafe renders " "value"" for a value that cannot be a secret (a
// number, a boolean or a short plain word), else "".
func quoteIfSafe(n *node) string {
	if n == nil {
		return ""
	}
	switch n.kind {
	case kindNumber:
		return " " + n.str
	case kindBool:
		return fmt.Sprintf(" %t", n.bool)
	case kindString:
		if len(n.str) <= 32 && !redact.LooksSecret(n.str) && plainWord.MatchString(n.str) {
			return fmt.Sprintf(" %q", n.str)
		}
	}
	return ""
}

var plainWord = regexp.MustCompile(`^[A-Za-z0-9_.:/ -]*$`)

func isIndex(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func dedupe(in []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
