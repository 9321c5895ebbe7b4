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

Prints voltmcp's module version, the Go toolchain that built it, and the
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
