//go:build unix

package main

import (
	"context"
	"github.com/voltmcp/voltmcp/internal/testwait"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// unixClient is an HTTP client that dials the unix socket at path and
// sends header: value with each request, when header is not empty.
func unixClient(path, header, value string) *http.Client {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}
	if header == "" {
		return &http.Client{Transport: tr}
	}
	return &http.Client{Transport: headerTransportOver{header, value, tr}}
}

type headerTransportOver struct {
	key, value string
	next       http.RoundTripper
}

func (h headerTransportOver) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.key, h.value)
	return h.next.RoundTrip(r)
}

// TestServeSocketServesOnlyTheOwner runs `voltmcp serve --socket` as its
// own process: the socket is 0600 in a 0700 directory, a request without
// the bearer token gets a 401, and a client with it calls a tool.
func TestServeSocketServesOnlyTheOwner(t *testing.T) {
	home, project := t.TempDir(), benchProject(t)
	sock := filepath.Join(t.TempDir(), "run", "voltmcp.sock")
	_, tokenFile, stderr := startServe(t, home, project, "--socket", sock)
	if tokenFile == "" {
		t.Fatalf("serve --socket did not start:\n%s", stderr)
	}
	if fi, err := os.Lstat(sock); err != nil || fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket: %v %v", fi, err)
	}
	if fi, err := os.Stat(filepath.Dir(sock)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("socket directory: %v %v", fi, err)
	}
	b, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(b))

	ctx, cancel := context.WithDeadline(context.Background(), testwait.Deadline(t))
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://localhost/", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := unixClient(sock, "", "").Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without the token: %d", resp.StatusCode)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://localhost/",
		HTTPClient: unixClient(sock, "Authorization", "Bearer "+token)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	callEcho(ctx, t, cs, "over the socket")
}
