package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/engine"
)

func addCommand() *command {
	var url, transport, cwd, scope string
	var headers, envs []string
	var force, keepSecrets, oauth bool
	c := &command{
		name:    "add",
		summary: "add an MCP server to voltmcp's own config file",
		usage: `Usage: voltmcp add NAME [--env K=V]... [--cwd DIR] -- COMMAND [ARGS...]
       voltmcp add NAME --url URL [--header K=V]... [--transport http|sse] [--oauth]

Adds a server to voltmcp's user file (<home>/.volt/agent/mcp.json; with
--scope project, <project>/.volt/mcp.json), atomically and keeping the rest
of the file. A stdio server is the command after --; an HTTP server is its
--url, spoken over Streamable HTTP with a fallback to SSE unless --transport
says which; --oauth makes it log in with OAuth ("auth": {"type": "oauth"}),
after which 'voltmcp auth NAME' logs you in. The entry is checked with the schema the loader uses before
anything is written: a bad name, URL or variable is an error naming the
field. A credential belongs in the environment: write it as a reference,
--env 'GITHUB_TOKEN=${env:GITHUB_TOKEN}'; a literal secret is refused unless
--keep-secrets. A name another file already defines is refused (see
'voltmcp servers'); --force replaces voltmcp's own entry of that name.

Examples:
  voltmcp add everything -- npx -y @modelcontextprotocol/server-everything@2025.9.25
  voltmcp add github --env 'GITHUB_TOKEN=${env:GITHUB_TOKEN}' -- github-mcp-server stdio
  voltmcp add notes --url https://notes.example/mcp --header 'Authorization=Bearer ${env:NOTES_TOKEN}'
  voltmcp add linear --url https://mcp.linear.app/mcp --oauth`,
		flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&url, "url", "", "the URL of an HTTP server")
			fs.StringArrayVar(&headers, "header", nil, "an HTTP header K=V to send (repeatable)")
			fs.StringArrayVar(&envs, "env", nil, "an environment variable K=V for a stdio server (repeatable)")
			fs.StringVar(&transport, "transport", "", "http (Streamable HTTP) or sse; default: try http, then sse")
			fs.StringVar(&cwd, "cwd", "", "the directory a stdio server starts in")
			fs.StringVar(&scope, "scope", "user", "write voltmcp's user file (user) or the project's .volt/mcp.json (project)")
			fs.BoolVar(&force, "force", false, "replace voltmcp's own entry of the same name")
			fs.BoolVar(&keepSecrets, "keep-secrets", false, "accept a literal secret in --env or --header (vet reports it)")
			fs.BoolVar(&oauth, "oauth", false, "an HTTP server that logs in with OAuth (then: voltmcp auth NAME)")
		},
	}
	c.run = func(ctx context.Context, e *env, args []string) error {
		if len(args) == 0 {
			return usageErrorf("add needs a NAME, then -- COMMAND [ARGS...] or --url URL")
		}
		name, cmdline := args[0], args[1:]
		layer, err := scopeLayer(scope)
		if err != nil {
			return err
		}
		def := map[string]any{}
		switch {
		case url != "" && len(cmdline) > 0:
			return usageErrorf("give either --url or a command after --, not both")
		case url == "" && len(cmdline) == 0:
			return usageErrorf("server %q needs a command after -- or a --url", name)
		case url != "":
			if len(envs) > 0 || cwd != "" {
				return usageErrorf("--env and --cwd are for a stdio server; an HTTP server takes --header")
			}
			def["url"] = url
			switch transport {
			case "":
			case "http", "streamable-http":
				def["transport"] = cue.TransportStreamableHTTP
			case "sse":
				def["transport"] = cue.TransportSSE
			default:
				return usageErrorf("--transport is http or sse, not %q", transport)
			}
			if len(headers) > 0 {
				m, err := pairs("--header", headers)
				if err != nil {
					return err
				}
				def["headers"] = m
			}
			if oauth {
				def["auth"] = map[string]any{"type": "oauth"}
			}
		default:
			if len(headers) > 0 || transport != "" || oauth {
				return usageErrorf("--header, --transport and --oauth are for an HTTP server given with --url")
			}
			def["transport"] = cue.TransportStdio
			def["command"] = cmdline[0]
			if len(cmdline) > 1 {
				def["args"] = cmdline[1:]
			}
			if cwd != "" {
				def["cwd"] = cwd
			}
			if len(envs) > 0 {
				m, err := pairs("--env", envs)
				if err != nil {
					return err
				}
				def["env"] = m
			}
		}
		data, err := json.Marshal(def)
		if err != nil {
			return failuref("%w", err)
		}
		loc := cue.Locations{Home: e.g.home, Project: e.g.project}
		if s, ok, err := loadedServer(ctx, e, name); err != nil {
			return err
		} else if ok && s.File != loc.Path(layer) {
			return usageErrorf("server %q is already defined in %s (%s); choose another name", s.ID, s.File, s.Layer)
		}
		err = cue.AddServer(ctx, loc, layer, name, data, &cue.AddOptions{Replace: force, AllowLiteralSecrets: keepSecrets, TrustStore: filepath.Join(e.g.agentDir, cue.TrustStoreFile)})
		switch {
		case errors.Is(err, cue.ErrServerExists):
			return usageErrorf("%w; --force replaces it", err)
		case err != nil && strings.Contains(err.Error(), "is not valid"):
			return usageErrorf("%w", err)
		case err != nil:
			return failuref("%w", err)
		}
		id := cue.NormalizeID(name)
		if oauth {
			fmt.Fprintf(e.stdout, "Added %q to %s. 'voltmcp auth %s' logs in to it; its tools are listed then.\n", id, loc.Path(layer), id)
		} else {
			fmt.Fprintf(e.stdout, "Added %q to %s. 'voltmcp refresh %s' lists its tools.\n", id, loc.Path(layer), id)
		}
		return nil
	}
	return c
}

// pairs parses K=V flags into a map.
func pairs(flag string, list []string) (map[string]string, error) {
	m := map[string]string{}
	for _, kv := range list {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usageErrorf("%s wants K=V, got %q", flag, redactPair(kv))
		}
		m[k] = v
	}
	return m, nil
}

// redactPair shows a malformed K=V flag without what may be a secret.
func redactPair(kv string) string {
	if len(kv) > 24 {
		return kv[:8] + "…"
	}
	return kv
}

// loadedServer finds a server in the effective config, project layers
// included when trusted.
func loadedServer(ctx context.Context, e *env, id string) (cue.Server, bool, error) {
	res, err := cue.Load(ctx, cue.Locations{Home: e.g.home, Project: e.g.project}, &cue.Options{Approve: e.g.approve, NoApprove: e.g.noApprove,
		TrustStore: filepath.Join(e.g.agentDir, cue.TrustStoreFile)})
	if err != nil {
		return cue.Server{}, false, failuref("%w", err)
	}
	s, ok := res.Config.Server(id)
	return s, ok, nil
}

func removeCommand() *command {
	var scope string
	c := &command{
		name:    "remove",
		summary: "remove an MCP server from voltmcp's own config file",
		usage: `Usage: voltmcp remove NAME [--scope user|project]

Removes the server's entry from the voltmcp-owned file that has it
(<home>/.volt/agent/mcp.json, or <project>/.volt/mcp.json), atomically and
keeping the rest of the file, and deletes what voltmcp kept about the
server: its pins and approval, its cached metadata, its stored outputs, its
log and its OAuth token (deleted here, not revoked: 'voltmcp auth logout NAME'
first revokes it). A server added later under the name starts with
nothing. A server defined in another file (.mcp.json,
~/.config/mcp/mcp.json) is not voltmcp's to delete: remove says where it is
defined and suggests 'voltmcp disable NAME', which stops voltmcp from using
it and leaves the file to the tools that share it. --scope picks the file
when both have an entry of that name.

Examples:
  voltmcp remove everything
  voltmcp remove notes --scope project`,
		flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&scope, "scope", "", "remove from voltmcp's user file (user) or the project's .volt/mcp.json (project); default: the file that defines it")
		},
	}
	c.run = func(ctx context.Context, e *env, args []string) error {
		if len(args) != 1 {
			return usageErrorf("remove takes one server name")
		}
		id := args[0]
		loc := cue.Locations{Home: e.g.home, Project: e.g.project}
		layers := []cue.Layer{cue.LayerProject, cue.LayerUser}
		if scope != "" {
			l, err := scopeLayer(scope)
			if err != nil {
				return err
			}
			layers = []cue.Layer{l}
		}
		s, loaded, err := loadedServer(ctx, e, id)
		if err != nil {
			return err
		}
		if loaded && scope == "" && s.Layer.VoltmcpOwned() {
			layers = []cue.Layer{s.Layer}
		}
		for _, l := range layers {
			err := cue.RemoveServer(ctx, loc, l, id, &cue.WriteOptions{TrustStore: filepath.Join(e.g.agentDir, cue.TrustStoreFile)})
			if errors.Is(err, cue.ErrServerNotFound) {
				continue
			}
			if err != nil {
				return failuref("%w", err)
			}
			fmt.Fprintf(e.stdout, "Removed %q from %s.\n", cue.NormalizeID(id), loc.Path(l))
			after, still, err := loadedServer(ctx, e, id)
			if err == nil && still {
				fmt.Fprintf(e.stdout, "%q is still defined in %s (%s); 'voltmcp disable %s' stops voltmcp from using it.\n",
					after.ID, after.File, after.Layer, after.ID)
			}
			if loaded && (err != nil || !still || after.Identity() != s.Identity()) {
				// The server that was is gone: so is what voltmcp kept
				// about it, so that nothing of it carries over to a
				// server added later under this name.
				return forgetServer(ctx, e, s)
			}
			return nil
		}
		if loaded {
			return usageErrorf("server %q is defined in %s (%s), which is not voltmcp's file to edit; 'voltmcp disable %s' stops voltmcp from using it and leaves the file to the tools that share it",
				s.ID, s.File, s.Layer, s.ID)
		}
		return usageErrorf("unknown server %q: no entry in %s", id, strings.Join(paths(loc, layers), " or "))
	}
	return c
}

// forgetServer deletes what voltmcp kept about the removed server s
// (engine.Forget) and says what went.
func forgetServer(ctx context.Context, e *env, s cue.Server) error {
	f, err := engine.Forget(ctx, e.g.agentDir, s)
	var gone []string
	if f.Pins {
		gone = append(gone, "its pins and approval")
	}
	if f.Cache {
		gone = append(gone, "its cached metadata")
	}
	if f.Outputs > 0 {
		gone = append(gone, fmt.Sprintf("%d stored outputs", f.Outputs))
	}
	if f.Token {
		gone = append(gone, "its OAuth token (deleted here, not revoked at the authorization server)")
	}
	if f.Log {
		gone = append(gone, "its log")
	}
	if len(gone) > 0 {
		fmt.Fprintf(e.stdout, "Deleted %s.\n", strings.Join(gone, ", "))
	}
	if err != nil {
		return failuref("removed %q, but not all that voltmcp kept about it: %w", s.ID, err)
	}
	return nil
}

func paths(loc cue.Locations, layers []cue.Layer) []string {
	out := make([]string, len(layers))
	for i, l := range layers {
		out[i] = loc.Path(l)
	}
	return out
}
