//go:build linux

package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/voltmcp/voltmcp/internal/testwait"
)

// The helper process of TestServeSocketRefusesAnotherUser reads these.
const (
	peerSocketVar = "VOLTMCP_TEST_PEER_SOCKET"
	peerTokenVar  = "VOLTMCP_TEST_PEER_TOKEN"
)

// TestServeSocketRefusesAnotherUser opens serve's socket and its
// directory to everyone, as a mistake would, and has another user (uid
// 65534) send a request with the right token: the peer check
// (SO_PEERCRED) still refuses the connection. It needs root, to run the
// other user.
func TestServeSocketRefusesAnotherUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a process as another user")
	}
	home, project := t.TempDir(), benchProject(t)
	base := t.TempDir()
	sock := filepath.Join(base, "run", "voltmcp.sock")
	_, tokenFile, stderr := startServe(t, home, project, "--socket", sock)
	if tokenFile == "" {
		t.Fatalf("serve --socket did not start:\n%s", stderr)
	}
	b, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	// Open the way to the socket, and the helper binary, to everyone.
	for d := filepath.Dir(sock); d != "/"; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o011 != 0o011 {
			t.Cleanup(func() { _ = os.Chmod(d, fi.Mode().Perm()) })
			if err := os.Chmod(d, fi.Mode().Perm()|0o011); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.Chmod(sock, 0o666); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(base, "voltmcp.test")
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	peer := exec.Command(bin, "-test.run=^TestSocketPeerHelper$", "-test.count=1")
	peer.Dir = base
	peer.Env = append(os.Environ(), peerSocketVar+"="+sock, peerTokenVar+"="+strings.TrimSpace(string(b)))
	peer.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := peer.CombinedOutput()
	if err != nil {
		t.Fatalf("peer helper: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "PEER: refused:") {
		t.Fatalf("another user, with the token, was served over the socket:\n%s", out)
	}
}

// TestSocketPeerHelper is the other user of
// TestServeSocketRefusesAnotherUser; it does nothing in a normal run.
func TestSocketPeerHelper(t *testing.T) {
	sock := os.Getenv(peerSocketVar)
	if sock == "" {
		t.Skip("a helper process of TestServeSocketRefusesAnotherUser")
	}
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Patience)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://localhost/", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := unixClient(sock, "Authorization", "Bearer "+os.Getenv(peerTokenVar)).Do(req)
	if err != nil {
		fmt.Printf("PEER: refused: %v\n", err)
		return
	}
	resp.Body.Close()
	fmt.Printf("PEER: served: status %d\n", resp.StatusCode)
}
