package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/voltmcp/voltmcp/engine"
)

// toolsJSON is what tools --json prints: the server's cached tools as
// the metadata cache holds them.
type toolsJSON struct {
	Server    string        `json:"server"`
	FetchedAt time.Time     `json:"fetchedAt"`
	Stale     bool          `json:"stale,omitempty"`
	Tools     []engine.Tool `json:"tools"`
}

func toolsCommand() *command {
	var asJSON bool
	c := &command{
		name:    "tools",
		summary: "list the cached tools of one server, starting nothing",
		usage: `Usage: voltmcp tools SERVER [--json]

Lists the tools of SERVER as its last discovery cached them: each tool's
name, its behaviour hints (read-only, destructive, idempotent,
open-world: the server's own claims, which voltmcp does not take as
proof) and its title or the first line of its description. It starts no
server; a server never listed says so ('voltmcp refresh SERVER' lists it)
and exits 1. --json prints the cached tools in full, schemas included.

Examples:
  voltmcp tools github
  voltmcp tools github --json | jq -r '.tools[].name'`,
		flags: func(fs *pflag.FlagSet) {
			fs.BoolVar(&asJSON, "json", false, "print the cached tools as JSON")
		},
	}
	c.run = func(ctx context.Context, e *env, args []string) error {
		if len(args) != 1 {
			return usageErrorf("tools takes one server id")
		}
		eng, err := openEngine(ctx, e)
		if err != nil {
			return err
		}
		defer eng.Close()
		m, err := eng.Metadata(args[0])
		if err != nil {
			if errors.Is(err, engine.ErrUnknownServer) {
				return usageErrorf("%w", err)
			}
			return failuref("%w", err)
		}
		s, err := eng.Server(args[0])
		if err != nil {
			return failuref("%w", err)
		}
		if m == nil {
			return &exitError{exitFindings, fmt.Errorf("server %s has never been listed, so no tools are cached: voltmcp refresh %s lists them", s.ID, s.ID)}
		}
		if asJSON {
			tools := m.Tools
			if tools == nil {
				tools = []engine.Tool{}
			}
			return writeJSONValue(e.stdout, toolsJSON{Server: s.ID, FetchedAt: m.FetchedAt, Stale: s.MetadataStale, Tools: tools})
		}
		writeToolsTable(e.stdout, s, m)
		return nil
	}
	return c
}

// writeToolsTable prints a server's cached tools for a person.
func writeToolsTable(w io.Writer, s engine.ServerSummary, m *engine.Metadata) {
	id := clean(s.ID)
	if len(m.Tools) == 0 {
		fmt.Fprintf(w, "server %s lists no tools\n", id)
	} else {
		t := newTable(w, "TOOL", "HINTS", "DESCRIPTION")
		for _, tool := range m.Tools {
			desc := tool.Title
			if first, _, _ := strings.Cut(strings.TrimSpace(tool.Description), "\n"); first != "" {
				if desc != "" && !strings.Contains(first, desc) {
					desc += ": " + first
				} else {
					desc = first
				}
			}
			t.row(cell(tool.Name, 0), cell(hintsText(tool.Annotations, false), 0), cell(desc, descWidth))
		}
		t.flush()
	}
	when := fmt.Sprintf("\n%d tools of %s, listed %s", len(m.Tools), id, m.FetchedAt.UTC().Format(time.RFC3339))
	if s.MetadataStale {
		when += " (stale: voltmcp refresh " + id + ")"
	}
	fmt.Fprintln(w, when)
	if len(m.Tools) > 0 {
		fmt.Fprintf(w, "hints are the server's claims, not verified; voltmcp describe %s TOOL shows a tool's risk and schema\n", id)
	}
}
