package redact

import (
	"math"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Marker replaces a secret in config shown to a person (config show, the
// trust listing, the audit log's copy of a server's arguments).
const Marker = "<redacted>"

// URLMarker replaces a password or a parameter's value inside a URL,
// where Marker's angle brackets would be escaped.
const URLMarker = "REDACTED"

// envRefRE matches an ${env:NAME} reference, the config's way of naming a
// secret without holding it.
var envRefRE = regexp.MustCompile(`\$\{env:[A-Za-z_][A-Za-z0-9_]*\}`)

// tokenPrefixes are the prefixes of well-known credential formats.
var tokenPrefixes = []string{
	"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "sk-", "sk_live_", "sk_test_", "rk_live_",
	"xoxa-", "xoxb-", "xoxp-", "xoxr-", "xapp-", "AKIA", "ASIA", "AIza", "ya29.", "npm_", "pypi-", "hf_", "dop_v1_",
	"-----BEGIN",
}

// TokenPrefixes returns the prefixes of the well-known credential formats
// [LooksSecret] recognizes, such as "ghp_" and "AKIA", so that another
// list of secret formats (the redact policy's patterns) can be checked
// against it.
func TokenPrefixes() []string { return slices.Clone(tokenPrefixes) }

// jwtRE matches the start of a JSON Web Token.
var jwtRE = regexp.MustCompile(`^eyJ[A-Za-z0-9_-]{8,}\.`)

// secretWords are the words whose presence anywhere in a name (of a
// variable, header, flag or parameter, in any case) says its value is
// usually a credential.
var secretWords = []string{
	"token", "secret", "password", "passwd", "pwd", "apikey", "api_key", "api-key", "accesskey", "access_key", "access-key",
	"privatekey", "private_key", "private-key", "credential", "auth", "cookie", "session", "signature",
}

// credentialWords frame a credential without being one.
var credentialWords = []string{"Bearer", "bearer", "Basic", "basic", "Token", "token"}

// IsSecretName reports whether values stored under name (an env variable,
// a header, a flag such as --api-key, a query parameter) are usually
// credentials: the name holds one of the words token, secret, password
// (passwd, pwd), api key, access key, private key, credential, auth,
// cookie, session or signature, in any ASCII case, or is key or sig, or ends in
// _key or -key. It is a hand-written match rather than a regular
// expression because the audit record of every call asks it.
func IsSecretName(name string) bool {
	var buf [64]byte
	var l string
	if len(name) <= len(buf) {
		b := buf[:len(name)]
		for i := 0; i < len(name); i++ {
			c := name[i]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			b[i] = c
		}
		l = string(b) // does not escape: the compiler keeps it on the stack
	} else {
		l = strings.ToLower(name)
	}
	for _, w := range secretWords {
		if strings.Contains(l, w) {
			return true
		}
	}
	return l == "key" || l == "sig" || strings.HasSuffix(l, "_key") || strings.HasSuffix(l, "-key")
}

// hasTokenPrefix reports whether s starts like a well-known credential.
func hasTokenPrefix(s string) bool {
	for _, p := range tokenPrefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return strings.HasPrefix(s, "eyJ") && jwtRE.MatchString(s)
}

// LooksSecret reports whether a literal value looks like a credential
// whatever its name: a well-known token format, or a long high-entropy
// word that is not a path or a URL.
func LooksSecret(s string) bool {
	s = strings.TrimSpace(s)
	for _, w := range credentialWords {
		s = strings.TrimPrefix(s, w+" ")
	}
	if hasTokenPrefix(s) {
		return true
	}
	if len(s) < 24 || !tokenChars(s) {
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

// tokenChars reports whether s is in the alphabet of hex, base64 and
// base64url tokens.
func tokenChars(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '+' || c == '/' || c == '=' || c == '-') {
			return false
		}
	}
	return true
}

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

// LiteralPart returns s without its ${env:NAME} references and without a
// lone word that merely frames a credential ("Bearer", "token"): what is
// left is written in the config itself.
func LiteralPart(s string) string {
	if strings.Contains(s, "${env:") {
		s = envRefRE.ReplaceAllString(s, "")
	}
	s = strings.TrimSpace(s)
	for _, w := range credentialWords {
		if s == w {
			return ""
		}
	}
	return s
}

// IsLiteralSecret reports whether value, stored under the given name (an
// env variable, a header, a flag, a parameter), is a secret written in
// plain text rather than referenced with ${env:NAME}.
func IsLiteralSecret(name, value string) bool {
	lit := LiteralPart(value)
	if lit == "" {
		return false
	}
	if IsSecretName(name) && !isPlaceholder(lit) {
		return true
	}
	return LooksSecret(lit)
}

// isPlaceholder recognizes obviously fake values that documentation uses.
func isPlaceholder(s string) bool {
	l := strings.ToLower(s)
	return l == "true" || l == "false" || l == "none" || l == "0" || l == "1" ||
		strings.HasPrefix(l, "<") || strings.HasPrefix(l, "your") || strings.HasPrefix(l, "changeme") ||
		strings.Trim(l, "x*.") == ""
}

// Value returns value with a literal secret replaced, for display: the
// ${env:NAME} references it holds are kept, the rest becomes [Marker].
func Value(name, value string) string {
	if IsLiteralSecret(name, value) {
		return refsOnly(value)
	}
	return value
}

// KeepRefs returns [Marker] followed by the ${env:NAME} references of
// value: value with everything written literally hidden, for a field
// that holds nothing but secrets (an auth token, a client secret).
func KeepRefs(value string) string { return refsOnly(value) }

// refsOnly keeps the references of a value and replaces the rest by
// Marker.
func refsOnly(value string) string {
	refs := envRefRE.FindAllString(value, -1)
	if len(refs) == 0 {
		return Marker
	}
	return Marker + " " + strings.Join(refs, " ")
}

// URLHasSecret reports whether a URL carries a literal credential: a
// password in its userinfo, or a secret-named or secret-looking parameter
// in its query or fragment (OAuth implicit flows put tokens there).
func URLHasSecret(raw string) bool { return URL(raw) != raw }

// URL returns raw with its password and the values of secret-named query
// and fragment parameters replaced by [URLMarker]; a URL that does not
// parse is replaced whole by [Marker]. A URL without a secret comes back
// unchanged, without copying.
func URL(raw string) string {
	out, _ := redactURL(raw, nil)
	return out
}

// redactURL is URL, appending the secrets it replaced to found.
func redactURL(raw string, found []string) (string, []string) {
	if !strings.ContainsAny(raw, "@?#") {
		return raw, found // nothing to hide: no userinfo, query or fragment
	}
	if strings.Contains(raw, "${env:") && envRefRE.MatchString(raw) {
		// ${env:NAME} is not URL syntax (a reference in the host does not
		// parse); judge the URL with each reference as a plain word.
		probe := envRefRE.ReplaceAllString(raw, "envref")
		if out, _ := redactURL(probe, nil); out == probe {
			return raw, found
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return Marker, append(found, raw)
	}
	changed := false
	if p, ok := u.User.Password(); ok && LiteralPart(p) != "" {
		u.User = url.UserPassword(u.User.Username(), URLMarker)
		changed = true
		found = append(found, p)
	}
	var q string
	var ok bool
	if q, ok, found = redactParams(u.RawQuery, found); ok {
		u.RawQuery, changed = q, true
	}
	if q, ok, found = redactParams(u.EscapedFragment(), found); ok {
		u.RawFragment, changed = q, true
		if u.Fragment, err = url.PathUnescape(q); err != nil {
			u.Fragment = q
		}
	}
	if !changed {
		return raw, found
	}
	return u.String(), found
}

// redactParams replaces the values of secret-named parameters in a query
// or fragment, reporting whether it changed anything. The text is split
// by hand on & and ;, as url.Values would silently drop a pair it cannot
// parse.
func redactParams(q string, found []string) (string, bool, []string) {
	if q == "" {
		return q, false, found
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
			if v := lenientUnescape(val); IsLiteralSecret(lenientUnescape(name), v) {
				pair, changed = name+"="+URLMarker, true
				found = append(found, v, val)
			}
		}
		b.WriteString(pair)
		if i < len(q) {
			b.WriteByte(q[i])
		}
		start = i + 1
	}
	return b.String(), changed, found
}

// lenientUnescape decodes %XX escapes, keeping the text as it is where an
// escape is malformed.
func lenientUnescape(s string) string {
	if v, err := url.QueryUnescape(s); err == nil {
		return v
	}
	return s
}

// ArgSecret reports whether argument i of args holds a literal
// credential (see [Args] for the forms recognized).
func ArgSecret(args []string, i int) bool {
	out, _ := redactArg(args, i, nil)
	return out != args[i]
}

// Args returns args with every literal credential replaced, keeping the
// shape of each argument: --token=V becomes --token=<redacted>, the
// value after --api-key, --password and other secret-named flags becomes
// <redacted>, a URL keeps all but its password and secret parameters,
// "Authorization: Bearer V" (a header passed as an argument) keeps its
// name, and a value in a well-known token format is replaced whole.
// ${env:NAME} references are kept: they name a secret without holding
// it. When nothing is secret, args itself is returned, without copying.
//
// A short flag is judged by its name like a long one, so -p (a port as
// often as a password) is not a secret flag; a value after it is caught
// only when it looks like a credential.
func Args(args []string) []string {
	var out []string
	for i, a := range args {
		r, _ := redactArg(args, i, nil)
		if r != a && out == nil {
			out = append([]string(nil), args...)
		}
		if out != nil {
			out[i] = r
		}
	}
	if out == nil {
		return args
	}
	return out
}

// ArgSecrets returns the literal secret values args hold, as [Args] finds
// them, for a [Scrubber] to remove wherever they are echoed (a child's
// stderr, an error quoting its command line).
func ArgSecrets(args []string) []string {
	var found []string
	for i := range args {
		_, found = redactArg(args, i, found)
	}
	return found
}

// redactArg returns argument i of args with its literal secret replaced,
// appending the secret values it replaced to found.
func redactArg(args []string, i int, found []string) (string, []string) {
	a := args[i]
	if a == "" {
		return a, found
	}
	// --name=value
	if a[0] == '-' {
		if name, val, ok := strings.Cut(a, "="); ok {
			out, found := redactValue(name, val, found)
			return name + "=" + out, found
		}
		return a, found
	}
	// --secret-name value
	if i > 0 && len(args[i-1]) > 1 && args[i-1][0] == '-' && !strings.Contains(args[i-1], "=") && IsSecretName(args[i-1]) {
		return redactValue(args[i-1], a, found)
	}
	return redactValue("", a, found)
}

// redactValue redacts an argument's value stored under name ("" for
// none), trying the shapes a credential takes inside one: a header
// ("Authorization: Bearer V", as curl -H and mcp-remote --header take
// it) and an assignment ("API_KEY=V", as docker -e takes it), then the
// value as a whole.
func redactValue(name, value string, found []string) (string, []string) {
	if !strings.Contains(value, "://") {
		if h, v, ok := strings.Cut(value, ":"); ok && isHeaderName(h) {
			v = strings.TrimLeft(v, " ")
			if out, f := redactNamed(h, v, found); out != v {
				return h + ": " + out, f
			}
		}
		if k, v, ok := strings.Cut(value, "="); ok && isHeaderName(k) && IsSecretName(k) {
			if out, f := redactNamed(k, v, found); out != v {
				return k + "=" + out, f
			}
		}
	}
	return redactNamed(name, value, found)
}

// redactNamed redacts value stored under name ("" for none).
func redactNamed(name, value string, found []string) (string, []string) {
	if strings.Contains(value, "://") {
		out, f := redactURL(value, found)
		if out != value {
			return out, f
		}
	}
	lit := LiteralPart(value)
	if lit == "" {
		return value, found
	}
	secret := name != "" && IsSecretName(name) && !isPlaceholder(lit)
	if !secret {
		for _, w := range credentialWords {
			if strings.HasPrefix(lit, w+" ") && LiteralPart(strings.TrimSpace(lit[len(w):])) != "" {
				secret = true // "Bearer V" says what it is
			}
		}
	}
	if !secret && !LooksSecret(lit) {
		return value, found
	}
	found = append(found, lit)
	for _, w := range credentialWords {
		if v, ok := strings.CutPrefix(lit, w+" "); ok {
			found = append(found, strings.TrimSpace(v))
		}
	}
	return refsOnly(value), found
}

// isHeaderName reports whether s is an HTTP header name (a token with no
// spaces).
func isHeaderName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
