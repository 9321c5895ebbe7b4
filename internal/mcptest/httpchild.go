package mcptest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serveHTTPChild serves s over Streamable HTTP on a loopback port,
// writes the URL to out as one line and serves until in ends.
func serveHTTPChild(s *mcp.Server, in io.Reader, out io.Writer) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	if _, err := fmt.Fprintf(out, "http://%s/mcp\n", ln.Addr()); err != nil {
		return err
	}
	ended := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, in); close(ended) }()
	select {
	case <-ended:
		_ = srv.Close()
		return nil
	case err := <-served:
		return err
	}
}

// StartHTTP starts the test server of mode as its own process serving
// Streamable HTTP on 127.0.0.1 (EnvListen) and returns its URL; the
// process stops when the test ends. extraEnv is as for Command.
func StartHTTP(t testing.TB, mode string, extraEnv ...string) string {
	t.Helper()
	name, args, env := Command(mode, append(extraEnv, EnvListen+"=http")...)
	cmd := exec.Command(name, args...)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("mcptest: starting the %s HTTP server: %v", mode, err)
	}
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("mcptest: reading the %s HTTP server's URL: %v", mode, err)
	}
	url := strings.TrimSpace(line)
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("mcptest: the %s HTTP server printed %q, not its URL", mode, line)
	}
	return url
}
