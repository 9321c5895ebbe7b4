package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeRoot makes a repository root holding the pins and nothing else.
func fakeRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	pins := filepath.Join(root, "internal", "npmpeers")
	if err := os.MkdirAll(pins, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"package.json", "package-lock.json"} {
		data, err := os.ReadFile(filepath.Join("..", p))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pins, p), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestWithoutNpmSaysWhatSkips(t *testing.T) {
	root := fakeRoot(t)
	t.Setenv("PATH", t.TempDir()) // no npm
	for _, required := range []bool{false, true} {
		var out, errOut bytes.Buffer
		getenv := func(k string) string {
			if k == "VOLTMCP_REQUIRE_PEERS" && required {
				return "1"
			}
			return ""
		}
		code := run(root, nil, &out, &errOut, getenv)
		want := 0
		if required {
			want = 1
		}
		if code != want {
			t.Errorf("required=%v: exit %d, want %d", required, code, want)
		}
		line := errOut.String()
		for _, s := range []string{"will SKIP", "npm is not on PATH", "go run ./internal/npmpeers/install", ".ci/run"} {
			if !strings.Contains(line, s) {
				t.Errorf("required=%v: stderr %q lacks %q", required, line, s)
			}
		}
		if fileExists(filepath.Join(root, ".cache", "npm", ".installed")) {
			t.Error("an install that did not happen left its stamp")
		}
	}
	var errOut bytes.Buffer
	if code := run("", errors.New("no go.mod above the working directory"), new(bytes.Buffer), &errOut, func(string) string { return "" }); code != 0 || !strings.Contains(errOut.String(), "no go.mod") {
		t.Errorf("no root: exit %d, %q", code, errOut.String())
	}
}

func TestStaleStampIsNotTrusted(t *testing.T) {
	root := fakeRoot(t)
	dir := filepath.Join(root, ".cache", "npm")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// A stamp with pins of another day: the install must run again, and
	// without npm it cannot.
	os.WriteFile(filepath.Join(dir, ".installed"), nil, 0o644)
	os.WriteFile(filepath.Join(dir, "package.json"), []byte("{}"), 0o644)
	t.Setenv("PATH", t.TempDir())
	if _, _, err := install(root, dir, new(bytes.Buffer), new(bytes.Buffer)); err == nil || !strings.Contains(err.Error(), "npm is not on PATH") {
		t.Fatalf("install with stale pins: %v", err)
	}
}
