package main

import (
	"bufio"
	"context"
	"github.com/voltmcp/voltmcp/internal/testwait"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// startServeHTTP runs `voltmcp serve --http 127.0.0.1:0` as its own
// process with extra flags, and returns its URL and the token file it
// names on stderr, or, when it exits first, its stderr.
func startServeHTTP(t *testing.T, home, project string, extra ...string) (url, tokenFile, stderr string) {
	t.Helper()
	return startServe(t, home, project, append([]string{"--http", "127.0.0.1:0"}, extra...)...)
}

// startServe runs `voltmcp serve` with flags as its own process, stopped
// when the test ends, and returns the URL (for --http) and the token file
// it names on stderr, or, when it exits first, its stderr.
func startServe(t testing.TB, home, project string, flags ...string) (url, tokenFile, stderr string) {
	t.Helper()
	args := append([]string{"serve", "--home", home, "--project", project, "--approve"}, flags...)
	cmd := cliCommand(args...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	var all strings.Builder
	sc := bufio.NewScanner(pipe)
	for sc.Scan() {
		line := sc.Text()
		all.WriteString(line + "\n")
		if u, ok := strings.CutPrefix(line, "voltmcp: serving MCP on "); ok {
			url, _, _ = strings.Cut(u, " ")
		}
		if i := strings.Index(line, "with the token in "); i >= 0 {
			tokenFile = line[i+len("with the token in "):]
			go func() { _, _ = io.Copy(io.Discard, pipe) }()
			return url, tokenFile, all.String()
		}
	}
	_ = cmd.Wait()
	return "", "", all.String()
}

// TestServeHTTPServesOnlyTheTokenHolder runs `voltmcp serve --http` and
// checks that it answers only requests with the bearer token of its
// token file: a file only this user can read, whose path (never the
// token) serve prints, and which the next start uses again.
func TestServeHTTPServesOnlyTheTokenHolder(t *testing.T) {
	home, project := t.TempDir(), benchProject(t)
	url, tokenFile, stderr := startServeHTTP(t, home, project)
	if url == "" || tokenFile != filepath.Join(home, ".volt", "agent", "http", "token") {
		t.Fatalf("serve's stderr names no URL or token file:\n%s", stderr)
	}
	b, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(b))
	if len(token) < 43 || strings.Contains(stderr, token) {
		t.Fatalf("token %d chars; on stderr: %t", len(token), strings.Contains(stderr, token))
	}
	if fi, err := os.Stat(tokenFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("token file: %v %v", fi.Mode(), err)
	}
	if fi, err := os.Stat(filepath.Dir(tokenFile)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("token dir: %v %v", fi.Mode(), err)
	}

	ctx, cancel := context.WithDeadline(context.Background(), testwait.Deadline(t))
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
	// Another user of the machine can reach the port, but has no token.
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Fatalf("without the token: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	if cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil); err == nil {
		cs.Close()
		t.Fatal("a client without the token connected")
	}
	call := func(url, token string) {
		t.Helper()
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url,
			HTTPClient: &http.Client{Transport: headerTransport{"Authorization", "Bearer " + token}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		callEcho(ctx, t, cs, "owner")
	}
	call(url, token)

	// A second serve, with the same agent dir, uses the same token.
	url2, tokenFile2, stderr2 := startServeHTTP(t, home, project)
	if url2 == "" || tokenFile2 != tokenFile {
		t.Fatalf("second serve:\n%s", stderr2)
	}
	if b2, _ := os.ReadFile(tokenFile); string(b2) != string(b) {
		t.Error("the second serve made a new token")
	}
	call(url2, token)
}

// TestServeHTTPRefusesAnUnsafeTokenFile gives serve token files that
// someone else could have read or planted: each is refused by name, and
// serve does not start.
func TestServeHTTPRefusesAnUnsafeTokenFile(t *testing.T) {
	home, project := t.TempDir(), benchProject(t)
	dir := filepath.Join(t.TempDir(), "private")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	const valid = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n"
	write := func(name string, mode os.FileMode, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	target := write("target", 0o600, valid)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		link:                                  "symlink",
		fifo:                                  "not a regular file",
		write("readable", 0o644, valid):       "mode 0644",
		write("short", 0o600, "abc\n"):        "does not hold a token",
		filepath.Join(open, "token"):          "others can write",
		filepath.Join(target, "under-a-file"): "not a directory",
	}
	if os.Getuid() == 0 {
		other := write("other", 0o600, valid)
		if err := os.Chown(other, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		cases[other] = "owned by uid 65534"
	}
	for path, want := range cases {
		t.Run(filepath.Base(path), func(t *testing.T) {
			url, _, stderr := startServeHTTP(t, home, project, "--token-file", path)
			if url != "" || !strings.Contains(stderr, path) || !strings.Contains(stderr, want) {
				t.Fatalf("serve with token file %s: want a refusal naming it (%q):\n%s", path, want, stderr)
			}
			if strings.Contains(stderr, strings.TrimSpace(valid)) {
				t.Errorf("the refusal quotes the file's token:\n%s", stderr)
			}
		})
	}
}

type headerTransport struct{ key, value string }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.key, h.value)
	return http.DefaultTransport.RoundTrip(r)
}
