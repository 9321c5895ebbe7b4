package oauthguard

import (
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/voltmcp/voltmcp/engine/internal/transport"
)

func TestMetadataIssuers(t *testing.T) {
	for raw, want := range map[string][]string{
		"https://as.example/.well-known/oauth-authorization-server":        {"https://as.example"},
		"https://as.example/.well-known/openid-configuration":              {"https://as.example"},
		"https://as.example/.well-known/oauth-authorization-server/tenant": {"https://as.example/tenant"},
		"https://as.example/.well-known/openid-configuration/t/1":          {"https://as.example/t/1"},
		"https://as.example/tenant/.well-known/openid-configuration":       {"https://as.example/tenant"},
		"https://as.example/.well-known/oauth-protected-resource/mcp":      nil,
		"https://as.example/token":                                         nil,
	} {
		u, _ := url.Parse(raw)
		if got := metadataIssuers(u); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s: %q, want %q", raw, got, want)
		}
	}
	home, _ := transport.OriginOf(&url.URL{Scheme: "https", Host: "mcp.example"})
	unbound := Policy{}
	same := Policy{Bound: true, Home: home}
	named := Policy{Bound: true, Home: home, Issuer: "https://login.example/tenant"}
	for _, tc := range []struct {
		p      *Policy
		issuer string
		ok     bool
	}{
		{&unbound, "https://anywhere.example", true},
		{&same, "https://mcp.example", true},
		{&same, "https://MCP.example:443/x", true},
		{&same, "https://mcp.example:8443", false},
		{&same, "http://mcp.example", false},
		{&same, "https://login.example", false},
		{&named, "https://login.example/tenant/", true},
		{&named, "https://login.example/tenant", true},
		{&named, "https://login.example", false},
		{&named, "https://login.example/tenant2", false},
		{&named, "https://mcp.example", false},
	} {
		if err := tc.p.CheckIssuer("x", tc.issuer); (err == nil) != tc.ok {
			t.Errorf("bound %v issuer %q: %s: %v", tc.p.Bound, tc.p.Issuer, tc.issuer, err)
		}
	}
}

// FuzzOriginChecks fuzzes the same-origin check a server's requests pass
// (an SSE endpoint resolved against the configured URL, as the go-sdk
// resolves it) and the check of each URL an OAuth server names.
func FuzzOriginChecks(f *testing.F) {
	for _, s := range [][2]string{
		{"http://127.0.0.1:8080/sse", "/messages?sessionid=1"},
		{"http://127.0.0.1:8080/sse", "//127.0.0.1:9090/messages"},
		{"http://127.0.0.1:8080/sse", "http://127.0.0.1:8080@evil.example/x"},
		{"https://Mcp.Example.com/sse", "https://mcp.example.com:443/m?x=1"},
		{"http://[::1]:80/sse", "http://[0:0:0:0:0:0:0:1]/m"},
		{"http://127.0.0.1/sse", "HTTP://127.0.0.1:0080/m"},
		{"https://169.254.169.254/", "https://[::ffff:a9fe:a9fe]/latest?token=s3cret"},
		{"http://localhost:3000/mcp", "http://user:pw@localhost:3000/x#frag"},
		{"https://a.example/", "javascript:alert(1)"},
		{"https://a.example/", "https://10.0.0.1./x"},
	} {
		f.Add(s[0], s[1], false)
		f.Add(s[0], s[1], true)
	}
	f.Fuzz(func(t *testing.T, base, endpoint string, allowLoopback bool) {
		b, err := url.Parse(base)
		if err != nil {
			return
		}
		u, err := b.Parse(endpoint)
		if err != nil {
			return
		}
		ob, okB := transport.OriginOf(b)
		ou, okU := transport.OriginOf(u)
		for _, o := range []transport.Origin{ob, ou} {
			s := o.String()
			if i := strings.Index(s, "://"); o != (transport.Origin{}) && (i < 0 || strings.ContainsAny(s[i+3:], "/?#@")) {
				t.Fatalf("origin %q shows more than scheme, host and port", s)
			}
		}
		if okB && okU && ob == ou {
			// Same origin: Go dials the same host and port, over the same scheme.
			if !strings.EqualFold(b.Scheme, u.Scheme) || dialKey(b) != dialKey(u) {
				t.Fatalf("%q and %q are one origin, but dial %s and %s", base, u, dialKey(b), dialKey(u))
			}
		}
		msg := (&transport.CrossOriginError{Server: "s", To: ou}).Error()
		if q := u.RawQuery; len(q) >= 8 && strings.Contains(msg, q) && !strings.Contains(ou.String(), q) {
			t.Fatalf("refusal %q shows the query", msg)
		}

		p := Policy{AllowLoopback: allowLoopback}
		err = p.CheckURL("field", endpoint)
		if err == nil {
			v, perr := url.Parse(endpoint)
			if perr != nil || v.User != nil {
				t.Fatalf("%q passed: unparsable or with a user", endpoint)
			}
			host := strings.ToLower(v.Hostname())
			loop := isLoopbackName(host)
			a, aerr := netip.ParseAddr(host)
			if aerr == nil {
				a = a.Unmap()
				loop = a.IsLoopback()
				if a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsUnspecified() || a.IsMulticast() || a.IsLoopback() && !allowLoopback {
					t.Fatalf("%q passed, to a refused address", endpoint)
				}
			}
			switch strings.ToLower(v.Scheme) {
			case "https":
				if loop && !allowLoopback {
					t.Fatalf("%q passed: loopback without the setting", endpoint)
				}
			case "http":
				if !allowLoopback || !loop {
					t.Fatalf("%q passed: plain http", endpoint)
				}
			default:
				t.Fatalf("%q passed: scheme %q", endpoint, v.Scheme)
			}
		} else if v, perr := url.Parse(endpoint); perr == nil {
			for _, secret := range []string{v.RawQuery, v.User.String(), v.Fragment} {
				if len(secret) >= 8 && strings.Contains(err.Error(), secret) && !strings.Contains("field is not an https URL", secret) {
					if o, ok := transport.OriginOf(v); !ok || !strings.Contains(o.String(), secret) {
						t.Fatalf("refusal %q shows %q", err, secret)
					}
				}
			}
		}
	})
}

// dialKey is the host and port Go's http.Transport dials for u.
func dialKey(u *url.URL) string {
	host := strings.ToLower(u.Hostname())
	if a, err := netip.ParseAddr(host); err == nil {
		host = a.String()
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
	}
	if n, err := strconv.Atoi(port); err == nil {
		port = strconv.Itoa(n)
	}
	return net.JoinHostPort(host, port)
}
