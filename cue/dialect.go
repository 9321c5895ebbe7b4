package cue

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/voltmcp/voltmcp/redact"
)

// Dialect is the shape of a config file. voltmcp reads the files other MCP
// clients write, so a project can keep the one .mcp.json its tools share.
type Dialect string

// The dialects voltmcp reads.
const (
	// DialectVoltmcp is {"version":1,"settings":{…},"servers":{…}} with
	// "transport" on each server.
	DialectVoltmcp Dialect = "voltmcp"
	// DialectClaude is {"mcpServers":{…}} with an optional "type", as
	// written by Claude Code, Cursor, Windsurf and Cline.
	DialectClaude Dialect = "mcpServers"
	// DialectVSCode is VS Code's {"servers":{…}} with "type".
	DialectVSCode Dialect = "vscode"
)

// describe names the dialect for people.
func (d Dialect) describe() string {
	switch d {
	case DialectClaude:
		return "the mcpServers dialect (Claude Code, Cursor, Windsurf, Cline)"
	case DialectVSCode:
		return "the VS Code dialect (servers with type)"
	}
	return "voltmcp's dialect (servers with transport)"
}

// detectDialect decides a file's dialect from its top-level shape.
func detectDialect(doc *node) Dialect {
	if doc.get("mcpServers") != nil {
		return DialectClaude
	}
	servers := doc.get("servers")
	if servers == nil || doc.get("version") != nil || doc.get("settings") != nil {
		return DialectVoltmcp
	}
	if doc.get("inputs") != nil {
		return DialectVSCode
	}
	typed, transported := false, false
	for _, f := range servers.fields {
		typed = typed || f.value.get("type") != nil
		transported = transported || f.value.get("transport") != nil
	}
	if typed && !transported {
		return DialectVSCode
	}
	return DialectVoltmcp
}

// dialectAlias returns how the given dialect spells a field that the file
// spelled the way another dialect does.
func dialectAlias(d Dialect, key string) string {
	if d == DialectVoltmcp {
		switch key {
		case "type":
			return "transport"
		case "disabled":
			return "enabled"
		case "mcpServers":
			return "servers"
		}
	}
	return ""
}

// normalize rewrites a validated file into voltmcp's dialect. Values keep
// their positions and the paths the file spells, so later diagnostics
// still point into the file as written.
func normalize(doc *node, dialect Dialect, d *diags) *node {
	out := &node{kind: kindObject, src: doc.src, off: doc.off, path: doc.path}
	if v := doc.get("settings"); v != nil {
		out.set("settings", v)
	}
	serversKey := "servers"
	if dialect == DialectClaude {
		serversKey = "mcpServers"
	}
	if dialect == DialectVSCode && doc.get("inputs") != nil {
		d.addAt(SeverityInfo, CodeIgnoredField, doc, "inputs", "reference host variables with ${env:NAME} instead",
			"VS Code inputs are not read: voltmcp never prompts for server values")
	}
	servers := doc.get(serversKey)
	if servers == nil {
		return out
	}
	if servers.kind != kindObject {
		return out
	}
	ns := &node{kind: kindObject, src: servers.src, off: servers.off, path: servers.path, fields: []field{}}
	for _, f := range servers.fields {
		v := f.value
		if v.kind == kindObject && dialect != DialectVoltmcp {
			v = normalizeServer(v, dialect, d)
		}
		if v.kind == kindObject {
			rewriteRefs(v, dialect, d)
		}
		ns.fields = append(ns.fields, field{key: f.key, keyOff: f.keyOff, value: v})
	}
	out.set("servers", ns)
	return out
}

// ignoredField describes a field other clients write that voltmcp reads
// and ignores, and what to do instead.
func ignoredField(key string) (sev Severity, msg, hint string, ok bool) {
	switch key {
	case "autoApprove", "alwaysAllow":
		return SeverityInfo, "per-tool approval lists are not used", "restrict tools with excludeTools or a voltmcp.tools policy", true
	case "envFile":
		return SeverityWarning, "envFile is not read, so its variables will not reach the server", "list the variables in env (with ${env:NAME}) or envAllowlist", true
	case "timeout":
		return SeverityInfo, "timeout is not read", "use callTimeoutMs", true
	case "dev":
		return SeverityInfo, "VS Code dev mode settings are not read", "", true
	case "gallery", "version":
		return SeverityInfo, "VS Code gallery metadata is not read", "", true
	}
	return "", "", "", false
}

func normalizeServer(n *node, dialect Dialect, d *diags) *node {
	out := &node{kind: kindObject, src: n.src, off: n.off, path: n.path, fields: []field{}}
	for _, f := range n.fields {
		switch f.key {
		case "type", "disabled":
			continue // folded in below
		}
		if sev, msg, hint, ok := ignoredField(f.key); ok && !f.value.bad {
			d.addAt(sev, CodeIgnoredField, n, f.key, hint, "%s", msg)
			continue
		}
		out.fields = append(out.fields, f)
	}
	if t := n.get("type"); t != nil && t.kind == kindString {
		tr := &node{kind: kindString, str: t.str, src: t.src, off: t.off, path: t.path, bad: t.bad}
		if tr.str == "http" {
			tr.str = "streamable-http"
		}
		if have := n.get("transport"); have != nil && have.kind == kindString && have.str != tr.str {
			d.addAt(SeverityError, CodeDialectConflict, n, "transport", "keep one of type and transport",
				"transport %q contradicts type %q", have.str, t.str)
			out.errs = true
		} else {
			out.set("transport", tr)
		}
	}
	if dis := n.get("disabled"); dis != nil && dis.kind == kindBool {
		en := &node{kind: kindBool, bool: !dis.bool, src: dis.src, off: dis.off, path: dis.path, bad: dis.bad}
		if have := n.get("enabled"); have != nil && have.kind == kindBool && have.bool == dis.bool {
			d.addAt(SeverityError, CodeDialectConflict, n, "enabled", "keep one of enabled and disabled",
				"enabled: %t contradicts disabled: %t", have.bool, dis.bool)
			out.errs = true
		} else {
			out.set("enabled", en)
		}
	}
	return out
}

// The reference forms. ${env:NAME} is voltmcp's and VS Code's; ${NAME} is
// Claude Code's and is accepted in its dialect only.
var (
	refRE       = regexp.MustCompile(`\$\{[^}]*\}?`)
	envRefRE    = regexp.MustCompile(`^\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}$`)
	bareRefRE   = regexp.MustCompile(`^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$`)
	defaultRefR = regexp.MustCompile(`^\$\{(?:env:)?[A-Za-z_][A-Za-z0-9_]*:-`)
)

// rewriteRefs checks the ${…} references in a server's string values and
// rewrites the Claude form ${NAME} to ${env:NAME}. References stay
// references: they are resolved only when a process starts or a request
// is sent (see ExpandEnv).
func rewriteRefs(n *node, dialect Dialect, d *diags) {
	switch n.kind {
	case kindObject:
		for i := range n.fields {
			if k := n.fields[i].key; k == "title" || strings.HasPrefix(k, "x-") {
				continue // text, or an extension voltmcp never reads
			}
			rewriteRefs(n.fields[i].value, dialect, d)
		}
	case kindArray:
		for _, it := range n.items {
			rewriteRefs(it, dialect, d)
		}
	case kindString:
		if !strings.Contains(n.str, "${") {
			return
		}
		bad := ""
		s := refRE.ReplaceAllStringFunc(n.str, func(ref string) string {
			switch {
			case envRefRE.MatchString(ref):
				return ref
			case dialect == DialectClaude && bareRefRE.MatchString(ref):
				return "${env:" + bareRefRE.FindStringSubmatch(ref)[1] + "}"
			case bad == "":
				bad = ref
			}
			return ref
		})
		if bad != "" {
			hint := "write ${env:NAME} with NAME of letters, digits and _"
			switch {
			case strings.HasPrefix(bad, "${input:"):
				hint = "VS Code input variables are not supported; use ${env:NAME}"
			case defaultRefR.MatchString(bad):
				hint = "defaults (:-) are not supported; set the variable or list it in envAllowlist"
			case bareRefRE.MatchString(bad):
				hint = "write ${env:NAME}; the bare ${NAME} form is read only in mcpServers files"
			}
			d.add(SeverityError, CodeEnvRefSyntax, n, "", hint, "invalid reference %s", refForMessage(bad))
			n.bad = true
			return
		}
		n.str = s
	}
}

// refForMessage shows a malformed reference when it cannot be a secret;
// a reference is where a secret belongs, so a long or random one is not
// repeated.
func refForMessage(ref string) string {
	inner := strings.TrimSuffix(strings.TrimPrefix(ref, "${"), "}")
	if len(ref) > 40 || redact.LooksSecret(inner) || !plainWord.MatchString(inner) {
		return "${…}"
	}
	return fmt.Sprintf("%q", ref)
}
