// Package npmpeers locates and starts the third-party MCP programs that
// integration tests run against: the official MCP example servers and
// the MCP conformance suite, installed from npm at the exact versions
// pinned in package.json and package-lock.json next to this file, and a
// Node 22 binary from the npm package "node". It is a test-only helper
// package: library and CLI code never import it.
//
// The command internal/npmpeers/install (the first half of the README's
// test command) installs them with `npm ci` into .cache/npm at the
// repository root; .ci/run runs it with
//
//	VOLTMCP_NPM_DIR=<that directory>/node_modules
//	VOLTMCP_REQUIRE_PEERS=1
//
// A test that needs the programs calls [NodeModules] (or [Node]) first.
// Without VOLTMCP_NPM_DIR, the repository's .cache/npm/node_modules is
// used when it exists; when the programs are missing, the test is
// skipped, or fails when VOLTMCP_REQUIRE_PEERS=1, so that CI never skips
// it silently.
package npmpeers

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The environment variables the package reads.
const (
	EnvDir     = "VOLTMCP_NPM_DIR"
	EnvRequire = "VOLTMCP_REQUIRE_PEERS"
)

// Paths inside node_modules of the programs the tests use.
const (
	EverythingEntry  = "@modelcontextprotocol/server-everything/dist/index.js"
	FilesystemEntry  = "@modelcontextprotocol/server-filesystem/dist/index.js"
	ConformanceEntry = "@modelcontextprotocol/conformance/dist/index.js"
	// InspectorEntry is the launcher of the MCP Inspector; its --cli
	// mode drives one MCP request against a server and prints the result.
	InspectorEntry = "@modelcontextprotocol/inspector/clients/launcher/build/index.js"
	node22Binary   = "node/bin/node"
)

// installHint says how to get the programs.
const installHint = "install them with: go run ./internal/npmpeers/install (needs npm), or run .ci/run"

// missing skips the test, or fails it when peers are required.
func missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv(EnvRequire) == "1" {
		t.Fatalf("%s (%s=1: the npm peers must be installed; %s)", msg, EnvRequire, installHint)
	}
	t.Skipf("%s; %s", msg, installHint)
}

// NodeModules returns the absolute path of the node_modules directory
// that holds the npm peers, after checking that each program the tests
// use is there.
func NodeModules(t testing.TB) string {
	t.Helper()
	dir := os.Getenv(EnvDir)
	if dir == "" {
		root, err := RepoRoot()
		if err != nil {
			missing(t, "npm peers: %s is not set and %v", EnvDir, err)
		}
		dir = filepath.Join(root, ".cache", "npm", "node_modules")
		if _, err := os.Stat(dir); err != nil {
			missing(t, "npm peers: %s is not set and %s does not exist", EnvDir, dir)
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{EverythingEntry, FilesystemEntry, ConformanceEntry, InspectorEntry, node22Binary} {
		if _, err := os.Stat(filepath.Join(abs, p)); err != nil {
			missing(t, "npm peers: %s has no %s", abs, p)
		}
	}
	return abs
}

// Node returns the absolute path of the Node 22 binary that the npm
// package "node" installs, after checking that it runs.
func Node(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(NodeModules(t), node22Binary)
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		// The package's install script may have been blocked: then the
		// file is there but is not a working node.
		missing(t, "npm peers: %s --version: %v", bin, err)
	}
	if v := strings.TrimSpace(string(out)); !strings.HasPrefix(v, "v22.") {
		t.Fatalf("npm peers: %s is %s, want Node 22", bin, v)
	}
	return bin
}

// Path returns the absolute path of a file inside node_modules, such as
// [EverythingEntry].
func Path(t testing.TB, rel string) string {
	t.Helper()
	return filepath.Join(NodeModules(t), filepath.FromSlash(rel))
}

// RepoRoot returns the root of the repository: the nearest directory
// above the working directory that holds go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// LoopbackPreload returns the absolute path of loopback.cjs, the Node
// preload that makes a port-only listen bind 127.0.0.1.
func LoopbackPreload(t testing.TB) string {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(root, "internal", "npmpeers", "loopback.cjs")
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
	return p
}
