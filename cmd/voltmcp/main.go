// Command voltmcp is an MCP gateway: an agent connects to `voltmcp serve`
// and reaches every MCP server its user configured through one tool. This
// command is a thin face over the library packages; see README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}
