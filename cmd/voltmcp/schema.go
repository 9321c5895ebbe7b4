package main

import (
	"context"

	"github.com/spf13/pflag"

	"github.com/voltmcp/voltmcp/cue"
)

func schemaCommand() *command {
	var cueSource bool
	c := &command{
		name:    "schema",
		summary: "print the JSON Schema of MCP config files, for editors",
		usage: `Usage: voltmcp schema [--cue]

Prints a JSON Schema (draft 2020-12) generated from voltmcp's CUE schema. It
covers all three dialects (voltmcp's, mcpServers, VS Code), so editors can
complete and check .mcp.json. With --cue it prints the CUE schema itself.

Examples:
  voltmcp schema > mcp.schema.json
  voltmcp schema --cue | less`,
		flags: func(fs *pflag.FlagSet) {
			fs.BoolVar(&cueSource, "cue", false, "print the CUE schema instead")
		},
	}
	c.run = func(ctx context.Context, e *env, args []string) error {
		if len(args) > 0 {
			return usageErrorf("schema takes no arguments")
		}
		if cueSource {
			_, err := e.stdout.Write(cue.SchemaSource())
			return err
		}
		s, err := cue.NewSchema()
		if err != nil {
			return failuref("%w", err)
		}
		js, err := s.JSONSchema()
		if err != nil {
			return failuref("%w", err)
		}
		_, err = e.stdout.Write(js)
		return err
	}
	return c
}
