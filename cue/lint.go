package cue

import (
	"fmt"
	"net"
	"net/url"
	"path"
	"regexp"
	"strings"

	"github.com/voltmcp/voltmcp/redact"
)

// lintServer runs the lint rules on one merged server. They go beyond the
// schema: each finds a config that is valid but unsafe or surprising.
func lintServer(ms *mergedServer, srv Server, d *diags) {
	n := ms.node
	lintSecrets(n, d)
	if cmd := n.get("command"); cmd != nil && cmd.kind == kindString {
		lintCommand(n, cmd, d)
	}
	if u := n.get("url"); u != nil && u.kind == kindString {
		lintURL(n, u, srv, d)
	}
	lintFilters(n, d)
	lintOAuthLoopback(n, d)
	lintOAuthIssuer(n, d)
	// A false enabled from another file than the definition's is a
	// disable by a higher layer, which is easy to miss.
	if en := n.get("enabled"); en != nil && en.kind == kindBool && !en.bool && en.src != nil &&
		en.src.layer != LayerDefault && en.src != ms.def.src {
		d.add(SeverityWarning, CodeDisabledAbove, en, "", "if that is intended, nothing to do; else remove the enabled: false",
			"server %q, defined in %s (%s), is disabled here", ms.id, ms.def.status.Path, ms.def.status.Layer)
	}
}

// literalSecret is a credential written in plain text in a server
// definition: the value that holds it and a message that never repeats
// it.
type literalSecret struct {
	n     *node
	field string // where, in the server: env.KEY, headers.KEY, auth.token, args[i], url
	msg   string
}

// literalSecrets finds the credentials of a server definition written in
// plain text where ${env:NAME} belongs: the one detection behind the
// literal-secret lint and what `voltmcp import` rewrites.
func literalSecrets(n *node) []literalSecret {
	var out []literalSecret
	for _, mapKey := range []string{"env", "headers"} {
		m := n.get(mapKey)
		if m == nil || m.kind != kindObject {
			continue
		}
		for _, f := range m.fields {
			if f.value.kind == kindString && redact.IsLiteralSecret(f.key, f.value.str) {
				out = append(out, literalSecret{f.value, childPath(mapKey, f.key),
					fmt.Sprintf("%s %q holds a literal secret", strings.TrimSuffix(mapKey, "s"), f.key)})
			}
		}
	}
	if a := n.get("auth"); a != nil && a.kind == kindObject {
		for _, k := range []string{"token", "clientSecret"} {
			if v := a.get(k); v != nil && v.kind == kindString && redact.LiteralPart(v.str) != "" {
				out = append(out, literalSecret{v, "auth." + k, fmt.Sprintf("auth.%s is a literal secret", k)})
			}
		}
	}
	if args := n.get("args"); args != nil && args.kind == kindArray {
		list := args.strs()
		if len(list) == len(args.items) {
			for i := range list {
				if redact.ArgSecret(list, i) {
					out = append(out, literalSecret{args.items[i], indexPath("args", i), fmt.Sprintf("argument %d holds a literal secret", i)})
				}
			}
		}
	}
	if u := n.get("url"); u != nil && u.kind == kindString && redact.URLHasSecret(u.str) {
		out = append(out, literalSecret{u, "url", "the url holds a literal credential"})
	}
	return out
}

// lintSecrets reports the literal secrets of a server, and secrets
// passed by reference on the command line. The message never repeats
// the value.
func lintSecrets(n *node, d *diags) {
	const hint = "reference it as ${env:NAME} and set NAME in the environment voltmcp runs in"
	for _, s := range literalSecrets(n) {
		h := hint
		if s.field == "url" {
			h = "send it in a header that references ${env:NAME}"
		}
		d.add(SeverityError, CodeLiteralSecret, s.n, "", h, "%s", s.msg)
	}
	if args := n.get("args"); args != nil && args.kind == kindArray {
		list := args.strs()
		if len(list) == len(args.items) {
			for i := range list {
				if redact.ArgSecret(list, i) {
					continue
				}
				if name, ok := argSecretRef(list, i); ok {
					d.add(SeverityWarning, CodeSecretInArgs, args.items[i], "",
						"pass it in env (\"env\": {\"NAME\": \"${env:NAME}\"}) and let the server read it there",
						"argument %d passes ${env:%s}, a secret, on the command line: the resolved value is in the server's argv, which every local user can read (/proc/PID/cmdline, ps)", i, name)
				}
			}
		}
	}
}

// shells are programs that interpret their argument as a script.
func isShell(base string) bool {
	switch strings.TrimSuffix(strings.ToLower(base), ".exe") {
	case "sh", "bash", "zsh", "dash", "ksh", "fish", "ash", "csh", "tcsh", "cmd", "powershell", "pwsh":
		return true
	}
	return false
}

func lintCommand(n, cmd *node, d *diags) {
	base := path.Base(strings.ReplaceAll(cmd.str, `\`, "/"))
	args := n.get("args").strs()
	if isShell(base) {
		for _, a := range args {
			switch strings.ToLower(a) {
			case "-c", "/c", "-command", "/k", "-lc", "-ic", "-e":
				d.add(SeverityWarning, CodeShellCommand, cmd, "", "run the program directly: command is the program, args its arguments",
					"%s %s runs a shell script, which hides what actually starts", base, a)
				return
			}
		}
	}
	if strings.ContainsAny(cmd.str, " \t") && !strings.ContainsAny(cmd.str, `/\`) {
		d.add(SeverityWarning, CodeShellCommand, cmd, "", "put the program in command and each argument in args",
			"command has spaces but runs without a shell, so it names one program called %q", firstWord(cmd.str)+"…")
		return
	}
	if pkg, ok := launcherPackage(base, args); ok && !pinned(base, pkg) {
		d.add(SeverityWarning, CodeUnpinnedPackage, cmd, "", pinHint(base, pkg),
			"%s runs %q without a pinned version, so what runs can change under you", base, pkg)
	}
}

func firstWord(s string) string {
	if i := strings.IndexAny(s, " \t"); i >= 0 {
		return s[:i]
	}
	return s
}

// launcherPackage finds the package a package runner (npx, uvx, …) is
// asked to fetch and run.
func launcherPackage(base string, args []string) (string, bool) {
	base = strings.TrimSuffix(strings.ToLower(base), ".cmd")
	var rest []string
	switch base {
	case "npx", "bunx", "pnpx", "uvx":
		rest = args
	case "pnpm", "yarn":
		if len(args) > 0 && args[0] == "dlx" {
			rest = args[1:]
		}
	case "pipx", "uv":
		if len(args) > 1 && (args[0] == "run" || args[0] == "tool") {
			rest = args[1:]
			if args[0] == "tool" && len(rest) > 0 && rest[0] == "run" {
				rest = rest[1:]
			}
		}
	case "bun":
		if len(args) > 0 && args[0] == "x" {
			rest = args[1:]
		}
	default:
		return "", false
	}
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a == "--from" || a == "--package" || a == "-p":
			if i+1 < len(rest) {
				return rest[i+1], true
			}
		case strings.HasPrefix(a, "--package=") || strings.HasPrefix(a, "--from="):
			return a[strings.Index(a, "=")+1:], true
		case strings.HasPrefix(a, "-"):
		default:
			return a, true
		}
	}
	return "", false
}

var (
	npmVersionRE = regexp.MustCompile(`^(@[^/@]+/)?[^@]+@([0-9][^\s]*)$`)
	pyVersionRE  = regexp.MustCompile(`(==|@)[0-9][^\s]*$`)
)

// pinned reports whether a package spec names an exact version.
func pinned(base, pkg string) bool {
	switch strings.TrimSuffix(strings.ToLower(base), ".cmd") {
	case "uvx", "pipx", "uv":
		return pyVersionRE.MatchString(pkg)
	}
	if strings.HasPrefix(pkg, ".") || strings.HasPrefix(pkg, "/") || strings.Contains(pkg, "://") {
		return true // a local path or an explicit URL is not a registry lookup
	}
	m := npmVersionRE.FindStringSubmatch(pkg)
	return m != nil && !strings.ContainsAny(m[2], "^~*x<>| ")
}

func pinHint(base, pkg string) string {
	switch strings.TrimSuffix(strings.ToLower(base), ".cmd") {
	case "uvx", "pipx", "uv":
		return "pin it, e.g. " + pkg + "==1.2.3"
	}
	name := pkg
	if i := strings.LastIndex(pkg, "@"); i > 0 {
		name = pkg[:i]
	}
	return "pin it, e.g. " + name + "@1.2.3"
}

func lintURL(n, u *node, srv Server, d *diags) {
	parsed, err := url.Parse(u.str)
	if err != nil || parsed.Scheme != "http" || HasEnvRef(parsed.Host) || isLoopback(parsed.Hostname()) {
		return
	}
	sev, extra := SeverityWarning, ""
	if n.get("headers") != nil || (srv.Auth != nil && srv.Auth.Type != "none") {
		sev, extra = SeverityError, ", including its credentials"
	}
	d.add(sev, CodeInsecureURL, u, "", "use https://, or a loopback address for a local server",
		"plain http to %s sends every request in clear text%s", parsed.Hostname(), extra)
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// lintOAuthLoopback flags an OAuth auth that allows plain http to
// loopback addresses: right for local development and tests, wrong for a
// server in real use, where a token would travel in clear text.
func lintOAuthLoopback(n *node, d *diags) {
	a := n.get("auth")
	if a == nil || a.kind != kindObject {
		return
	}
	if v := a.get("allowInsecureLoopback"); v != nil && v.kind == kindBool && v.bool {
		d.add(SeverityWarning, CodeOAuthLoopback, v, "", "remove it unless the server and its authorization server run on this machine for development or tests",
			"auth.allowInsecureLoopback lets the OAuth authorization use plain http to loopback addresses")
	}
}

// lintOAuthIssuer flags a pre-registered OAuth client without the issuer
// of the authorization server that registered it. The engine then sends
// the client's credentials only to an authorization server at the
// origin of the server's url, and refuses any other the server names; an
// authorization server elsewhere needs issuer.
func lintOAuthIssuer(n *node, d *diags) {
	a := n.get("auth")
	if a == nil || a.kind != kindObject {
		return
	}
	if t := a.get("type"); t == nil || t.kind != kindString || t.str != "oauth" {
		return
	}
	id := a.get("clientId")
	if id == nil || id.kind != kindString || id.str == "" || a.get("issuer") != nil {
		return
	}
	d.add(SeverityWarning, CodeOAuthIssuer, id, "", `set "issuer" to the issuer identifier of the authorization server that registered the client`,
		"auth.clientId names a pre-registered client without auth.issuer: its credentials go only to an authorization server at the origin of url")
}

// lintFilters finds tools that includeTools lets in and excludeTools
// keeps out: exclude wins, so the include is dead.
func lintFilters(n *node, d *diags) {
	inc, exc := n.get("includeTools"), n.get("excludeTools")
	if inc == nil || exc == nil {
		return
	}
	for _, in := range inc.items {
		for _, ex := range exc.items {
			if in.kind != kindString || ex.kind != kindString {
				continue
			}
			if in.str == ex.str || (!hasWildcard(in.str) && globMatch(ex.str, in.str)) {
				d.add(SeverityWarning, CodeFilterOverlap, in, "", "remove it from one of the two lists",
					"%q is in includeTools but excludeTools %q removes it (exclude wins)", in.str, ex.str)
				break
			}
		}
	}
}

func hasWildcard(s string) bool { return strings.ContainsAny(s, "*?") }

// globMatch matches name against a tool glob, where * is any run and ? is
// one character. Tool names hold no '/', so path.Match serves.
func globMatch(glob, name string) bool {
	ok, err := path.Match(glob, name)
	return err == nil && ok
}

// argSecretRef reports whether args[i] passes a secret by reference: an
// ${env:NAME} whose NAME, or whose flag (--token ${env:X},
// --api-key=${env:X}), names a secret. It returns the variable's name.
func argSecretRef(args []string, i int) (string, bool) {
	a := args[i]
	refs := envRefAnyRE.FindAllStringSubmatch(a, -1)
	if len(refs) == 0 {
		return "", false
	}
	flag := ""
	if name, _, ok := strings.Cut(a, "="); ok && strings.HasPrefix(name, "-") {
		flag = name
	} else if i > 0 && strings.HasPrefix(args[i-1], "-") && !strings.Contains(args[i-1], "=") {
		flag = args[i-1]
	}
	for _, r := range refs {
		if redact.IsSecretName(r[1]) || (flag != "" && redact.IsSecretName(flag)) ||
			strings.Contains(strings.ToLower(a), "bearer ") {
			return r[1], true
		}
	}
	return "", false
}
