package owner

import (
	"crypto/subtle"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// Handler returns next behind the owner's checks: a request whose Host
// is not a loopback name ([LoopbackHost]) gets a 403, and so does one
// with more than one Origin or an Origin that is not a loopback origin
// ([LoopbackOrigin]); then a request must carry exactly one
// "Authorization: Bearer <token>", compared in constant time, or it
// gets a 401 with "WWW-Authenticate: Bearer". An empty token refuses
// every request.
func Handler(token []byte, next http.Handler) http.Handler {
	return &ownerOnly{token: token, next: next}
}

// ownerOnly lets through the requests from a loopback origin that carry
// the bearer token (Handler).
type ownerOnly struct {
	token []byte
	next  http.Handler
}

func (o *ownerOnly) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !LoopbackHost(r.Host) {
		http.Error(w, "forbidden: the Host header must name a loopback address", http.StatusForbidden)
		return
	}
	if origins := r.Header.Values("Origin"); len(origins) > 0 && (len(origins) > 1 || !LoopbackOrigin(origins[0])) {
		http.Error(w, "forbidden: requests from a non-loopback origin are refused", http.StatusForbidden)
		return
	}
	if !o.authorized(r.Header.Values("Authorization")) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="voltmcp"`)
		http.Error(w, "unauthorized: send the token of voltmcp serve's token file as Authorization: Bearer <token>", http.StatusUnauthorized)
		return
	}
	o.next.ServeHTTP(w, r)
}

// authorized reports whether values, the request's Authorization
// headers, are one bearer credential equal to the token. The
// comparison takes the same time wherever the first difference is.
func (o *ownerOnly) authorized(values []string) bool {
	if len(o.token) == 0 || len(values) != 1 {
		return false
	}
	v := values[0]
	const scheme = "bearer "
	if len(v) <= len(scheme) || !strings.EqualFold(v[:len(scheme)], scheme) {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimLeft(v[len(scheme):], " ")), o.token) == 1
}

// LoopbackHost reports whether hostport, a Host header, names a loopback
// address: localhost, or an IP address that is loopback.
func LoopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// LoopbackOrigin reports whether origin, an Origin header, is an http or
// https origin on a loopback host.
func LoopbackOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil || (u.Path != "" && u.Path != "/") {
		return false
	}
	return LoopbackHost(u.Host)
}
