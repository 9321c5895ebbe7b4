package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/internal/oauthtest"
	"github.com/voltmcp/voltmcp/internal/testwait"
	"github.com/voltmcp/voltmcp/safefile"
)

// login runs voltmcp auth id and follows the redirect as a browser would.
func login(t *testing.T, env func(string) string, id string) cliResult {
	t.Helper()
	authURL, wait := startAuth(t, env, id, "--no-browser")
	if authURL == "" {
		r := wait()
		t.Fatalf("auth %s printed no URL:\n%s", id, r)
	}
	visit(t, approve(t, authURL), "")
	r := wait()
	if r.code != exitOK {
		t.Fatalf("auth %s:\n%s", id, r)
	}
	return r
}

// holders returns how many of the processes hold an open file at path
// (read from /proc, on Linux).
func holders(procs []*exec.Cmd, path string) int {
	n := 0
	for _, p := range procs {
		dir := filepath.Join("/proc", strconv.Itoa(p.Process.Pid), "fd")
		fds, _ := os.ReadDir(dir)
		for _, fd := range fds {
			if target, err := os.Readlink(filepath.Join(dir, fd.Name())); err == nil && target == path {
				n++
				break
			}
		}
	}
	return n
}

// TestAuthRefreshOnceAcrossProcesses runs two voltmcp call processes on
// one agent dir whose stored token is due for a refresh, against an
// authorization server that rotates refresh tokens and revokes the
// grant when a rotated one comes back. The test holds the token file's
// lock until both processes wait for it (on Linux, where /proc shows
// it), so that both read the old token before either can refresh: one
// refreshes, the other reads the token it stored, and the authorization
// server sees one refresh and no reuse.
func TestAuthRefreshOnceAcrossProcesses(t *testing.T) {
	t.Parallel()
	// The login stores a token that lives 5 s; once it has expired it is
	// due, whatever the refresh margin.
	o := oauthtest.New(t, &oauthtest.Options{TTL: 5 * time.Second})
	home, _ := oauthServers(t, nil, map[string]*oauthtest.Server{"o": o}, nil)
	env := fakeEnv(t, map[string]string{"HOME": home, "PATH": os.Getenv("PATH")})
	outputs := []string{login(t, env, "o").stdout}
	refreshes := o.Refreshes.Load()
	o.SetTTL(time.Hour) // the next refresh gives a token that is not due

	store := filepath.Join(home, ".volt", "agent", "mcp", "auth", "o.json")
	oauthtest.WaitExpired(t, store)
	ctx := testwait.Context(t)
	unlock, err := safefile.Lock(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	var procs []*exec.Cmd
	var outs []*bytes.Buffer
	for i := range 2 {
		cmd := exec.CommandContext(ctx, os.Args[0], "call", "o", "echo", "--args", `{"text": "process `+strconv.Itoa(i)+`"}`)
		cmd.Env = []string{cliChildEnv + "=1", "HOME=" + home, "PATH=" + os.Getenv("PATH"), "XDG_CACHE_HOME=" + testCacheDir}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			unlock()
			t.Fatal(err)
		}
		procs, outs = append(procs, cmd), append(outs, &out)
	}
	if runtime.GOOS == "linux" {
		testwait.For(t, "both processes to wait for the token file's lock", func() bool { return holders(procs, store+".lock") == 2 })
	}
	unlock()
	for i, p := range procs {
		err := p.Wait()
		outputs = append(outputs, outs[i].String())
		if err != nil || !strings.Contains(outs[i].String(), "process "+strconv.Itoa(i)) {
			t.Errorf("process %d: %v\n%s", i, err, outs[i])
		}
	}
	if n := o.Refreshes.Load() - refreshes; n != 1 {
		t.Errorf("%d refreshes for one expiry, want 1", n)
	}
	if n := o.Reuses.Load(); n != 0 {
		t.Errorf("a rotated refresh token came back %d times", n)
	}
	if o.Authorizes.Load() != 1 {
		t.Errorf("%d authorizations, want 1", o.Authorizes.Load())
	}
	// A later call uses the stored token as it is.
	r := runCLI(t, env, "call", "o", "echo", "--args", `{"text": "later"}`)
	outputs = append(outputs, r.stdout, r.stderr)
	if r.code != exitOK || o.Refreshes.Load()-refreshes != 1 {
		t.Errorf("a later call (%d refreshes in all):\n%s", o.Refreshes.Load()-refreshes, r)
	}
	if info, err := os.Stat(store); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("token file: %v, mode %v", err, info.Mode().Perm())
	}
	outputs = append(outputs, agentFiles(t, home))
	for _, text := range outputs {
		if leak := o.Leaked(text); leak != "" {
			t.Errorf("an output shows %s:\n%s", leak, text)
		}
	}
}

// TestAuthStoreRefusesLinksAndOpenFiles plants a symbolic link at the
// token file (which must be refused by name, and neither read nor
// written through) and makes the token file readable by others (its
// token is not used, and the next login replaces it with a 0600 file).
func TestAuthStoreRefusesLinksAndOpenFiles(t *testing.T) {
	t.Parallel()
	o := oauthtest.New(t, nil)
	home, env := oauthServers(t, nil, map[string]*oauthtest.Server{"o": o}, nil)
	store := filepath.Join(home, ".volt", "agent", "mcp", "auth", "o.json")
	var outputs []string
	outputs = append(outputs, login(t, env, "o").stdout)

	// Readable by others: not used, and replaced by the next login.
	if err := os.Chmod(store, 0o644); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, env, "call", "o", "echo", "--args", `{"text": "x"}`)
	outputs = append(outputs, r.stdout, r.stderr)
	if r.code == exitOK || !strings.Contains(r.stdout+r.stderr, "voltmcp auth o") {
		t.Errorf("call with a token file others can read:\n%s", r)
	}
	if r := runCLI(t, env, "auth", "--status", "o"); !strings.Contains(r.stdout, "needs_auth") {
		t.Errorf("status with a token file others can read:\n%s", r)
	}
	outputs = append(outputs, login(t, env, "o").stdout)
	if info, err := os.Stat(store); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("token file after a new login: %v, mode %v", err, info.Mode().Perm())
	}

	// A link to a file elsewhere, holding the real token.
	elsewhere := filepath.Join(t.TempDir(), "tokens.json")
	if err := os.Rename(store, elsewhere); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, store); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(elsewhere)
	const named = "o.json is a symbolic link, which the token store does not follow (remove it)"
	r = runCLI(t, env, "call", "o", "echo", "--args", `{"text": "x"}`)
	outputs = append(outputs, r.stdout, r.stderr)
	if r.code == exitOK || !strings.Contains(r.stdout+r.stderr, named) {
		t.Errorf("call through a link:\n%s", r)
	}
	authURL, wait := startAuth(t, env, "o", "--no-browser")
	r = wait()
	outputs = append(outputs, r.stdout, r.stderr)
	if authURL != "" || r.code != exitFailure || !strings.Contains(r.stderr, named) {
		t.Errorf("auth through a link (URL %q):\n%s", authURL, r)
	}
	r = runCLI(t, env, "logout", "o")
	outputs = append(outputs, r.stdout, r.stderr)
	if r.code == exitOK || !strings.Contains(r.stderr, named) {
		t.Errorf("logout through a link:\n%s", r)
	}
	if after, _ := os.ReadFile(elsewhere); !bytes.Equal(before, after) {
		t.Error("the link's target changed")
	}
	if info, err := os.Lstat(store); err != nil || info.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link is gone: %v", err)
	}
	if o.Authorizes.Load() != 2 {
		t.Errorf("%d authorizations, want 2", o.Authorizes.Load())
	}
	outputs = append(outputs, agentFiles(t, home))
	for _, text := range outputs {
		if leak := o.Leaked(text); leak != "" {
			t.Errorf("an output shows %s:\n%s", leak, text)
		}
	}
}
