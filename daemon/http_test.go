//go:build unix

package daemon_test

import (
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/daemon"
	"github.com/voltmcp/voltmcp/devices"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// TestCheckLoopback accepts only a loopback host with a port.
func TestCheckLoopback(t *testing.T) {
	for _, c := range []struct{ in, want, err string }{
		{"127.0.0.1:7465", "127.0.0.1:7465", ""},
		{"127.0.0.1:0", "127.0.0.1:0", ""},
		{"[::1]:80", "[::1]:80", ""},
		{"localhost:9", "127.0.0.1:9", ""},
		{"0.0.0.0:7465", "", "not a loopback address"},
		{":7465", "", "not a loopback address"},
		{"[::]:7465", "", "not a loopback address"},
		{"192.168.1.5:7465", "", "not a loopback address"},
		{"127.0.0.2:7465", "", "not a loopback address"},
		{"example.com:80", "", "not a loopback address"},
		{"localhost.evil.example:80", "", "not a loopback address"},
		{"127.0.0.1", "", "want HOST:PORT"},
		{"127.0.0.1:http", "", "is not a number"},
		{"127.0.0.1:70000", "", "is not a number"},
	} {
		got, err := daemon.CheckLoopback(c.in)
		switch {
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("CheckLoopback(%q) = %q, %v; want %q", c.in, got, err, c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("CheckLoopback(%q) = %q, %v; want an error naming %q", c.in, got, err, c.err)
		}
	}
}

// TestHTTPListenerBoundsConnections holds the HTTP listener's
// connections at MaxHTTPConns: one more is closed at once, and once one
// ends, the next is served.
func TestHTTPListenerBoundsConnections(t *testing.T) {
	opts := options(t)
	opts.HTTPAddr, opts.MaxHTTPConns = "127.0.0.1:0", 2
	opts.Devices = devices.New(filepath.Join(opts.AgentDir, "daemon", daemon.DevicesName), nil)
	start(t, opts)
	st, err := daemon.AskStatus(testwait.Context(t), opts.AgentDir)
	if err != nil || st.HTTP == "" {
		t.Fatalf("status: %+v %v", st, err)
	}
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", st.HTTP)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held = append(held, c)
	}
	// A request on a held connection is served: the listener counts it.
	if _, err := held[0].Write([]byte("GET /rpc HTTP/1.1\r\nHost: " + st.HTTP + "\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if n, err := held[0].Read(buf); err != nil || !strings.Contains(string(buf[:n]), "401") {
		t.Fatalf("a held connection's request: %q %v, want a 401", buf[:n], err)
	}
	over, err := net.Dial("tcp", st.HTTP)
	if err != nil {
		t.Fatal(err)
	}
	defer over.Close()
	_ = over.SetReadDeadline(time.Now().Add(testwait.Patience))
	if n, err := over.Read(buf); err == nil || errors.As(err, new(net.Error)) && err.(net.Error).Timeout() {
		t.Fatalf("a connection over the limit read %q, %v; want it closed", buf[:n], err)
	}
	held[1].Close()
	testwait.For(t, "a connection to be served once one ended", func() bool {
		req, _ := http.NewRequest("POST", "http://"+st.HTTP+"/rpc", nil)
		res, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusUnauthorized
	})
}
