//go:build linux

package engine

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// Roles of TestEnvironThiefHelper, in envRoleVar.
const (
	envRoleVar = "VOLTMCP_TEST_ENVIRON_ROLE"
	envOfVar   = "VOLTMCP_TEST_ENVIRON_OF" // the thief's target
	envCanary  = "VOLTMCP_TEST_ENVIRON_CANARY"
)

// TestEnvironHiddenFromChildren runs a gateway process that starts an
// engine and then a child of the same user, as a stdio server is, which
// tries to read the gateway's /proc/<pid>/environ. The engine made the
// gateway non-dumpable, so the kernel refuses. Run as root, both run as
// nobody: root's capabilities would let the child read any process's
// environ, which is no test of the defence.
func TestEnvironHiddenFromChildren(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "engine.test")
	copyFile(t, exe, bin)
	cmd := exec.Command(bin, "-test.run=^TestEnvironThiefHelper$", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), envRoleVar+"=gateway", envCanary+"=canary-in-the-gateway-env", "HOME="+dir)
	if os.Getuid() == 0 {
		for d := dir; d != "/" && d != "."; d = filepath.Dir(d) {
			if fi, err := os.Stat(d); err == nil && fi.Mode().Perm()&0o011 != 0o011 {
				t.Cleanup(func() { _ = os.Chmod(d, fi.Mode().Perm()) })
				if err := os.Chmod(d, fi.Mode().Perm()|0o011); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := os.Chmod(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gateway helper: %v\n%s", err, out)
	}
	got := string(out)
	if !strings.Contains(got, "THIEF: refused:") {
		t.Fatalf("a child of the engine's process read its environ:\n%s", got)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestEnvironThiefHelper is a helper process of
// TestEnvironHiddenFromChildren; it does nothing in a normal run.
func TestEnvironThiefHelper(t *testing.T) {
	switch os.Getenv(envRoleVar) {
	case "gateway":
		home := os.Getenv("HOME")
		// No built-in plugin: compiling it would cost this process
		// seconds under the race detector, and what is tested is New's
		// hiding of the environment.
		user := filepath.Join(home, ".volt", "agent", "mcp.json")
		if err := os.MkdirAll(filepath.Dir(user), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(user, []byte(`{"version": 1, "settings": {"plugins": {"builtin": false}}}`), 0o600); err != nil {
			t.Fatal(err)
		}
		e, err := New(context.Background(), &Options{Home: home, Project: home, Passive: true, DisableAudit: true})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(exe, "-test.run=^TestEnvironThiefHelper$", "-test.count=1")
		cmd.Env = []string{envRoleVar + "=thief", envOfVar + "=" + strconv.Itoa(os.Getpid())}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("thief: %v\n%s", err, out)
		}
		fmt.Printf("%s", out)
	case "thief":
		b, err := os.ReadFile("/proc/" + os.Getenv(envOfVar) + "/environ")
		if err != nil {
			fmt.Printf("THIEF: refused: %v\n", err)
			return
		}
		// Not the environment itself: the test's log would hold it.
		fmt.Printf("THIEF: read the gateway's environment (%d bytes, canary found: %t)\n", len(b), strings.Contains(string(b), "canary-in-the-gateway-env"))
	default:
		t.Skip("a helper process of TestEnvironHiddenFromChildren")
	}
}
