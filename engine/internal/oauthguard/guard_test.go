package oauthguard

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/voltmcp/voltmcp/engine/internal/transport"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// TestOAuthDialRefusesResolvedAddresses: the dial-time check runs on the
// address a name resolves to (here localhost, which resolves to
// loopback), so no connection reaches the listener; with
// allowInsecureLoopback, loopback is allowed and private is not.
func TestOAuthDialRefusesResolvedAddresses(t *testing.T) {
	var conns atomic.Int32
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	ts.Start()
	t.Cleanup(ts.Close)
	u, _ := url.Parse(ts.URL)
	byName := "http://localhost:" + u.Port() + "/x"
	get := func(g *Guard, target string) error {
		ctx, cancel := context.WithTimeout(context.Background(), testwait.Patience)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		// The guard's own transport, past the URL check: only the dialer
		// stands between the request and the listener.
		resp, err := g.base.RoundTrip(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	strict := New("o", Policy{}, "", nil)
	if err := get(strict, byName); err == nil || !strings.Contains(err.Error(), "a loopback address") {
		t.Errorf("localhost without the setting: %v", err)
	}
	if n := conns.Load(); n != 0 {
		t.Errorf("%d connections reached the listener", n)
	}
	if err := strict.Refusal(); err == nil || !strings.Contains(err.Error(), "server o: oauth: refused to connect to ") {
		t.Errorf("refusal: %v", err)
	}
	loose := New("o", Policy{AllowLoopback: true}, "", nil)
	if err := get(loose, byName); err != nil {
		t.Errorf("localhost with the setting: %v", err)
	}
	// The user's own origin is exempt from the address check.
	own, _ := transport.OriginOf(u)
	mine := New("o", Policy{Own: []transport.Origin{own}}, "", nil)
	if err := get(mine, ts.URL+"/x"); err != nil {
		t.Errorf("the user's own origin: %v", err)
	}
	// The check runs before connect: refused addresses are never dialed.
	for _, a := range []string{"169.254.169.254:80", "[fd00::1]:80", "10.1.1.1:80", "[::ffff:192.168.0.1]:80", "0.0.0.0:80", "[64:ff9b::a00:1]:80"} {
		if err := loose.control(context.Background(), "tcp", a, nil); err == nil {
			t.Errorf("%s: allowed", a)
		}
	}
}

func TestRefusedAddr(t *testing.T) {
	for a, want := range map[string]string{
		"8.8.8.8": "", "2606:4700::1111": "", "127.0.0.1": "loopback", "::1": "loopback", "127.9.9.9": "loopback",
		"::ffff:127.0.0.1": "loopback", "10.0.0.1": "private", "172.16.0.1": "private", "172.31.255.255": "private",
		"192.168.1.1": "private", "fd00::1": "private", "fc00::1": "private", "169.254.169.254": "link-local",
		"fe80::1": "link-local", "::ffff:169.254.169.254": "link-local", "100.64.0.1": "carrier-grade NAT",
		"100.127.255.255": "carrier-grade NAT", "0.0.0.0": "unspecified", "::": "unspecified", "0.1.2.3": "reserved (this network)",
		"224.0.0.1": "multicast", "ff02::1": "multicast", "255.255.255.255": "broadcast", "240.0.0.1": "reserved",
		"64:ff9b::a9fe:a9fe": "link-local (embedded in IPv6)", "2002:a00:1::": "private (embedded in IPv6)",
		"::10.0.0.1": "private (embedded in IPv6)", "fe80::1%eth0": "link-local", "198.18.0.1": "reserved (benchmarking)",
		"172.32.0.1": "", "100.128.0.1": "",
	} {
		got := refusedAddr(netip.MustParseAddr(a), false)
		if got != want {
			t.Errorf("%s: %q, want %q", a, got, want)
		}
		if loose := refusedAddr(netip.MustParseAddr(a), true); (want == "loopback") != (loose == "") && want != "" {
			t.Errorf("%s with loopback allowed: %q", a, loose)
		}
	}
}
