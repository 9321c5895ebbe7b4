package oauthguard

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

	"github.com/voltmcp/voltmcp/engine/internal/transport"
)

// Guard is the http.RoundTripper of a server's OAuth client. The
// zero value is not usable; make one with [New].
type Guard struct {
	server   string
	policy   Policy
	redirect string // our redirect URI, which a registration must hold
	base     http.RoundTripper
	refused  atomic.Pointer[error] // the first refusal, which Authorize reports
	// issuer is the authorization server this authorization goes to, as
	// the protected resource metadata named it (or, without that, as the
	// SDK's metadata request spells it), for the token store.
	issuer atomic.Pointer[string]
	// device is the device_authorization_endpoint of the authorization
	// server metadata the guard last let through, for the device grant
	// (the SDK's metadata type has no such field).
	device atomic.Pointer[string]
}

// New returns the guard for one server's OAuth client. Its
// transport is a clone of base when base is an *http.Transport (else of
// http.DefaultTransport), with a dialer that checks every address it
// connects to.
func New(server string, policy Policy, redirect string, base http.RoundTripper) *Guard {
	g := &Guard{server: server, policy: policy, redirect: redirect}
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
func (g *Guard) ownAddr(addr string) bool {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	host = strings.ToLower(host)
	if a, err := netip.ParseAddr(host); err == nil {
		host = a.String()
	}
	for _, o := range g.policy.Own {
		if o.Host == host && strconv.Itoa(int(o.Port)) == port {
			return true
		}
	}
	return false
}

// control checks the address a socket is about to connect to.
func (g *Guard) control(_ context.Context, _, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return g.Refuse(fmt.Errorf("refused to connect to %q: not an IP address and port", address))
	}
	if kind := refusedAddr(ap.Addr(), g.policy.AllowLoopback); kind != "" {
		hint := ""
		if kind == "loopback" {
			hint = ` (that needs "allowInsecureLoopback": true in the server's auth)`
		}
		return g.Refuse(fmt.Errorf("refused to connect to %s: a %s address%s", ap.Addr().Unmap(), kind, hint))
	}
	return nil
}

// Refuse records err as the first refusal, unless there was one, and
// returns it naming the server: the OAuth handler refuses what the guard
// cannot see (a WWW-Authenticate header, the authorization URL) this
// way.
func (g *Guard) Refuse(err error) error {
	err = fmt.Errorf("server %s: oauth: %w; no request was sent", g.server, err)
	g.refused.CompareAndSwap(nil, &err)
	return err
}

// Refusal returns the first refusal since the last [Guard.Reset], or
// nil.
func (g *Guard) Refusal() error {
	if p := g.refused.Load(); p != nil {
		return *p
	}
	return nil
}

// Reset forgets the last refusal and issuer: the OAuth handler calls it
// as each authorization begins and ends.
func (g *Guard) Reset() {
	g.refused.Store(nil)
	g.issuer.Store(nil)
	g.device.Store(nil)
}

// AuthServer returns the issuer of the authorization server the current
// authorization went to, or "".
func (g *Guard) AuthServer() string {
	if p := g.issuer.Load(); p != nil {
		return *p
	}
	return ""
}

// DeviceEndpoint returns the device_authorization_endpoint (RFC 8628)
// of the authorization server metadata the current authorization read,
// checked like every endpoint it names, or "" when it names none.
func (g *Guard) DeviceEndpoint() string {
	if p := g.device.Load(); p != nil {
		return *p
	}
	return ""
}

// Policy returns the policy the guard holds, which the OAuth handler
// checks what it sees with too.
func (g *Guard) Policy() *Policy { return &g.policy }

// answerError is a refused answer: the request was sent, what came back
// is not used.
func (g *Guard) answerError(err error) error {
	err = fmt.Errorf("server %s: oauth: %w", g.server, err)
	g.refused.CompareAndSwap(nil, &err)
	return err
}

// RoundTrip refuses every request after a refusal, until Reset: the
// SDK would go on to its fallbacks (the next metadata URL, the server's
// origin as the authorization server), and an authorization that met a
// refused URL ends there.
func (g *Guard) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := g.Refusal(); err != nil {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, err
	}
	err := g.policy.CheckURL("the URL", req.URL.String())
	issuers := metadataIssuers(req.URL)
	if err == nil && req.Method == http.MethodGet && len(issuers) > 0 {
		err = g.checkIssuers(issuers)
	}
	if err != nil {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, g.Refuse(err)
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
	o, _ := transport.OriginOf(req.URL)
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
func (g *Guard) checkIssuers(issuers []string) error {
	var first error
	for _, iss := range issuers {
		err := g.policy.CheckIssuer("the authorization server", iss)
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
func (g *Guard) metadata(o transport.Origin, issuers []string, resp *http.Response) (*http.Response, error) {
	if resp.StatusCode != http.StatusOK {
		// The SDK reads no body of these: it tries the next URL.
		transport.Discard(resp)
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

func (g *Guard) checkMetadata(body []byte, issuers []string) error {
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
		if err := g.policy.CheckURL(fmt.Sprintf("authorization_servers[%d]", i), s); err != nil {
			return err
		}
	}
	if len(servers) > 0 {
		// The SDK takes the first.
		if err := g.policy.CheckIssuer("authorization_servers[0]", servers[0]); err != nil {
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
				if co, ok := transport.OriginOf(u); ok {
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
			if err := g.policy.CheckURL(key, s); err != nil {
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
	if issuers != nil {
		dev, _ := str("device_authorization_endpoint")
		g.device.Store(&dev)
	}
	return nil
}

// registration checks a dynamic client registration answer.
func (g *Guard) registration(o transport.Origin, resp *http.Response) (*http.Response, error) {
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

func (g *Guard) checkRegistration(r *oauthex.ClientRegistrationResponse) error {
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
func (g *Guard) token(o transport.Origin, resp *http.Response) (*http.Response, error) {
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
