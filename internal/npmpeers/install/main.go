// Command install puts the npm test peers in place: the official MCP
// servers, the MCP Inspector, the MCP conformance suite and a Node 22
// binary, at the versions pinned in internal/npmpeers/package.json and
// package-lock.json, in the git-ignored .cache/npm at the repository root,
// where the integration tests find them. The README's test command runs
// it before `go test`:
//
//	go run ./internal/npmpeers/install && go test -race -timeout 45m ./...
//
// A repeated run does nothing while the pins are unchanged. Without npm,
// or when the install fails, it prints one line saying which tests will
// skip and how to run them, and exits 0 so that the rest of the suite
// still runs; with VOLTMCP_REQUIRE_PEERS=1 (as .ci/run sets) it exits 1
// instead.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/voltmcp/voltmcp/internal/npmpeers"
)

func main() {
	root, err := npmpeers.RepoRoot()
	os.Exit(run(root, err, os.Stdout, os.Stderr, os.Getenv))
}

// skipped is the line printed when the peers are not there.
const skipped = "voltmcp tests: the integration tests against the official MCP servers, the MCP Inspector and the conformance suite will SKIP: %s. Install Node.js with npm and run `go run ./internal/npmpeers/install` again, or run .ci/run.\n"

// run installs the peers in root's .cache/npm; rootErr is why root could
// not be found.
func run(root string, rootErr error, stdout, stderr io.Writer, getenv func(string) string) int {
	required := getenv("VOLTMCP_REQUIRE_PEERS") == "1"
	fail := func(err error) int {
		fmt.Fprintf(stderr, skipped, err)
		if required {
			fmt.Fprintln(stderr, "VOLTMCP_REQUIRE_PEERS=1: the peers are required")
			return 1
		}
		return 0
	}
	if rootErr != nil {
		return fail(rootErr)
	}
	dir := filepath.Join(root, ".cache", "npm")
	version, fresh, err := install(root, dir, stdout, stderr)
	if err != nil {
		return fail(err)
	}
	what := "installed"
	if !fresh {
		what = "up to date"
	}
	fmt.Fprintf(stdout, "npm test peers %s in %s (node %s)\n", what, dir, version)
	return 0
}

// install runs npm ci in dir unless the pins in dir equal those of
// internal/npmpeers and the last install finished; it returns the Node
// version the install put in place.
func install(root, dir string, stdout, stderr io.Writer) (version string, fresh bool, err error) {
	pins := []string{"package.json", "package-lock.json"}
	stamp := filepath.Join(dir, ".installed")
	upToDate := fileExists(stamp)
	for _, p := range pins {
		want, err := os.ReadFile(filepath.Join(root, "internal", "npmpeers", p))
		if err != nil {
			return "", false, fmt.Errorf("read the pins: %w", err)
		}
		have, err := os.ReadFile(filepath.Join(dir, p))
		upToDate = upToDate && err == nil && bytes.Equal(have, want)
	}
	if !upToDate {
		npm, err := exec.LookPath("npm")
		if err != nil {
			return "", false, errors.New("npm is not on PATH")
		}
		if err := os.RemoveAll(dir); err != nil {
			return "", false, fmt.Errorf("clear %s: %w", dir, err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", false, err
		}
		for _, p := range pins {
			data, err := os.ReadFile(filepath.Join(root, "internal", "npmpeers", p))
			if err != nil {
				return "", false, err
			}
			if err := os.WriteFile(filepath.Join(dir, p), data, 0o644); err != nil {
				return "", false, err
			}
		}
		// package.json allows the one install script needed: that of the
		// npm package "node", which puts the Node 22 binary in place.
		cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund")
		cmd.Dir, cmd.Stdout, cmd.Stderr = dir, stdout, stderr
		if err := cmd.Run(); err != nil {
			return "", false, fmt.Errorf("npm ci in %s: %w", dir, err)
		}
		fresh = true
	}
	node := filepath.Join(dir, "node_modules", "node", "bin", "node")
	out, err := exec.Command(node, "--version").Output()
	version = strings.TrimSpace(string(out))
	if err != nil || !strings.HasPrefix(version, "v22.") {
		// The package's install script may have been blocked: then the
		// file is there but is not a working Node 22.
		os.Remove(stamp)
		return "", false, fmt.Errorf("%s does not run Node 22 (%q, %v): did npm skip the install script of the package \"node\"?", node, version, err)
	}
	if fresh {
		if err := os.WriteFile(stamp, nil, 0o644); err != nil {
			return "", false, err
		}
	}
	return version, fresh, nil
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}
