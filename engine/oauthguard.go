package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// The OAuth client of a server (discovery, registration, the token
// requests and refreshes) goes through an oauthGuard, which holds what
// the MCP authorization spec asks of a client for the URLs an MCP server
// and its authorization server name:
//
//   - Before each request: the URL is https, or plain http to a loopback
//     address when the server's auth says allowInsecureLoopback; its host
//     is not a literal private, link-local, loopback (without that
//     setting) or otherwise reserved address (oauthPolicy.checkURL).
//   - At each connect: the address the dialer actually connects to, after
//     DNS and on every redirect, is refused the same way (control), so a
//     name that resolves, or is rebound, to 169.254.169.254 gets nowhere.
//   - Each answer is read before the SDK sees it: metadata names only
//     URLs that pass checkURL, and an authorization server lists S256 in
//     code_challenge_methods_supported; a registration answer has our
//     redirect URI and a bounded client_id and client_secret; an error
//     answer is cut down to its error code, so that no error on these
//     paths quotes what a server sent.
//   - Authorization server metadata names as its issuer the URL it was
//     fetched for (RFC 8414 §3.3).
//   - A pre-registered client (clientId, clientSecret) goes only to the
//     authorization server it was issued by: auth.issuer, or without it
//     one at the origin of the server's url. The protected resource
//     metadata naming another one is refused, and so is any request for
//     another one's metadata, before the client's credentials could be
//     sent (oauthPolicy.checkIssuer).
//
// The user's own URLs (the server's url and a configured
// resourceMetadataUrl) are exempt from the address checks, not from the
// scheme: the rules are about URLs a server tells us.

// Bounds of what an OAuth answer may hold.
const (
	maxOAuthURL      = 2048    // bytes of any URL in metadata
	maxOAuthMetadata = 1 << 20 // bytes of a metadata document (as the SDK reads)
	maxRegistration  = 64 << 10
	maxTokenAnswer   = 1 << 20 // as golang.org/x/oauth2 reads
	maxClientID      = 512     // bytes of an issued client_id or client_secret
	maxErrorCode     = 64
)

// oauthPolicy is what a server's OAuth client may reach.
type oauthPolicy struct {
	allowLoopback bool     // auth.allowInsecureLoopback
	own           []origin // the user's own: the server's url, resourceMetadataUrl
	// bound is set for a pre-registered client: its credentials go only to
	// issuer (auth.issuer), or, when that is "", to an authorization
	// server at home, the origin of the server's url.
	bound  bool
	issuer string
	home   origin
}

func (p *oauthPolicy) isOwn(o origin) bool { return slices.Contains(p.own, o) }

// checkURL refuses a URL the OAuth client must not use. field names the
// URL in the error, which shows only its origin.
func (p *oauthPolicy) checkURL(field, raw string) error {
	if len(raw) > maxOAuthURL {
		return fmt.Errorf("%s is over %d bytes", field, maxOAuthURL)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%s is not a URL", field)
	}
	o, ok := originOf(u)
	if !ok {
		return fmt.Errorf("%s is not an https URL", field)
	}
	if u.User != nil {
		return fmt.Errorf("%s (%s) holds a user name or password", field, o)
	}
	loopName := isLoopbackName(o.host)
	a, err := netip.ParseAddr(o.host)
	isIP := err == nil
	if isIP {
		loopName = a.Unmap().IsLoopback()
	}
	if o.scheme == "http" && !(p.allowLoopback && loopName) {
		if loopName {
			return fmt.Errorf(`%s (%s) is plain http: to a loopback address that needs "allowInsecureLoopback": true in the server's auth`, field, o)
		}
		return fmt.Errorf("%s (%s) is not https", field, o)
	}
	if p.isOwn(o) {
		return nil
	}
	if isIP {
		if kind := refusedAddr(a, p.allowLoopback); kind != "" {
			return fmt.Errorf("%s (%s) is a %s address", field, o, kind)
		}
	} else if loopName && !p.allowLoopback {
		return fmt.Errorf(`%s (%s) is a loopback name: that needs "allowInsecureLoopback": true in the server's auth`, field, o)
	}
	return nil
}

// issuersEqual reports whether two issuer identifiers are the same: equal
// strings but for one trailing slash, the comparison the SDK makes of a
// metadata document's issuer and of a pre-registered client's.
func issuersEqual(a, b string) bool {
	return strings.TrimSuffix(a, "/") == strings.TrimSuffix(b, "/")
}

// checkIssuer refuses an authorization server (its issuer identifier, or
// the URL the SDK takes as one) to which a pre-registered client's
// credentials must not go. The error shows origins only.
func (p *oauthPolicy) checkIssuer(field, issuer string) error {
	if !p.bound {
		return nil
	}
	u, err := url.Parse(issuer)
	o, ok := originOf(u)
	if err != nil || !ok {
		return fmt.Errorf("%s is not an http or https URL", field)
	}
	if p.issuer != "" {
		if issuersEqual(issuer, p.issuer) {
			return nil
		}
		where := o.String()
		if cu, err := url.Parse(p.issuer); err == nil {
			if co, ok := originOf(cu); ok && co == o {
				where = "another path at " + where
			}
		}
		return fmt.Errorf("%s (%s) is not the authorization server in auth.issuer, which issued the configured client: "+
			"its clientId and clientSecret go nowhere else", field, where)
	}
	if o == p.home {
		return nil
	}
	return fmt.Errorf("%s (%s) is not at the origin of the server's url (%s), and auth.issuer does not name it: "+
		"the configured clientId and clientSecret go only to the authorization server that issued them "+
		`(set "issuer" in the server's auth to that server's issuer)`, field, o, p.home)
}

// metadataIssuers returns the issuer identifiers whose authorization
// server metadata is at u, by the well-known URLs the SDK derives from an
// issuer (RFC 8414 §3.1 and OpenID Connect Discovery, with the path
// inserted or appended), or nil when u is none of those.
func metadataIssuers(u *url.URL) []string {
	base := u.Scheme + "://" + u.Host
	p := u.EscapedPath()
	var out []string
	for _, wk := range []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"} {
		if p == wk {
			out = append(out, base)
		} else if rest, ok := strings.CutPrefix(p, wk+"/"); ok {
			out = append(out, base+"/"+rest)
		}
	}
	if pre, ok := strings.CutSuffix(p, "/.well-known/openid-configuration"); ok && pre != "" {
		out = append(out, base+pre)
	}
	return out
}

// isLoopbackName reports whether a host name always means this machine
// (RFC 6761).
func isLoopbackName(host string) bool {
	host = strings.TrimSuffix(host, ".")
	return host == "localhost" || strings.HasSuffix(host, ".localhost")
}

// Address ranges the OAuth client never connects to, beyond what
// netip.Addr's methods name.
var refusedPrefixes = []struct {
	p    netip.Prefix
	kind string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "reserved (this network)"},
	{netip.MustParsePrefix("100.64.0.0/10"), "carrier-grade NAT"},
	{netip.MustParsePrefix("192.0.0.0/24"), "reserved (IETF)"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation"},
	{netip.MustParsePrefix("198.18.0.0/15"), "reserved (benchmarking)"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	{netip.MustParsePrefix("100::/64"), "reserved (discard)"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"},
}

// Ranges that embed an IPv4 address, which is checked in their place.
var (
	nat64   = []netip.Prefix{netip.MustParsePrefix("64:ff9b::/96"), netip.MustParsePrefix("64:ff9b:1::/48")}
	sixTo4  = netip.MustParsePrefix("2002::/16")
	v4compt = netip.MustParsePrefix("::/96")
)

// refusedAddr returns what kind of address a is when the OAuth client
// must not connect to it, or "" when it may. Loopback is allowed only
// with allowLoopback; private, link-local, multicast, unspecified and
// reserved addresses never are, in any spelling (IPv4-mapped,
// IPv4-compatible, NAT64, 6to4).
func refusedAddr(a netip.Addr, allowLoopback bool) string {
	if !a.IsValid() {
		return "invalid"
	}
	a = a.Unmap().WithZone("")
	if a.Is6() {
		b := a.As16()
		var v4 netip.Addr
		switch {
		case nat64[0].Contains(a) || nat64[1].Contains(a):
			v4 = netip.AddrFrom4([4]byte(b[12:16]))
		case sixTo4.Contains(a):
			v4 = netip.AddrFrom4([4]byte(b[2:6]))
		case v4compt.Contains(a) && !a.IsLoopback() && !a.IsUnspecified():
			v4 = netip.AddrFrom4([4]byte(b[12:16]))
		}
		if v4.IsValid() {
			if kind := refusedAddr(v4, false); kind != "" {
				return kind + " (embedded in IPv6)"
			}
		}
	}
	switch {
	case a.IsLoopback():
		if allowLoopback {
			return ""
		}
		return "loopback"
	case a.IsUnspecified():
		return "unspecified"
	case a.IsPrivate():
		return "private"
	case a.IsLinkLocalUnicast():
		return "link-local"
	case a.IsMulticast() || a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast():
		return "multicast"
	case a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "broadcast"
	}
	for _, r := range refusedPrefixes {
		if r.p.Contains(a) {
			return r.kind
		}
	}
	return ""
}

// oauthGuard is the http.RoundTripper of a server's OAuth client. The
// zero value is not usable; make one with newOAuthGuard.
type oauthGuard struct {
	server   string
	policy   oauthPolicy
	redirect string // our redirect URI, which a registration must hold
	base     http.RoundTripper
	refused  atomic.Pointer[error] // the first refusal, which Authorize reports
	// issuer is the authorization server this authorization goes to, as
	// the protected resource metadata named it (or, without that, as the
	// SDK's metadata request spells it), for the token store.
	issuer atomic.Pointer[string]
}

// newOAuthGuard returns the guard for one server's OAuth client. Its
// transport is a clone of base when base is an *http.Transport (else of
// http.DefaultTransport), with a dialer that checks every address it
// connects to.
func newOAuthGuard(server string, policy oauthPolicy, redirect string, base http.RoundTripper) *oauthGuard {
	g := &oauthGuard{server: server, policy: policy, redirect: redirect}
	t, ok := base.(*http.Transport)
	if !ok {
		t = http.DefaultTransport.(*http.Transport)
	}
	t = t.Clone()
	// The user's proxy is the user's own: its address is not checked
	// (the proxy resolves the names it is asked for; checkURL still
	// refuses literal addresses).
	var proxies sync.Map
	if inner := t.Proxy; inner != nil {
		t.Proxy = func(req *http.Request) (*url.URL, error) {
			u, err := inner(req)
			if err == nil && u != nil {
				port := u.Port()
				if port == "" {
					port = map[string]string{"http": "80", "https": "443", "socks5": "1080", "socks5h": "1080"}[u.Scheme]
				}
				proxies.Store(strings.ToLower(net.JoinHostPort(u.Hostname(), port)), true)
			}
			return u, err
		}
	}
	plain := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	checked := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, ControlContext: g.control}
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if _, ok := proxies.Load(strings.ToLower(addr)); ok || g.ownAddr(addr) {
			return plain.DialContext(ctx, network, addr)
		}
		return checked.DialContext(ctx, network, addr)
	}
	// TLS connections are dialed through DialContext too.
	t.DialTLSContext = nil
	g.base = t
	return g
}

// ownAddr reports whether a dial address (host:port, before DNS) is of
// one of the user's own URLs.
func (g *oauthGuard) ownAddr(addr string) bool {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	host = strings.ToLower(host)
	if a, err := netip.ParseAddr(host); err == nil {
		host = a.String()
	}
	for _, o := range g.policy.own {
		if o.host == host && strconv.Itoa(int(o.port)) == port {
			return true
		}
	}
	return false
}

// control checks the address a socket is about to connect to.
func (g *oauthGuard) control(_ context.Context, _, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return g.refuse(fmt.Errorf("refused to connect to %q: not an IP address and port", address))
	}
	if kind := refusedAddr(ap.Addr(), g.policy.allowLoopback); kind != "" {
		hint := ""
		if kind == "loopback" {
			hint = ` (that needs "allowInsecureLoopback": true in the server's auth)`
		}
		return g.refuse(fmt.Errorf("refused to connect to %s: a %s address%s", ap.Addr().Unmap(), kind, hint))
	}
	return nil
}

// refuse records the first refusal and returns it, naming the server.
func (g *oauthGuard) refuse(err error) error {
	err = fmt.Errorf("server %s: oauth: %w; no request was sent", g.server, err)
	g.refused.CompareAndSwap(nil, &err)
	return err
}

// refusal returns the first refusal, or nil.
func (g *oauthGuard) refusal() error {
	if p := g.refused.Load(); p != nil {
		return *p
	}
	return nil
}

// reset forgets the last refusal and issuer: Authorize calls it as each
// authorization begins and ends.
func (g *oauthGuard) reset() {
	g.refused.Store(nil)
	g.issuer.Store(nil)
}

// authServer returns the issuer of the authorization server the current
// authorization went to, or "".
func (g *oauthGuard) authServer() string {
	if p := g.issuer.Load(); p != nil {
		return *p
	}
	return ""
}

// answerError is a refused answer: the request was sent, what came back
// is not used.
func (g *oauthGuard) answerError(err error) error {
	err = fmt.Errorf("server %s: oauth: %w", g.server, err)
	g.refused.CompareAndSwap(nil, &err)
	return err
}

// RoundTrip refuses every request after a refusal, until reset: the
// SDK would go on to its fallbacks (the next metadata URL, the server's
// origin as the authorization server), and an authorization that met a
// refused URL ends there.
func (g *oauthGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := g.refusal(); err != nil {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, err
	}
	err := g.policy.checkURL("the URL", req.URL.String())
	issuers := metadataIssuers(req.URL)
	if err == nil && req.Method == http.MethodGet && len(issuers) > 0 {
		err = g.checkIssuers(issuers)
	}
	if err != nil {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, g.refuse(err)
	}
	if req.Method == http.MethodGet && len(issuers) > 0 {
		g.issuer.CompareAndSwap(nil, &issuers[0])
	}
	resp, err := g.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	// The reason phrase is the server's text: the SDK and oauth2 quote
	// resp.Status in their errors.
	resp.Status = strconv.Itoa(resp.StatusCode) + " " + http.StatusText(resp.StatusCode)
	o, _ := originOf(req.URL)
	ct, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
	switch {
	case req.Method == http.MethodGet:
		return g.metadata(o, issuers, resp)
	case ct == "application/json":
		return g.registration(o, resp)
	default:
		return g.token(o, resp)
	}
}

// readAnswer reads a whole answer of at most max bytes and closes it.
func readAnswer(resp *http.Response, max int64) ([]byte, bool, error) {
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	return body, int64(len(body)) > max, err
}

// withBody returns resp with body in place of what was read.
func withBody(resp *http.Response, body []byte) *http.Response {
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Del("Content-Length")
	return resp
}

// checkIssuers refuses a request for authorization server metadata when
// none of the issuers it may be for (metadataIssuers) is one a
// pre-registered client may go to.
func (g *oauthGuard) checkIssuers(issuers []string) error {
	var first error
	for _, iss := range issuers {
		err := g.policy.checkIssuer("the authorization server", iss)
		if err == nil {
			return nil
		}
		if first == nil {
			first = err
		}
	}
	return first
}

// metadata checks a protected resource or authorization server metadata
// document; issuers is not nil for authorization server metadata, and
// holds the issuers it may be for. Keys are matched exactly, as the SDK's
// decoder matches them.
func (g *oauthGuard) metadata(o origin, issuers []string, resp *http.Response) (*http.Response, error) {
	if resp.StatusCode != http.StatusOK {
		// The SDK reads no body of these: it tries the next URL.
		discard(resp)
		return withBody(resp, nil), nil
	}
	body, over, err := readAnswer(resp, maxOAuthMetadata)
	if err != nil {
		return nil, fmt.Errorf("read the metadata at %s: %w", o, err)
	}
	if over {
		return nil, g.answerError(fmt.Errorf("the metadata at %s is over %d bytes", o, maxOAuthMetadata))
	}
	if err := g.checkMetadata(body, issuers); err != nil {
		return nil, g.answerError(fmt.Errorf("the metadata at %s: %w", o, err))
	}
	return withBody(resp, body), nil
}

// metadataEndpoints are the fields of authorization server metadata that
// name an endpoint the client may call or send the user to.
var metadataEndpoints = []string{"authorization_endpoint", "token_endpoint", "registration_endpoint",
	"revocation_endpoint", "introspection_endpoint", "device_authorization_endpoint"}

func (g *oauthGuard) checkMetadata(body []byte, issuers []string) error {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(body, &doc); err != nil || doc == nil {
		return errors.New("not a JSON object")
	}
	str := func(key string) (string, error) {
		raw, ok := doc[key]
		if !ok || string(raw) == "null" {
			return "", nil
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("%s is not a string", key)
		}
		return s, nil
	}
	strs := func(key string) ([]string, error) {
		raw, ok := doc[key]
		if !ok || string(raw) == "null" {
			return nil, nil
		}
		var list []string
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, fmt.Errorf("%s is not a list of strings", key)
		}
		return list, nil
	}
	servers, err := strs("authorization_servers")
	if err != nil {
		return err
	}
	for i, s := range servers {
		if err := g.policy.checkURL(fmt.Sprintf("authorization_servers[%d]", i), s); err != nil {
			return err
		}
	}
	if len(servers) > 0 {
		// The SDK takes the first.
		if err := g.policy.checkIssuer("authorization_servers[0]", servers[0]); err != nil {
			return err
		}
		g.issuer.Store(&servers[0])
	}
	for _, key := range []string{"resource", "issuer"} {
		s, err := str(key)
		if err != nil {
			return err
		}
		if len(s) > maxOAuthURL {
			return fmt.Errorf("%s is over %d bytes", key, maxOAuthURL)
		}
	}
	if issuers != nil {
		// RFC 8414 §3.3: the issuer is the one the metadata was fetched for.
		iss, _ := str("issuer")
		if !slices.ContainsFunc(issuers, func(want string) bool { return issuersEqual(iss, want) }) {
			claimed := "none"
			if u, err := url.Parse(iss); err == nil && iss != "" {
				if co, ok := originOf(u); ok {
					claimed = "one at " + co.String()
				} else {
					claimed = "not an http or https URL"
				}
			}
			return fmt.Errorf("its issuer (%s) is not the issuer it was fetched for, as RFC 8414 (section 3.3) requires", claimed)
		}
	}
	authServer := false
	for _, key := range append([]string{"issuer"}, metadataEndpoints...) {
		s, err := str(key)
		if err != nil {
			return err
		}
		if s == "" {
			continue
		}
		authServer = true
		if key != "issuer" {
			if err := g.policy.checkURL(key, s); err != nil {
				return err
			}
		}
	}
	if authServer {
		methods, err := strs("code_challenge_methods_supported")
		if err != nil {
			return err
		}
		if !slices.Contains(methods, "S256") {
			return errors.New("code_challenge_methods_supported does not list S256, which the MCP authorization spec requires")
		}
	}
	return nil
}

// registration checks a dynamic client registration answer.
func (g *oauthGuard) registration(o origin, resp *http.Response) (*http.Response, error) {
	body, over, err := readAnswer(resp, maxRegistration)
	if err != nil {
		return nil, fmt.Errorf("read the registration answer from %s: %w", o, err)
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		return nil, g.answerError(fmt.Errorf("the registration endpoint (%s) answered %d%s", o, resp.StatusCode, errorCodeOf(body)))
	}
	if over {
		return nil, g.answerError(fmt.Errorf("the registration answer from %s is over %d bytes", o, maxRegistration))
	}
	var r oauthex.ClientRegistrationResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, g.answerError(fmt.Errorf("the registration answer from %s is not a registration (a JSON object with the RFC 7591 fields)", o))
	}
	if err := g.checkRegistration(&r); err != nil {
		return nil, g.answerError(fmt.Errorf("the registration answer from %s: %w", o, err))
	}
	return withBody(resp, body), nil
}

func (g *oauthGuard) checkRegistration(r *oauthex.ClientRegistrationResponse) error {
	if r.ClientID == "" {
		return errors.New("client_id is missing")
	}
	if err := boundedToken("client_id", r.ClientID, maxClientID); err != nil {
		return err
	}
	if err := boundedToken("client_secret", r.ClientSecret, maxClientID); err != nil {
		return err
	}
	if err := boundedToken("token_endpoint_auth_method", r.TokenEndpointAuthMethod, maxErrorCode); err != nil {
		return err
	}
	if len(r.RedirectURIs) > 16 {
		return fmt.Errorf("redirect_uris has over %d entries", 16)
	}
	if !slices.Contains(r.RedirectURIs, g.redirect) {
		return errors.New("redirect_uris does not hold the redirect URI voltmcp registered")
	}
	return nil
}

// boundedToken refuses a value over max bytes or with a byte outside
// printable ASCII (RFC 6749's VSCHAR), naming the field, never the value.
func boundedToken(field, v string, max int) error {
	if len(v) > max {
		return fmt.Errorf("%s is over %d bytes", field, max)
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return fmt.Errorf("%s holds a byte outside printable ASCII (at offset %d)", field, i)
		}
	}
	return nil
}

// errorCodeOf returns ` (error "code")` for an OAuth error answer whose
// error code is a valid one (RFC 6749 §5.2: printable ASCII without '"'
// and '\'), else "". The description and the rest are never shown.
func errorCodeOf(body []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || !validErrorCode(e.Error) {
		return ""
	}
	return fmt.Sprintf(" (error %q)", e.Error)
}

func validErrorCode(code string) bool {
	if code == "" || len(code) > maxErrorCode {
		return false
	}
	for i := 0; i < len(code); i++ {
		if c := code[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// token passes a token answer on, except that an error answer is cut
// down to its error code: golang.org/x/oauth2 quotes the whole body of an
// error answer, or its error_description, in the error it returns.
func (g *oauthGuard) token(o origin, resp *http.Response) (*http.Response, error) {
	body, over, err := readAnswer(resp, maxTokenAnswer)
	if err != nil {
		return nil, fmt.Errorf("read the token answer from %s: %w", o, err)
	}
	if over {
		return nil, g.answerError(fmt.Errorf("the token answer from %s is over %d bytes", o, maxTokenAnswer))
	}
	failed := resp.StatusCode < 200 || resp.StatusCode > 299
	code := ""
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch ct {
	case "application/x-www-form-urlencoded", "text/plain": // as oauth2 reads them
		vals, err := url.ParseQuery(string(body))
		if err != nil {
			failed = true
		}
		code = vals.Get("error")
	default:
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(body, &e) != nil && failed {
			break
		}
		code = e.Error
	}
	if !failed && code == "" {
		return withBody(resp, body), nil
	}
	clean := []byte("{}")
	if validErrorCode(code) {
		clean, _ = json.Marshal(map[string]string{"error": code})
	} else if !failed {
		clean = []byte(`{"error":"invalid_response"}`)
	}
	resp.Header.Set("Content-Type", "application/json")
	return withBody(resp, clean), nil
}
