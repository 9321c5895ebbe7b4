package engine

import (
	"context"
	"encoding/json"
	"sort"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/engine/internal/bound"
)

// directTool is an upstream tool exposed as a tool of `voltmcp serve`,
// pinned to the metadata hash it had when exposed.
type directTool struct {
	name   string // mcp__<server>__<tool>
	server string
	tool   Tool
}

// directTools lists the tools to expose directly: only when the
// directTools setting allows it, only for servers that opt in, only from
// cached metadata, and only tools the tools decision exposes.
func (e *Engine) directTools() []directTool {
	if !e.Config().Settings.DirectTools {
		return nil
	}
	e.mu.Lock()
	sups := make([]*supervisor, 0, len(e.servers))
	for _, s := range e.servers {
		sups = append(sups, s)
	}
	e.mu.Unlock()
	var out []directTool
	for _, s := range sups {
		dt := s.cfg.DirectTools
		if !dt.Enabled() || !s.cfg.Enabled {
			continue
		}
		s.mu.Lock()
		m := s.meta
		s.mu.Unlock()
		if m == nil {
			continue
		}
		for _, t := range m.Tools {
			if !bound.ValidName(t.Name) || (!dt.All && !matchesAny(dt.Tools, t.Name)) {
				continue
			}
			if !e.decide(e.exposureInput(s.ctx, s, t)).Exposed {
				continue
			}
			out = append(out, directTool{name: "mcp__" + s.cfg.ID + "__" + t.Name, server: s.cfg.ID, tool: t})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func matchesAny(globs []string, name string) bool {
	for _, g := range globs {
		if globMatch(g, name) {
			return true
		}
	}
	return false
}

// addDirectTools registers the direct tools on srv and withdraws each one
// (the SDK then sends notifications/tools/list_changed) as soon as its
// server's metadata no longer has the tool with the hash it was exposed
// with: a changed tool must be reviewed again, not silently swapped.
func (e *Engine) addDirectTools(srv *mcp.Server) {
	tools := e.directTools()
	if len(tools) == 0 {
		return
	}
	for _, d := range tools {
		t := &mcp.Tool{Name: d.name, Title: d.tool.Title, Description: modelText(d.server, d.tool.Description), InputSchema: json.RawMessage(`{"type":"object"}`)}
		if len(d.tool.InputSchema) > 0 {
			t.InputSchema = d.tool.InputSchema
		}
		srv.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args map[string]any
			if len(req.Params.Arguments) > 0 {
				if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
					return toolResult(gwError("arguments are not a JSON object")), nil
				}
			}
			return toolResult(e.Gateway(ctx, GatewayInput{Action: "call", Server: d.server, Tool: d.tool.Name, Arguments: args})), nil
		})
	}
	events, stop := e.Subscribe(64)
	go func() {
		defer stop()
		live := map[string]directTool{}
		for _, d := range tools {
			live[d.name] = d
		}
		for ev := range events {
			if ev.Type != EventServersChanged || len(live) == 0 {
				continue
			}
			var gone []string
			for name, d := range live {
				m, err := e.Metadata(d.server)
				if err != nil || m == nil || !hasTool(m, d.tool.Name, d.tool.Hash) {
					gone = append(gone, name)
					delete(live, name)
				}
			}
			if len(gone) > 0 {
				e.log.Info("withdrew direct tools whose metadata changed", "tools", gone)
				srv.RemoveTools(gone...)
			}
		}
	}()
}

func hasTool(m *Metadata, name, hash string) bool {
	for _, t := range m.Tools {
		if t.Name == name {
			return t.Hash == hash
		}
	}
	return false
}
