//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestVetRefusesFIFOs runs a real `voltmcp vet` whose project .mcp.json is
// a link to a FIFO, whose policy directory holds a FIFO named x.rego and
// whose classifier module is a FIFO, with a standard input that never
// ends, as an agent's. A blocking open of any of them never returns; vet
// ends, and names each one as not a regular file.
func TestVetRefusesFIFOs(t *testing.T) {
	home, project := t.TempDir(), t.TempDir()
	agent := filepath.Join(home, ".volt", "agent")
	mkfifo := func(path string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(path, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mkfifo(filepath.Join(agent, "pol", "x.rego"))
	mkfifo(filepath.Join(agent, "classifier.wasm"))
	fifo := filepath.Join(t.TempDir(), "fifo")
	mkfifo(fifo)
	if err := os.Symlink(fifo, filepath.Join(project, ".mcp.json")); err != nil {
		t.Fatal(err)
	}
	doc := `{"version": 1, "settings": {"policies": ["pol"], "plugins": {"classifiers": [{"path": "classifier.wasm", "sha256": "` +
		strings.Repeat("ab", 32) + `"}]}}, "servers": {}}`
	if err := os.WriteFile(filepath.Join(agent, "mcp.json"), []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := cliCommand("vet", "--home", home, "--project", project)
	cmd.Env = append(cmd.Env, "HOME="+home, "XDG_CACHE_HOME="+testCacheDir)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	cmd.Stdin = r
	done := make(chan struct{})
	var out []byte
	go func() {
		out, _ = cmd.CombinedOutput()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("voltmcp vet blocked on a FIFO\n%s", out)
	}
	text := string(out)
	for _, want := range []string{".mcp.json", "x.rego", "classifier.wasm"} {
		found := false
		for _, line := range strings.Split(text, "\n") {
			if strings.Contains(line, want) && strings.Contains(line, "not a regular file (fifo)") {
				found = true
			}
		}
		if !found {
			t.Errorf("vet does not name %s as not a regular file (fifo):\n%s", want, text)
		}
	}
}
