package cue

import (
	"bytes"
	"fmt"
	"strconv"

	"cuelang.org/go/cue/ast"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/literal"
	"cuelang.org/go/cue/token"
	"cuelang.org/go/encoding/toml"
)

// readCodex reads Codex's config.toml and returns its [mcp_servers.NAME]
// tables as a file in voltmcp's dialect, {"servers": {…}}, whose values
// keep their positions in the TOML. A file that does not parse is a
// diagnostic at its line, and nil.
func readCodex(src *source, d *diags) *node {
	expr, err := toml.NewDecoder(src.name, bytes.NewReader(src.data)).Decode()
	if err != nil {
		diag := Diagnostic{Severity: SeverityError, Code: CodeJSONSyntax, Message: "invalid TOML: " + cueerrors.Details(err, nil),
			Position: Position{File: src.name}}
		if ps := cueerrors.Positions(err); len(ps) > 0 && ps[0].IsValid() {
			diag.Position = src.position(ps[0].Offset())
			diag.Message = "invalid TOML: " + errorMessage(err)
		}
		d.list = append(d.list, diag)
		return nil
	}
	top := tomlNode(src, expr, "")
	out := &node{kind: kindObject, src: src, fields: []field{}}
	table := top.get("mcp_servers")
	if table == nil || table.kind != kindObject {
		return out
	}
	list := &node{kind: kindObject, src: src, off: table.off, path: "mcp_servers", fields: []field{}}
	for _, f := range table.fields {
		if f.value.kind != kindObject {
			d.add(SeverityError, CodeInvalidType, f.value, "", "", "want a server table, got %s", f.value.kind)
			continue
		}
		list.fields = append(list.fields, field{key: f.key, keyOff: f.keyOff, value: codexServer(f.value, d)})
	}
	out.set("servers", list)
	i := top.fieldIndex("mcp_servers")
	out.fields[0].keyOff = top.fields[i].keyOff
	return out
}

// errorMessage is a CUE error's message without its position.
func errorMessage(err error) string {
	var e cueerrors.Error
	if cueerrors.As(err, &e) {
		format, args := e.Msg()
		return fmt.Sprintf(format, args...)
	}
	return err.Error()
}

// codexServer rewrites one Codex server table in voltmcp's dialect.
func codexServer(n *node, d *diags) *node {
	out := &node{kind: kindObject, src: n.src, off: n.off, path: n.path, fields: []field{}}
	for _, f := range n.fields {
		v := f.value
		switch f.key {
		case "command", "args", "cwd", "url", "enabled", "env":
			out.fields = append(out.fields, f)
		case "env_vars":
			out.fields = append(out.fields, field{key: "envAllowlist", keyOff: f.keyOff, value: v})
		case "http_headers":
			out.fields = append(out.fields, field{key: "headers", keyOff: f.keyOff, value: v})
		case "enabled_tools":
			out.fields = append(out.fields, field{key: "includeTools", keyOff: f.keyOff, value: v})
		case "disabled_tools":
			out.fields = append(out.fields, field{key: "excludeTools", keyOff: f.keyOff, value: v})
		case "startup_timeout_sec", "startup_timeout_ms", "tool_timeout_sec":
			key := "connectTimeoutMs"
			if f.key == "tool_timeout_sec" {
				key = "callTimeoutMs"
			}
			ms := v
			if v.kind == kindNumber && f.key != "startup_timeout_ms" {
				if sec, err := strconv.ParseFloat(v.str, 64); err == nil {
					ms = &node{kind: kindNumber, str: strconv.FormatInt(int64(sec*1000), 10), src: v.src, off: v.off, path: v.path}
				}
			}
			out.fields = append(out.fields, field{key: key, keyOff: f.keyOff, value: ms})
		case "bearer_token_env_var":
			if v.kind == kindString {
				ref := &node{kind: kindString, str: "Bearer ${env:" + v.str + "}", src: v.src, off: v.off, path: v.path}
				codexHeader(out, f, "Authorization", ref)
			}
		case "env_http_headers":
			for _, h := range v.fields {
				if h.value.kind == kindString {
					ref := &node{kind: kindString, str: "${env:" + h.value.str + "}", src: h.value.src, off: h.value.off, path: h.value.path}
					codexHeader(out, h, h.key, ref)
				}
			}
		default:
			d.addAt(SeverityInfo, CodeIgnoredField, n, f.key, "", "Codex's %s is not imported", f.key)
		}
	}
	return out
}

// codexHeader adds a header to a server rewritten from Codex.
func codexHeader(out *node, at field, name string, v *node) {
	h := out.get("headers")
	if h == nil {
		h = &node{kind: kindObject, src: v.src, off: v.off, path: v.path, fields: []field{}}
		out.fields = append(out.fields, field{key: "headers", keyOff: at.keyOff, value: h})
	}
	if h.kind == kindObject {
		h.fields = append(h.fields, field{key: name, keyOff: at.keyOff, value: v})
	}
}

// tomlNode converts the CUE syntax the TOML decoder returns into a node
// tree at the same offsets.
func tomlNode(src *source, e ast.Expr, p string) *node {
	n := &node{src: src, off: offsetOf(e.Pos()), path: p}
	switch e := e.(type) {
	case *ast.StructLit:
		n.kind, n.fields = kindObject, []field{}
		for _, el := range e.Elts {
			f, ok := el.(*ast.Field)
			if !ok {
				continue
			}
			key, _, err := ast.LabelName(f.Label)
			if err != nil {
				continue
			}
			v := tomlNode(src, f.Value, childPath(p, key))
			addTOMLField(n, field{key: key, keyOff: offsetOf(f.Label.Pos()), value: v})
		}
		if !e.Pos().IsValid() && len(n.fields) > 0 {
			n.off = n.fields[0].keyOff
		}
	case *ast.ListLit:
		n.kind, n.items = kindArray, []*node{}
		for i, el := range e.Elts {
			n.items = append(n.items, tomlNode(src, el, indexPath(p, i)))
		}
		if !e.Pos().IsValid() && len(n.items) > 0 {
			n.off = n.items[0].off
		}
	case *ast.BasicLit:
		switch e.Kind {
		case token.STRING:
			s, err := literal.Unquote(e.Value)
			if err != nil {
				s = e.Value
			}
			n.kind, n.str = kindString, s
		case token.INT, token.FLOAT:
			n.kind, n.str = kindNumber, e.Value
		case token.TRUE, token.FALSE:
			n.kind, n.bool = kindBool, e.Kind == token.TRUE
		default:
			n.kind = kindNull
		}
	case *ast.Ident:
		// Booleans may decode as identifiers.
		switch e.Name {
		case "true", "false":
			n.kind, n.bool = kindBool, e.Name == "true"
		default:
			n.kind, n.str = kindString, e.Name
		}
	default:
		// Dates and times, which no MCP field takes: kept as text.
		n.kind, n.str = kindString, ""
	}
	return n
}

// addTOMLField adds a field to a table. The decoder gives each
// [a.b] header a field of its own, so tables of the same name merge.
func addTOMLField(n *node, f field) {
	if have := n.get(f.key); have != nil && have.kind == kindObject && f.value.kind == kindObject {
		for _, g := range f.value.fields {
			addTOMLField(have, g)
		}
		return
	}
	n.fields = append(n.fields, f)
}

func offsetOf(p token.Pos) int {
	if !p.IsValid() {
		return 0
	}
	return p.Offset()
}
