package mcptest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The modes a test server can run in; doc.go describes each one.
const (
	ModeBehave        = "behave"
	ModeHangInit      = "hang-init"
	ModeHangCall      = "hang-call"
	ModeCrashCall     = "crash-call"
	ModeGarbage       = "garbage"
	ModeGrandchild    = "grandchild"
	ModeSleeper       = "sleeper"
	ModeIgnoreSIGTERM = "ignore-sigterm"
	ModeFloodStderr   = "flood-stderr"
	ModeListChanged   = "list-changed"
	ModeRepeatCursor  = "repeat-cursor"
	ModeBadMetadata   = "bad-metadata"
)

// The environment variables a child server reads.
const (
	// EnvMode names the mode a child runs in; RunIfChild does nothing
	// when it is not set.
	EnvMode = "VOLTMCP_TESTSERVER"
	// EnvExtraTools is the number of extra tools tool_0000, tool_0001, …
	// an SDK-based server registers. When it is above zero, list results
	// are paged PageSize items a page.
	EnvExtraTools = "VOLTMCP_TESTSERVER_EXTRA_TOOLS"
	// EnvPIDFile names the file the modes grandchild and ignore-sigterm
	// write a PID to.
	EnvPIDFile = "VOLTMCP_TESTSERVER_PIDFILE"
	// EnvListen, set to "http", makes an SDK-based server serve
	// Streamable HTTP on 127.0.0.1 instead of stdio: it writes its URL
	// as one line to stdout and serves until its stdin closes
	// (StartHTTP).
	EnvListen = "VOLTMCP_TESTSERVER_LISTEN"
)

// PageSize is the page size of list results when a server has extra tools.
const PageSize = 50

// BehaveTools is the number of tools of mode behave, which every other
// SDK-based mode has too.
const BehaveTools = 6

// maxBigBytes bounds the output of the big tool.
const maxBigBytes = 64 << 20

// maxExtraTools bounds EnvExtraTools.
const maxExtraTools = 100_000

// Readme is the text of the resource mcptest://readme.
const Readme = "mcptest is a small MCP server for tests.\n"

// isSDKMode reports whether mode is served by an mcp.Server.
func isSDKMode(mode string) bool {
	switch mode {
	case ModeBehave, ModeHangCall, ModeCrashCall, ModeGrandchild, ModeIgnoreSIGTERM, ModeFloodStderr, ModeListChanged,
		ModeHostileText, ModeFloodResult, ModeBinaryResult, ModeHugeResource,
		ModeSetsidGrandchild, ModeSegvCall, ModeMedia:
		return true
	}
	return false
}

// isRawMode reports whether mode is served by the raw JSON-RPC server of
// raw.go.
func isRawMode(mode string) bool {
	switch mode {
	case ModeRepeatCursor, ModeBadMetadata, ModeHugeMetadata, ModeManyTools, ModeSchemaBomb,
		ModeRugPull, ModeRugPullSchema, ModeRugPullDestructive, ModeFloodNotify, ModeHintsFile,
		ModeDeepAnswer, ModeHostileWire, ModeDescribed, ModeSecretMeta, ModeFloodRequests, ModeCatalog:
		return true
	}
	return false
}

// isRawHTTPMode reports whether the HTTP helpers serve raw mode mode:
// those that only answer, never notify.
func isRawHTTPMode(mode string) bool {
	return isRawMode(mode) && mode != ModeFloodNotify && mode != ModeFloodRequests
}

// isHTTPMode reports whether the HTTP helpers serve SDK mode mode: they
// serve those that do not act on the process (exit it, fork it, flood its
// stderr).
func isHTTPMode(mode string) bool {
	switch mode {
	case ModeBehave, ModeHangCall, ModeListChanged, ModeFloodResult, ModeBinaryResult, ModeHugeResource, ModeMedia:
		return true
	}
	return false
}

// knownMode reports whether mode is one of the modes above.
func knownMode(mode string) bool {
	return isSDKMode(mode) || isRawMode(mode) || mode == ModeHangInit || mode == ModeGarbage || mode == ModeSleeper || mode == ModeEndlessLine
}

// serverConfig is what, beyond its mode, shapes an SDK-based server.
type serverConfig struct {
	// extraTools is the number of tools tool_0000… to add.
	extraTools int
	// stop, when closed, releases the hang tool. Stdio children leave it
	// nil, so that hang never returns; HTTP servers close it when the test
	// ends, so that no handler outlives the test.
	stop <-chan struct{}
}

// newServer builds the SDK-based server of an SDK mode.
func newServer(mode string, cfg serverConfig) *mcp.Server {
	opts := &mcp.ServerOptions{}
	if cfg.extraTools > 0 {
		opts.PageSize = PageSize
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "mcptest-" + mode, Version: "1.0.0"}, opts)
	addEcho(s, "Echoes text back.")
	addBehave(s)
	addHostile(s, mode)
	addProcs(s, mode)
	for i := range cfg.extraTools {
		name := fmt.Sprintf("tool_%04d", i)
		s.AddTool(&mcp.Tool{
			Name:        name,
			Description: fmt.Sprintf("Extra tool number %d.", i),
			InputSchema: map[string]any{"type": "object"},
		}, textTool(name))
	}
	switch mode {
	case ModeHangCall:
		s.AddTool(&mcp.Tool{
			Name:        "hang",
			Description: "Never returns, even when the call is cancelled.",
			InputSchema: map[string]any{"type": "object"},
		}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			<-cfg.stop // nil for stdio children: blocks forever
			return nil, errors.New("mcptest: server stopped")
		})
	case ModeCrashCall:
		s.AddTool(&mcp.Tool{
			Name:        "crash",
			Description: "Makes the server exit with status 3 before it answers.",
			InputSchema: map[string]any{"type": "object"},
		}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			fmt.Fprintln(os.Stderr, "mcptest: crashing on purpose")
			os.Exit(3)
			return nil, nil
		})
	case ModeListChanged:
		var n atomic.Int64
		s.AddTool(&mcp.Tool{
			Name:        "mutate",
			Description: "Adds a tool added_<n> and changes the description of echo.",
			InputSchema: map[string]any{"type": "object"},
		}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			i := n.Add(1)
			name := fmt.Sprintf("added_%d", i)
			s.AddTool(&mcp.Tool{
				Name:        name,
				Description: fmt.Sprintf("Added by mutate call %d.", i),
				InputSchema: map[string]any{"type": "object"},
			}, textTool(name))
			addEcho(s, fmt.Sprintf("Echoes text back (revision %d).", i))
			return textResult("added " + name), nil
		})
	}
	return s
}

// textTool returns a handler that answers every call with text.
func textTool(text string) mcp.ToolHandler {
	return func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult(text), nil
	}
}

// textResult is a tool result holding one text.
func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// echoIO is the input and the structured output of the echo tool.
type echoIO struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

// addEcho adds (or replaces) the echo tool with the given description.
func addEcho(s *mcp.Server, description string) {
	mcp.AddTool(s, &mcp.Tool{
		Name:        "echo",
		Description: description,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, func(_ context.Context, _ *mcp.CallToolRequest, in echoIO) (*mcp.CallToolResult, echoIO, error) {
		return textResult(in.Text), in, nil
	})
}

// addIn is the input of the add tool.
type addIn struct {
	A float64 `json:"a" jsonschema:"the first addend"`
	B float64 `json:"b" jsonschema:"the second addend"`
}

// addOut is the structured output of the add tool.
type addOut struct {
	Sum float64 `json:"sum"`
}

// slowIn is the input of the slow tool.
type slowIn struct {
	Ms int `json:"ms" jsonschema:"how long to sleep, in milliseconds"`
}

// bigIn is the input of the big tool.
type bigIn struct {
	Bytes int `json:"bytes" jsonschema:"how many bytes of text to return"`
}

// addBehave adds the tools other than echo, the resources and the prompt
// of mode behave.
func addBehave(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{
		Name:        "add",
		Description: "Adds two numbers.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
		sum := in.A + in.B
		return textResult(strconv.FormatFloat(sum, 'g', -1, 64)), addOut{Sum: sum}, nil
	})

	mcp.AddTool(s, &mcp.Tool{
		Name:        "slow",
		Description: "Sleeps ms milliseconds, or until the call is cancelled, reporting progress every 100 ms when the call has a progress token.",
	}, func(ctx context.Context, req *mcp.CallToolRequest, in slowIn) (*mcp.CallToolResult, any, error) {
		t := time.NewTimer(time.Duration(in.Ms) * time.Millisecond)
		defer t.Stop()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		token := req.Params.GetProgressToken()
		for step := 1; ; step++ {
			select {
			case <-t.C:
				return textResult(fmt.Sprintf("slept %d ms", in.Ms)), nil, nil
			case <-ctx.Done():
				return nil, nil, fmt.Errorf("mcptest: slow cancelled: %w", context.Cause(ctx))
			case <-tick.C:
				if token != nil {
					_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token,
						Progress: float64(step * 100), Total: float64(in.Ms), Message: "sleeping"})
				}
			}
		}
	})

	mcp.AddTool(s, &mcp.Tool{
		Name:        "fail",
		Description: "Always fails.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: new(true)},
	}, func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
		res := textResult("mcptest: fail always fails")
		res.IsError = true
		return res, nil, nil
	})

	mcp.AddTool(s, &mcp.Tool{
		Name:        "big",
		Description: "Returns bytes bytes of text, in lines of 80 bytes.",
	}, func(_ context.Context, _ *mcp.CallToolRequest, in bigIn) (*mcp.CallToolResult, any, error) {
		if in.Bytes < 0 || in.Bytes > maxBigBytes {
			return nil, nil, fmt.Errorf("mcptest: bytes must be between 0 and %d", maxBigBytes)
		}
		return textResult(bigText(in.Bytes)), nil, nil
	})

	mcp.AddTool(s, &mcp.Tool{
		Name:        "env",
		Description: "Returns the server's environment, one KEY=VALUE a line.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
		env := os.Environ()
		slices.Sort(env)
		return textResult(strings.Join(env, "\n")), nil, nil
	})

	s.AddResource(&mcp.Resource{
		URI:         "mcptest://readme",
		Name:        "readme",
		Description: "What this server is.",
		MIMEType:    "text/plain",
	}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{
			{URI: req.Params.URI, MIMEType: "text/plain", Text: Readme},
		}}, nil
	})

	s.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: "mcptest://items/{id}",
		Name:        "item",
		Description: "An item, by id.",
		MIMEType:    "text/plain",
	}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		id := strings.TrimPrefix(req.Params.URI, "mcptest://items/")
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{
			{URI: req.Params.URI, MIMEType: "text/plain", Text: "item " + id},
		}}, nil
	})

	s.AddPrompt(&mcp.Prompt{
		Name:        "greet",
		Description: "Greets someone.",
		Arguments:   []*mcp.PromptArgument{{Name: "name", Description: "who to greet", Required: true}},
	}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
			{Role: "user", Content: &mcp.TextContent{Text: "Hello, " + req.Params.Arguments["name"] + "!"}},
		}}, nil
	})
}

// bigText returns n bytes of text in lines of 80 bytes (79 characters and
// a newline); the last line is cut short when n is not a multiple of 80.
func bigText(n int) string {
	const line = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-0123456789abcdef\n"
	var b strings.Builder
	b.Grow(n)
	for b.Len()+len(line) <= n {
		b.WriteString(line)
	}
	b.WriteString(line[:n-b.Len()])
	return b.String()
}
