package oauthguard

import (
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/voltmcp/voltmcp/engine/internal/transport"
)

// Bounds of what an OAuth answer may hold.
const (
	maxOAuthURL      = 2048    // bytes of any URL in metadata
	maxOAuthMetadata = 1 << 20 // bytes of a metadata document (as the SDK reads)
	maxRegistration  = 64 << 10
	maxTokenAnswer   = 1 << 20 // as golang.org/x/oauth2 reads
	maxClientID      = 512     // bytes of an issued client_id or client_secret
	maxErrorCode     = 64
)

// Policy is what a server's OAuth client may reach. It is not changed
// once given to [New].
type Policy struct {
	AllowLoopback bool               // auth.allowInsecureLoopback
	Own           []transport.Origin // the user's own: the server's url, resourceMetadataUrl
	// Bound is set for a pre-registered client: its credentials go only
	// to Issuer (auth.issuer), or, when that is "", to an authorization
	// server at Home, the origin of the server's url.
	Bound  bool
	Issuer string
	Home   transport.Origin
}

func (p *Policy) isOwn(o transport.Origin) bool { return slices.Contains(p.Own, o) }

// CheckURL refuses a URL the OAuth client must not use. field names the
// URL in the error, which shows only its origin.
func (p *Policy) CheckURL(field, raw string) error {
	if len(raw) > maxOAuthURL {
		return fmt.Errorf("%s is over %d bytes", field, maxOAuthURL)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%s is not a URL", field)
	}
	o, ok := transport.OriginOf(u)
	if !ok {
		return fmt.Errorf("%s is not an https URL", field)
	}
	if u.User != nil {
		return fmt.Errorf("%s (%s) holds a user name or password", field, o)
	}
	loopName := isLoopbackName(o.Host)
	a, err := netip.ParseAddr(o.Host)
	isIP := err == nil
	if isIP {
		loopName = a.Unmap().IsLoopback()
	}
	if o.Scheme == "http" && !(p.AllowLoopback && loopName) {
		if loopName {
			return fmt.Errorf(`%s (%s) is plain http: to a loopback address that needs "allowInsecureLoopback": true in the server's auth`, field, o)
		}
		return fmt.Errorf("%s (%s) is not https", field, o)
	}
	if p.isOwn(o) {
		return nil
	}
	if isIP {
		if kind := refusedAddr(a, p.AllowLoopback); kind != "" {
			return fmt.Errorf("%s (%s) is a %s address", field, o, kind)
		}
	} else if loopName && !p.AllowLoopback {
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

// CheckIssuer refuses an authorization server (its issuer identifier, or
// the URL the SDK takes as one) to which a pre-registered client's
// credentials must not go. The error shows origins only.
func (p *Policy) CheckIssuer(field, issuer string) error {
	if !p.Bound {
		return nil
	}
	u, err := url.Parse(issuer)
	o, ok := transport.OriginOf(u)
	if err != nil || !ok {
		return fmt.Errorf("%s is not an http or https URL", field)
	}
	if p.Issuer != "" {
		if issuersEqual(issuer, p.Issuer) {
			return nil
		}
		where := o.String()
		if cu, err := url.Parse(p.Issuer); err == nil {
			if co, ok := transport.OriginOf(cu); ok && co == o {
				where = "another path at " + where
			}
		}
		return fmt.Errorf("%s (%s) is not the authorization server in auth.issuer, which issued the configured client: "+
			"its clientId and clientSecret go nowhere else", field, where)
	}
	if o == p.Home {
		return nil
	}
	return fmt.Errorf("%s (%s) is not at the origin of the server's url (%s), and auth.issuer does not name it: "+
		"the configured clientId and clientSecret go only to the authorization server that issued them "+
		`(set "issuer" in the server's auth to that server's issuer)`, field, o, p.Home)
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
