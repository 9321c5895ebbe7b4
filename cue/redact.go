package cue

import (
	"math"
	"net/url"
	"regexp"
	"strings"
)

// redacted replaces a secret in anything voltmcp prints.
const redacted = "<redacted>"

// tokenPrefixRE matches the prefixes of well-known credential formats.
var tokenPrefixRE = regexp.MustCompile(`^(gh[pousr]_|github_pat_|glpat-|sk-|sk_live_|sk_test_|rk_live_|xox[abpr]-|xapp-|AKIA|ASIA|AIza|ya29\.|npm_|pypi-|hf_|dop_v1_|eyJ[A-Za-z0-9_-]{8,}\.|-----BEGIN)`)

// secretNameRE matches names of variables, headers and parameters that
// usually carry credentials.
var secretNameRE = regexp.MustCompile(`(?i)(token|secret|passw(or)?d|pwd|api[_-]?key|access[_-]?key|private[_-]?key|credential|auth|cookie|session|signature|(^|[_-])key$|^sig$)`)

// looksSecret reports whether a literal value looks like a credential: a
// well-known token format, or a long high-entropy word that is not a path
// or a URL.
func looksSecret(s string) bool {
	s = strings.TrimSpace(s)
	for _, p := range []string{"Bearer ", "bearer ", "Basic ", "basic ", "token ", "Token "} {
		s = strings.TrimPrefix(s, p)
	}
	if tokenPrefixRE.MatchString(s) {
		return true
	}
	if len(s) < 24 || !tokenCharsRE.MatchString(s) {
		return false
	}
	var letters, digits int
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9':
			digits++
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
			letters++
		}
	}
	h := entropy(s)
	if strings.Contains(s, "/") {
		// Paths have slashes too; only a long, very random one is a key.
		return len(s) >= 32 && digits >= 4 && h >= 4.5
	}
	return letters > 0 && digits >= 3 && h >= 3.7
}

// tokenCharsRE matches the alphabet of hex, base64 and base64url tokens.
var tokenCharsRE = regexp.MustCompile(`^[A-Za-z0-9_+/=-]+$`)

// entropy is the Shannon entropy of s in bits per byte.
func entropy(s string) float64 {
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	h := 0.0
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / float64(len(s))
			h -= p * math.Log2(p)
		}
	}
	return h
}

// literalPart returns s without its ${env:NAME} references and without
// the words that merely frame a credential ("Bearer", "token").
func literalPart(s string) string {
	s = envRefAnyRE.ReplaceAllString(s, "")
	s = strings.TrimSpace(s)
	for _, w := range []string{"Bearer", "bearer", "Basic", "basic", "Token", "token"} {
		if s == w {
			return ""
		}
	}
	return s
}

// isLiteralSecret reports whether value, stored under the given name
// (an env variable, a header, a parameter), is a secret written in
// plain text rather than referenced with ${env:NAME}.
func isLiteralSecret(name, value string) bool {
	lit := literalPart(value)
	if lit == "" {
		return false
	}
	if secretNameRE.MatchString(name) && !isPlaceholder(lit) {
		return true
	}
	return looksSecret(lit)
}

// isPlaceholder recognizes obviously fake values that documentation uses.
func isPlaceholder(s string) bool {
	l := strings.ToLower(s)
	return l == "true" || l == "false" || l == "none" || l == "0" || l == "1" ||
		strings.HasPrefix(l, "<") || strings.HasPrefix(l, "your") || strings.HasPrefix(l, "changeme") ||
		strings.Trim(l, "x*.") == ""
}

// redactValue returns value with a literal secret replaced, for display.
// References are kept: they are not secrets.
func redactValue(name, value string) string {
	if isLiteralSecret(name, value) {
		return envRefsOnly(value)
	}
	return value
}

// envRefsOnly keeps the references of a value and replaces the rest by
// the redaction marker.
func envRefsOnly(value string) string {
	refs := envRefAnyRE.FindAllString(value, -1)
	if len(refs) == 0 {
		return redacted
	}
	return redacted + " " + strings.Join(refs, " ")
}

// urlSecret reports whether a URL carries a literal credential: a
// password in its userinfo, or a secret-named parameter in its query or
// fragment (OAuth implicit flows put tokens there).
func urlSecret(raw string) bool {
	return redactURL(raw) != raw
}

// RedactURL returns raw with its password and the values of secret-named
// query and fragment parameters replaced by REDACTED; a URL that does not
// parse is replaced whole. A URL without a secret comes back unchanged.
func RedactURL(raw string) string { return redactURL(raw) }

// redactURL hides a URL's password and the values of secret-named
// parameters. The query and fragment are split by hand on & and ;, as
// url.Values would silently drop a pair it cannot parse. An unparsable
// URL is hidden whole.
func redactURL(raw string) string {
	if HasEnvRef(raw) {
		// ${env:NAME} is not URL syntax (a reference in the host does not
		// parse); judge the URL with each reference as a plain word.
		probe := envRefAnyRE.ReplaceAllString(raw, "envref")
		if redactURL(probe) == probe {
			return raw
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return redacted
	}
	changed := false
	if p, ok := u.User.Password(); ok && literalPart(p) != "" {
		u.User = url.UserPassword(u.User.Username(), "REDACTED")
		changed = true
	}
	if q, ok := redactParams(u.RawQuery); ok {
		u.RawQuery, changed = q, true
	}
	if f, ok := redactParams(u.EscapedFragment()); ok {
		u.RawFragment, changed = f, true
		if u.Fragment, err = url.PathUnescape(f); err != nil {
			u.Fragment = f
		}
	}
	if !changed {
		return raw
	}
	return u.String()
}

// redactParams replaces the values of secret-named parameters in a query
// or fragment, reporting whether it changed anything.
func redactParams(q string) (string, bool) {
	if q == "" {
		return q, false
	}
	changed := false
	var b strings.Builder
	start := 0
	for i := 0; i <= len(q); i++ {
		if i < len(q) && q[i] != '&' && q[i] != ';' {
			continue
		}
		pair := q[start:i]
		if name, val, ok := strings.Cut(pair, "="); ok {
			if isLiteralSecret(lenientUnescape(name), lenientUnescape(val)) {
				pair, changed = name+"=REDACTED", true
			}
		}
		b.WriteString(pair)
		if i < len(q) {
			b.WriteByte(q[i])
		}
		start = i + 1
	}
	return b.String(), changed
}

// lenientUnescape decodes %XX escapes, keeping the text as it is where an
// escape is malformed.
func lenientUnescape(s string) string {
	if v, err := url.QueryUnescape(s); err == nil {
		return v
	}
	return s
}

// argSecret reports whether argument i of args is a literal credential:
// --token=abc, --api-key abc, or a value in a well-known token format.
func argSecret(args []string, i int) bool {
	a := args[i]
	if name, val, ok := strings.Cut(a, "="); ok && strings.HasPrefix(name, "-") {
		return isLiteralSecret(name, val)
	}
	if i > 0 && strings.HasPrefix(args[i-1], "-") && !strings.Contains(args[i-1], "=") &&
		secretNameRE.MatchString(args[i-1]) && !strings.HasPrefix(a, "-") {
		return isLiteralSecret(args[i-1], a)
	}
	return looksSecret(literalPart(a))
}
