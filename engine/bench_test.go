package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/internal/mcptest"
)

// The engine benchmarks. docs/benchmarks.md has the figures and the
// commands that produced them. Each benchmark closes what it starts and
// checks that no child process is left.

// benchWorkspace is workspace for a benchmark.
func benchWorkspace(b *testing.B, servers map[string]server) Options {
	return workspace(b, servers, nil)
}

// benchEngine is start for a benchmark: the engine closes when the
// benchmark ends, and Close must leave no child process behind.
func benchEngine(b *testing.B, opts Options) *Engine { return start(b, opts) }

func benchCtx(b *testing.B) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	b.Cleanup(cancel)
	return ctx
}

// BenchmarkConnectAndList takes a stdio server of mode behave from cold
// to ready: start the process, initialize, list tools, resources,
// resource templates and prompts.
//
//   - via=engine: Engine.Connect, which also writes the metadata cache,
//     on a server that Engine.Disconnect put back to disconnected.
//   - via=sdk: the same process start and the same four lists through a
//     bare go-sdk client, for comparison.
//
// benchstat -col /via puts the two side by side.
//
// Stopping the process (Disconnect, or closing the session) runs with the
// timer stopped; its time is reported as stop-ns/op.
func BenchmarkConnectAndList(b *testing.B) {
	b.Run("via=engine", func(b *testing.B) {
		opts := benchWorkspace(b, map[string]server{"behave": stdio(mcptest.ModeBehave, nil)})
		e := benchEngine(b, opts)
		ctx := benchCtx(b)
		var stop time.Duration
		b.ReportAllocs()
		for b.Loop() {
			if err := e.Connect(ctx, "behave"); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			t0 := time.Now()
			if err := e.Disconnect(ctx, "behave"); err != nil {
				b.Fatal(err)
			}
			stop += time.Since(t0)
			b.StartTimer()
		}
		b.ReportMetric(float64(stop.Nanoseconds())/float64(b.N), "stop-ns/op")
		if m, _ := e.Metadata("behave"); m == nil || len(m.Tools) != mcptest.BehaveTools {
			b.Fatalf("metadata after connect: %+v", m)
		}
	})

	b.Run("via=sdk", func(b *testing.B) {
		command, cargs, childenv := benchSDKCommand(b)
		ctx := benchCtx(b)
		b.Cleanup(func() {
			if kids := children(); len(kids) > 0 {
				b.Errorf("child processes left after Close: %v", kids)
			}
		})
		var stop time.Duration
		b.ReportAllocs()
		for b.Loop() {
			cmd := exec.Command(command, cargs...)
			cmd.Env = childenv
			client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1.0.0"}, nil)
			cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
			if err != nil {
				b.Fatal(err)
			}
			tools, err := cs.ListTools(ctx, nil)
			if err == nil {
				_, err = cs.ListResources(ctx, nil)
			}
			if err == nil {
				_, err = cs.ListResourceTemplates(ctx, nil)
			}
			if err == nil {
				_, err = cs.ListPrompts(ctx, nil)
			}
			if err != nil || len(tools.Tools) != mcptest.BehaveTools {
				cs.Close()
				b.Fatalf("list: %v", err)
			}
			b.StopTimer()
			t0 := time.Now()
			if err := cs.Close(); err != nil {
				b.Fatal(err)
			}
			stop += time.Since(t0)
			b.StartTimer()
		}
		b.ReportMetric(float64(stop.Nanoseconds())/float64(b.N), "stop-ns/op")
	})
}

// benchSDKCommand returns the command, arguments and environment of a
// stdio server of mode behave, as the engine would start it.
func benchSDKCommand(b *testing.B) (string, []string, []string) {
	command, cargs, env := mcptest.Command(mcptest.ModeBehave)
	childenv, err := childEnv(cue.Server{Env: env}, os.LookupEnv)
	if err != nil {
		b.Fatal(err)
	}
	return command, cargs, childenv
}

// benchDirectSession connects a bare go-sdk client to a stdio test server
// of mode behave, with the environment the engine would give it, and
// closes it (checking no child is left) when the benchmark ends.
func benchDirectSession(b *testing.B, ctx context.Context) *mcp.ClientSession {
	b.Helper()
	command, cargs, childenv := benchSDKCommand(b)
	cmd := exec.Command(command, cargs...)
	cmd.Env = childenv
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1.0.0"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := cs.Close(); err != nil {
			b.Errorf("close session: %v", err)
		}
		if kids := children(); len(kids) > 0 {
			b.Errorf("child processes left after Close: %v", kids)
		}
	})
	return cs
}

// BenchmarkCallTool is one tools/call round trip of echo on a connected
// stdio server of mode behave: through Engine.callUngated (via=engine), and
// through a bare go-sdk client with mcp.CommandTransport running the same
// binary in the same mode with the same environment (via=sdk). The
// difference is what the engine adds to a call; benchstat -col /via puts
// the two side by side.
func BenchmarkCallTool(b *testing.B) {
	args := map[string]any{"text": "hello, benchmark"}

	b.Run("via=engine", func(b *testing.B) {
		opts := benchWorkspace(b, map[string]server{"behave": stdio(mcptest.ModeBehave, nil)})
		e := benchEngine(b, opts)
		ctx := benchCtx(b)
		if err := e.Connect(ctx, "behave"); err != nil {
			b.Fatal(err)
		}
		res, err := e.callUngated(ctx, "behave", "echo", args)
		if err != nil || text(res) != args["text"] {
			b.Fatalf("echo: %v %v", res, err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := e.callUngated(ctx, "behave", "echo", args); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("via=sdk", func(b *testing.B) {
		ctx := benchCtx(b)
		cs := benchDirectSession(b, ctx)
		params := &mcp.CallToolParams{Name: "echo", Arguments: args}
		res, err := cs.CallTool(ctx, params)
		if err != nil || text(res) != args["text"] {
			b.Fatalf("echo: %v %v", res, err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: args}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// Sizes of the cache load benchmark.
const (
	benchServers        = 50
	benchToolsPerServer = 200
)

var (
	benchVerbs = []string{"get", "list", "create", "update", "delete", "search", "add", "remove"}
	benchNouns = []string{"issue", "pull_request", "comment", "branch", "file", "label", "milestone",
		"release", "workflow_run", "repository", "team", "member", "project", "discussion", "gist",
		"secret", "webhook", "deployment", "environment", "package", "tag", "commit", "review",
		"check_run", "notification"}
)

// benchTool builds tool i of a server the way a real one lists it (in the
// style of the GitHub MCP server): a name, a paragraph of description, an
// input schema of 4 to 10 described properties, and annotations.
func benchTool(server, i int) *mcp.Tool {
	verb := benchVerbs[i%len(benchVerbs)]
	noun := benchNouns[(i/len(benchVerbs))%len(benchNouns)]
	human := strings.ReplaceAll(noun, "_", " ")
	props := map[string]any{
		"owner": map[string]any{"type": "string", "description": "Owner of the repository: a user or an organization login."},
		"repo":  map[string]any{"type": "string", "description": "Name of the repository, without the owner."},
	}
	required := []any{"owner", "repo"}
	annotations := &mcp.ToolAnnotations{Title: fmt.Sprintf("%s %s", strings.ToUpper(verb[:1])+verb[1:], human)}
	var what string
	switch verb {
	case "get":
		props[noun+"_id"] = map[string]any{"type": "integer", "minimum": 1, "description": fmt.Sprintf("Number or numeric id of the %s.", human)}
		required = append(required, noun+"_id")
		annotations.ReadOnlyHint = true
		what = fmt.Sprintf("Get the details of one %s, including its author, timestamps, state and links. Returns 404 when the %s does not exist or the token cannot see it.", human, human)
	case "list", "search":
		props["page"] = map[string]any{"type": "integer", "minimum": 1, "default": 1, "description": "Page number of the results to fetch."}
		props["perPage"] = map[string]any{"type": "integer", "minimum": 1, "maximum": 100, "default": 30, "description": "Number of results per page, at most 100."}
		props["sort"] = map[string]any{"type": "string", "enum": []any{"created", "updated", "name"}, "description": "What to sort the results by."}
		props["direction"] = map[string]any{"type": "string", "enum": []any{"asc", "desc"}, "description": "Sort direction."}
		if verb == "search" {
			props["query"] = map[string]any{"type": "string", "description": "Search query, in the search syntax: qualifiers such as is:open, author:NAME or label:NAME, and free text."}
			required = append(required, "query")
		} else {
			props["state"] = map[string]any{"type": "string", "enum": []any{"open", "closed", "all"}, "default": "open", "description": "Only list items in this state."}
		}
		annotations.ReadOnlyHint = true
		what = fmt.Sprintf("%s %ss of a repository, a page at a time. Use the page and perPage parameters to walk through large result sets; results are sorted by creation time unless sort says otherwise.", strings.ToUpper(verb[:1])+verb[1:], human)
	case "create", "update", "add":
		props["title"] = map[string]any{"type": "string", "maxLength": 256, "description": fmt.Sprintf("Title of the %s.", human)}
		props["body"] = map[string]any{"type": "string", "description": "Body text, in GitHub Flavored Markdown."}
		props["labels"] = map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "Labels to set, by name."}
		props["assignees"] = map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "Logins of the users to assign."}
		if verb == "update" {
			props[noun+"_id"] = map[string]any{"type": "integer", "minimum": 1, "description": fmt.Sprintf("Number of the %s to update.", human)}
			required = append(required, noun+"_id")
		} else {
			required = append(required, "title")
		}
		annotations.DestructiveHint = new(false)
		what = fmt.Sprintf("%s a %s in a repository. Requires write access to the repository. Returns the %s as stored, with its number and URL, which later calls take as %s_id.", strings.ToUpper(verb[:1])+verb[1:], human, human, noun)
	default: // delete, remove
		props[noun+"_id"] = map[string]any{"type": "integer", "minimum": 1, "description": fmt.Sprintf("Number of the %s to %s.", human, verb)}
		props["reason"] = map[string]any{"type": "string", "description": "Why, recorded in the audit log."}
		required = append(required, noun+"_id")
		annotations.DestructiveHint = new(true)
		what = fmt.Sprintf("%s a %s. This cannot be undone: ask the user to confirm first. Requires admin access to the repository.", strings.ToUpper(verb[:1])+verb[1:], human)
	}
	return &mcp.Tool{
		Name:        fmt.Sprintf("%s_%s", verb, noun),
		Description: fmt.Sprintf("%s (service %d)", what, server),
		InputSchema: map[string]any{
			"type":                 "object",
			"properties":           props,
			"required":             required,
			"additionalProperties": false,
		},
		Annotations: annotations,
	}
}

// writeBenchCache writes the metadata cache file of each server as a
// discovery would: tools through toolOf, the hash through metadataHash,
// the identity through cue.Server.Identity, the file through cacheStore.save.
// It returns the total size of the files.
func writeBenchCache(b *testing.B, store cacheStore, servers []cue.Server) int64 {
	b.Helper()
	caps, _ := json.Marshal(&mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}})
	var size int64
	for n, srv := range servers {
		m := &Metadata{Format: cacheFormat, Server: srv.ID, Identity: srv.Identity(), FetchedAt: time.Now().UTC(),
			Name: fmt.Sprintf("service-%d", n), Version: "1.4.2", ProtocolVersion: "2025-06-18",
			Transport: cue.TransportStdio, Capabilities: caps}
		for i := range benchToolsPerServer {
			m.Tools = append(m.Tools, toolOf(benchTool(n, i)))
		}
		m.Hash = metadataHash(m.Tools)
		if err := store.save(m); err != nil {
			b.Fatal(err)
		}
		info, err := os.Stat(store.path(srv.Identity()))
		if err != nil {
			b.Fatal(err)
		}
		size += info.Size()
	}
	return size
}

// BenchmarkCacheLoad reads the metadata cache of 50 lazy stdio servers of
// 200 tools each (10,000 tools): what every engine start pays before any
// server runs.
//
//   - engine: New and Close with the config given in Options.Config, so
//     the op is the cache read for 50 servers and the supervisors.
//   - engine-nocache: the same without cache files, the floor of New.
//   - workspace: New and Close loading the config files too (compiling the
//     schema, as each New does), which is what a CLI run pays.
//   - files: cacheStore.load of the 50 files alone; ns/file is per file.
func BenchmarkCacheLoad(b *testing.B) {
	servers := map[string]server{}
	for i := range benchServers {
		servers[fmt.Sprintf("svc-%02d", i)] = stdio(mcptest.ModeBehave, nil)
	}
	opts := benchWorkspace(b, servers)
	// One engine to get the effective config: the same cue.Server values
	// New builds, so their identities match.
	probe, err := New(context.Background(), &opts)
	if err != nil {
		b.Fatal(err)
	}
	cfg := probe.Config()
	probe.Close()
	if len(cfg.Servers) != benchServers {
		b.Fatalf("servers = %d", len(cfg.Servers))
	}
	store := cacheStore{dir: filepath.Join(opts.Home, ".volt", "agent", "mcp", "cache")}
	size := writeBenchCache(b, store, cfg.Servers)

	// check makes sure an engine took every server's metadata from the
	// cache and started no process.
	check := func(b *testing.B, e *Engine, want int) {
		b.Helper()
		for _, s := range e.Servers() {
			if s.ToolCounts.Cached != want || s.CacheError != "" || s.Status != StatusCold {
				b.Fatalf("server %s: %d tools cached (want %d), cache error %q, status %s", s.ID, s.ToolCounts.Cached, want, s.CacheError, s.Status)
			}
		}
		if kids := children(); len(kids) > 0 {
			b.Fatalf("lazy servers started: %v", kids)
		}
	}
	newClose := func(b *testing.B, opts Options, want int) {
		e, err := New(context.Background(), &opts)
		if err != nil {
			b.Fatal(err)
		}
		check(b, e, want)
		e.Close()
		b.ReportAllocs()
		for b.Loop() {
			e, err := New(context.Background(), &opts)
			if err != nil {
				b.Fatal(err)
			}
			e.Close()
		}
	}

	withConfig := opts
	withConfig.Config = cfg
	b.Run("engine", func(b *testing.B) {
		b.SetBytes(size)
		newClose(b, withConfig, benchToolsPerServer)
	})
	b.Run("engine-nocache", func(b *testing.B) {
		empty := withConfig
		empty.AgentDir = b.TempDir()
		newClose(b, empty, 0)
	})
	b.Run("workspace", func(b *testing.B) {
		b.SetBytes(size)
		newClose(b, opts, benchToolsPerServer)
	})
	b.Run("files", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		for b.Loop() {
			for _, srv := range cfg.Servers {
				m, err := store.load(srv)
				if err != nil || m == nil || len(m.Tools) != benchToolsPerServer {
					b.Fatalf("load %s: %v", srv.ID, err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(cfg.Servers)), "ns/file")
	})
}

// BenchmarkEncodeCallAnswer measures the encoding of a call's answer on
// the lean path: written by hand (encodeLeanResult) and by encoding/json
// (encodeLeanResultJSON, what the hand writing replaced).
func BenchmarkEncodeCallAnswer(b *testing.B) {
	d := CallResult{Server: "up", Tool: "echo", Status: "completed", Risk: RiskRead, Content: "hello, gateway",
		Structured: json.RawMessage(`{"text":"hello, gateway"}`)}
	r := GatewayResult{Data: d, Text: d.Content}
	for _, c := range []struct {
		name   string
		encode func(GatewayResult, bool) ([]byte, error)
	}{{"hand", encodeLeanResult}, {"json", encodeLeanResultJSON}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.encode(r, false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
