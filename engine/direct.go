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
// cached metadata, only tools the tools decision exposes, and not a tool
// whose pin has a change waiting for review (it is not swapped for its
// new version before the user approves it; the mcp tool still reaches
// it, deciding the call on the change).
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
			in := e.exposureInput(s.ctx, s, t)
			if in.Pin.State == PinChanged || !e.decide(in).Exposed {
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

// wantsDirectTools reports whether a server of the config may expose
// direct tools: the setting is on and a server opts in.
func (e *Engine) wantsDirectTools() bool {
	if !e.Config().Settings.DirectTools {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range e.servers {
		if s.cfg.DirectTools.Enabled() && s.cfg.Enabled {
			return true
		}
	}
	return false
}

// addDirectTools registers the direct tools on srv, and keeps them in
// line with the servers' metadata while the engine runs: each time the
// servers change (a listing, a refresh, a reload), the tools
// directTools now gives that srv lacks are added, and each one srv has
// is withdrawn as soon as its server's metadata no longer has the tool
// with the hash it was exposed with, or directTools no longer gives it:
// a changed tool must be reviewed again, not silently swapped. The SDK
// sends notifications/tools/list_changed for each change. It does
// nothing when no server may expose direct tools (wantsDirectTools), so
// that serve, with no subscriber, publishes no events.
func (e *Engine) addDirectTools(srv *mcp.Server) {
	if !e.wantsDirectTools() {
		return
	}
	events, stop := e.Subscribe(256)
	live := map[string]directTool{}
	started := false
	update := func() {
		want := map[string]directTool{}
		for _, d := range e.directTools() {
			want[d.name] = d
		}
		var gone []string
		for name, d := range live {
			m, err := e.Metadata(d.server)
			if w, ok := want[name]; !ok || w.tool.Hash != d.tool.Hash || err != nil || m == nil || !hasTool(m, d.tool.Name, d.tool.Hash) {
				gone = append(gone, name)
				delete(live, name)
			}
		}
		if len(gone) > 0 {
			sort.Strings(gone)
			e.log.Info("withdrew direct tools whose metadata or exposure changed", "tools", gone)
			srv.RemoveTools(gone...)
		}
		var added []string
		for name, d := range want {
			if _, ok := live[name]; !ok {
				live[name] = d
				added = append(added, name)
				e.addDirectTool(srv, d)
			}
		}
		if len(added) > 0 && started {
			sort.Strings(added)
			e.log.Info("added direct tools listed since serve started", "tools", added)
		}
		started = true
	}
	update()
	go func() {
		defer stop()
		for ev := range events {
			// A gap may have held a change: look again.
			if ev.Type == EventServersChanged || ev.Type == EventGap {
				update()
			}
		}
	}()
}

// addDirectTool registers d on srv: a call of it is the mcp tool's call
// of the upstream tool.
func (e *Engine) addDirectTool(srv *mcp.Server, d directTool) {
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

func hasTool(m *Metadata, name, hash string) bool {
	for _, t := range m.Tools {
		if t.Name == name {
			return t.Hash == hash
		}
	}
	return false
}
