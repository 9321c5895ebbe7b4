package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// coreModules are the dependencies voltmcp is built on, in the order
// `voltmcp version` lists them.
func coreModules() []string {
	return []string{
		"github.com/modelcontextprotocol/go-sdk",
		"github.com/open-policy-agent/opa",
		"cuelang.org/go",
		"github.com/tetratelabs/wazero",
		"github.com/spf13/pflag",
	}
}

func versionCommand() *command {
	c := &command{
		name:    "version",
		summary: "print the version of voltmcp and of its core dependencies",
		usage: `Usage: voltmcp version

Prints voltmcp's module version, the Go toolchain that built it, the commit
it was built from (with "uncommitted changes" when the checkout had some;
"unknown" when the build recorded none, as with go run or go test), and the
versions of the core dependencies linked into this binary. A core module not
yet linked into this build says so.

Example:
  voltmcp version`,
	}
	c.run = func(_ context.Context, e *env, args []string) error {
		if len(args) > 0 {
			return usageErrorf("version takes no arguments")
		}
		info, ok := debug.ReadBuildInfo()
		if !ok {
			return failuref("no build information in this binary")
		}
		fmt.Fprint(e.stdout, versionText(info))
		return nil
	}
	return c
}

func versionText(info *debug.BuildInfo) string {
	var b strings.Builder
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	fmt.Fprintf(&b, "voltmcp %s (%s, %s/%s)\n", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(&b, "  built from commit %s\n", buildCommit(info))
	deps := map[string]string{}
	for _, d := range info.Deps {
		if d.Replace != nil {
			deps[d.Path] = d.Replace.Version + " (replaced)"
		} else {
			deps[d.Path] = d.Version
		}
	}
	for _, m := range coreModules() {
		ver, ok := deps[m]
		if !ok {
			ver = "not linked in this build"
		}
		fmt.Fprintf(&b, "  %-40s %s\n", m, ver)
	}
	return b.String()
}

// buildCommit is the commit the binary was built from, as the go command
// stamps it from the checkout (vcs.revision, with vcs.modified true when
// the work tree had uncommitted changes), or "unknown": a binary built
// outside a checkout, with -buildvcs=false, or by go install of a module
// version (whose version says what it is) has none.
func buildCommit(info *debug.BuildInfo) string {
	rev, modified := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		return "unknown"
	}
	if modified {
		rev += " (with uncommitted changes)"
	}
	return rev
}
