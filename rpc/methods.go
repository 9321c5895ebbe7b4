package rpc

import (
	"context"
	"encoding/json"
	"sort"
	"strings"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/engine"
	"github.com/voltmcp/voltmcp/redact"
)

// method is one RPC method: its name and its run, which decodes the
// params (through decodeParams) and calls the engine.
type method struct {
	name string
	run  func(c *connection, ctx context.Context, params json.RawMessage) (any, *Error)
	// params makes a fresh value of the params the method decodes; nil
	// for a method that takes its params as they came.
	params func() any
	// runThen, when set instead of run, hands its answer to answer,
	// once, on any goroutine, rather than returning it: the request
	// stays in flight until then.
	runThen func(c *connection, ctx context.Context, params json.RawMessage, answer func(any, *Error))
}

// def makes a method whose params decode into P. For a remote client
// (Options.Remote) the voltmcp.remote policy decides the request, with
// the server its params name, before it runs.
func def[P any](name string, run func(c *connection, ctx context.Context, p *P) (any, *Error)) *method {
	return &method{name: name, run: func(c *connection, ctx context.Context, raw json.RawMessage) (any, *Error) {
		var p P
		if err := decodeParams(raw, &p); err != nil {
			return nil, err
		}
		if c.s.opts.Remote {
			server := ""
			if t, ok := any(&p).(interface{ serverID() string }); ok {
				server = t.serverID()
			}
			if err := c.decideRemote(ctx, name, server); err != nil {
				return nil, err
			}
			res, err := run(c, ctx, &p)
			return res, c.remoteError(err)
		}
		return run(c, ctx, &p)
	}, params: func() any { return new(P) }}
}

// decideRemote asks the voltmcp.remote policy whether a remote client
// may run method on server ("" for none); the refusal is CodeRefused
// with the policy's reasons. Every method of a remote client is decided
// here before it runs.
func (c *connection) decideRemote(ctx context.Context, method, server string) *Error {
	req := engine.RemoteRequest{Command: method, Remote: true, Server: server}
	if method == "start_mcp_server_auth" {
		// A remote client's authorization is the device flow only:
		// Auth.start holds it to that.
		req.AuthFlow = engine.AuthFlowDevice
	}
	if d := c.s.eng.DecideRemote(ctx, req); !d.Allowed {
		return c.remoteError(errorf(CodeRefused, "%s refused for a remote client by the voltmcp.remote policy: %s", method, strings.Join(d.Reasons, "; ")))
	}
	return nil
}

// The server each method's params name, for the voltmcp.remote decision.
func (p *serverParams) serverID() string       { return p.ID }
func (p *enabledParams) serverID() string      { return p.ID }
func (p *toolParams) serverID() string         { return p.ID }
func (p *pageParams) serverID() string         { return p.ID }
func (p *readResourceParams) serverID() string { return p.ID }
func (p *promptParams) serverID() string       { return p.ID }
func (p *callParams) serverID() string         { return p.ID }
func (p *recentParams) serverID() string       { return p.ID }
func (p *completeAuthParams) serverID() string { return p.ID }
func (p *approveParams) serverID() string      { return p.ID }
func (p *logParams) serverID() string          { return p.ID }

// The params of the methods. A field tagged rpc:"required" must be
// present.
type (
	noParams     struct{}
	serverParams struct {
		ID string `json:"id" rpc:"required"`
	}
	enabledParams struct {
		ID      string `json:"id" rpc:"required"`
		Enabled bool   `json:"enabled" rpc:"required"`
	}
	toolParams struct {
		ID   string `json:"id" rpc:"required"`
		Name string `json:"name" rpc:"required"`
	}
	pageParams struct {
		ID     string `json:"id" rpc:"required"`
		Cursor string `json:"cursor"`
	}
	readResourceParams struct {
		ID  string `json:"id" rpc:"required"`
		URI string `json:"uri" rpc:"required"`
	}
	promptParams struct {
		ID        string         `json:"id" rpc:"required"`
		Name      string         `json:"name" rpc:"required"`
		Arguments map[string]any `json:"arguments"`
	}
	callParams struct {
		ID        string         `json:"id" rpc:"required"`
		Tool      string         `json:"tool" rpc:"required"`
		Arguments map[string]any `json:"arguments"`
	}
	recentParams struct {
		ID string `json:"id"`
	}
	completeAuthParams struct {
		ID          string `json:"id" rpc:"required"`
		CallbackURL string `json:"callbackUrl" rpc:"required"`
	}
	approveParams struct {
		ID    string   `json:"id" rpc:"required"`
		Tools []string `json:"tools"`
	}
	subscribeParams struct {
		SinceSeq *uint64 `json:"sinceSeq"`
	}
)

// allMethods is every method, in the order docs/rpc.md documents them.
func allMethods() []*method {
	return []*method{
		def("get_mcp_capabilities", (*connection).capabilities),
		def("list_mcp_servers", (*connection).listServers),
		def("get_mcp_server", func(c *connection, _ context.Context, p *serverParams) (any, *Error) { return c.summary(p.ID, nil) }),
		def("set_mcp_server_enabled", func(c *connection, ctx context.Context, p *enabledParams) (any, *Error) {
			return c.summary(p.ID, c.s.eng.SetEnabled(ctx, p.ID, p.Enabled))
		}),
		def("connect_mcp_server", func(c *connection, ctx context.Context, p *serverParams) (any, *Error) {
			return c.summary(p.ID, c.s.eng.Connect(ctx, p.ID))
		}),
		def("disconnect_mcp_server", func(c *connection, ctx context.Context, p *serverParams) (any, *Error) {
			return c.summary(p.ID, c.s.eng.Disconnect(ctx, p.ID))
		}),
		def("refresh_mcp_server", func(c *connection, ctx context.Context, p *serverParams) (any, *Error) {
			return c.summary(p.ID, c.s.eng.Refresh(ctx, p.ID))
		}),
		def("list_mcp_tools", (*connection).listTools),
		def("get_mcp_tool", (*connection).getTool),
		def("list_mcp_resources", (*connection).listResources),
		def("read_mcp_resource", (*connection).readResource),
		def("list_mcp_prompts", (*connection).listPrompts),
		def("get_mcp_prompt", (*connection).getPrompt),
		def("list_mcp_recent_calls", (*connection).recentCalls),
		def("start_mcp_server_auth", (*connection).startAuth),
		def("poll_mcp_server_auth", (*connection).pollAuth),
		def("cancel_mcp_server_auth", (*connection).cancelAuth),
		def("complete_mcp_server_auth", (*connection).completeAuth),
		def("logout_mcp_server", (*connection).logout),
		def("subscribe_mcp_events", (*connection).subscribe),
		def("unsubscribe_mcp_events", func(c *connection, _ context.Context, _ *noParams) (any, *Error) {
			return map[string]bool{"unsubscribed": c.unsubscribe()}, nil
		}),
		def("call_mcp_tool", (*connection).callTool),
		def("list_mcp_pins", (*connection).listPins),
		def("approve_mcp_server", func(c *connection, ctx context.Context, p *approveParams) (any, *Error) {
			return c.summary(p.ID, c.s.eng.Approve(ctx, p.ID, p.Tools...))
		}),
		def("read_mcp_server_log", (*connection).serverLog),
		gatewayMethod(),
	}
}

// methodsByName indexes methods.
var methodsByName = func() map[string]*method {
	all := allMethods()
	m := make(map[string]*method, len(all))
	for _, x := range all {
		m[x.name] = x
	}
	return m
}()

// Methods lists the names of the methods the server answers.
func Methods() []string {
	all := allMethods()
	out := make([]string, len(all))
	for i, m := range all {
		out[i] = m.name
	}
	return out
}

// Capabilities is get_mcp_capabilities' answer.
type Capabilities struct {
	// Features names the feature flags: "mcp_management.v1" (the spec's
	// management commands) and "mcp_events.v1" (the event stream).
	Features []string `json:"features"`
	Methods  []string `json:"methods"`
	// Auth says whether the auth methods can run, and when not, why.
	Auth struct {
		Available bool   `json:"available"`
		Reason    string `json:"reason,omitempty"`
	} `json:"auth"`
	Limits struct {
		MaxLineBytes int `json:"maxLineBytes"`
		MaxInFlight  int `json:"maxInFlight"`
		EventBuffer  int `json:"eventBuffer"`
	} `json:"limits"`
}

func (c *connection) capabilities(_ context.Context, _ *noParams) (any, *Error) {
	var out Capabilities
	out.Features = []string{"mcp_management.v1", EventSchema}
	out.Methods = Methods()
	out.Auth.Available = c.s.opts.Auth != nil
	if !out.Auth.Available {
		out.Auth.Reason = "this server was started without an authorization broker"
	}
	out.Limits.MaxLineBytes, out.Limits.MaxInFlight, out.Limits.EventBuffer = c.s.opts.MaxLineBytes, c.s.opts.MaxInFlight, c.s.opts.EventBuffer
	return out, nil
}

// convert converts one engine summary.
func (c *connection) convert(s engine.ServerSummary) McpServerSummary {
	var auth *engine.AuthInfo
	if info, err := c.s.eng.AuthStatus(s.ID); err == nil {
		auth = &info
	}
	var cfg *cue.Server
	if conf := c.s.eng.Config(); conf != nil {
		if srv, ok := conf.Server(s.ID); ok {
			cfg = &srv
		}
	}
	return summaryOf(s, auth, c.s.opts.Auth.state(s.ID), c.s.opts.Auth != nil, cfg, c.remote())
}

// remote is the scrubber of a remote client's answers (see
// remoteScrubber), nil for the owner.
func (c *connection) remote() *redact.Scrubber {
	if !c.s.opts.Remote {
		return nil
	}
	conf := c.s.eng.Config()
	s := c.s
	s.remoteMu.Lock()
	defer s.remoteMu.Unlock()
	if s.remoteCfg != conf || s.remoteSc == nil {
		s.remoteCfg, s.remoteSc = conf, remoteScrubber(conf)
	}
	return s.remoteSc
}

// remoteError scrubs a remote client's error answer.
func (c *connection) remoteError(e *Error) *Error {
	if e == nil || !c.s.opts.Remote {
		return e
	}
	e.Message = remoteText(c.remote(), e.Message)
	e.Data = nil
	return e
}

func (c *connection) listServers(_ context.Context, _ *noParams) (any, *Error) {
	list := c.s.eng.Servers()
	out := make([]McpServerSummary, 0, len(list))
	for _, s := range list {
		out = append(out, c.convert(s))
	}
	return map[string]any{"servers": out}, nil
}

// summary answers a management method: its error, else the server's
// summary after it.
func (c *connection) summary(id string, err error) (any, *Error) {
	if err != nil {
		return nil, serverError(id, err)
	}
	s, err := c.s.eng.Server(id)
	if err != nil {
		return nil, serverError(id, err)
	}
	return c.convert(s), nil
}

// gateway runs one action of the mcp tool's pipeline (policy, audit,
// pins, output bounds) and decodes its answer into out, the answer's
// wire type; an error answer is CodeFailed with the gateway's words.
func (c *connection) gateway(ctx context.Context, in engine.GatewayInput, out any) *Error {
	if _, err := c.s.eng.Server(in.Server); err != nil {
		return serverError(in.Server, err)
	}
	r := c.s.eng.Gateway(ctx, in)
	if m, ok := r.Data.(map[string]any); ok && r.IsError {
		if msg, ok := m["error"].(string); ok {
			return &Error{Code: CodeFailed, Message: msg}
		}
	}
	b, err := json.Marshal(r.Data)
	if err == nil {
		err = json.Unmarshal(b, out)
	}
	if err != nil {
		return errorf(CodeInternalError, "the %s answer did not convert (a bug): %v", in.Action, err)
	}
	return nil
}

func (c *connection) listTools(ctx context.Context, p *serverParams) (any, *Error) {
	if _, err := c.s.eng.Server(p.ID); err != nil {
		return nil, serverError(p.ID, err)
	}
	m, err := c.s.eng.Metadata(p.ID)
	if err != nil {
		return nil, serverError(p.ID, err)
	}
	pins := map[string]engine.PinView{}
	if list, err := c.s.eng.Pins(ctx, p.ID); err == nil {
		for _, v := range list {
			pins[v.Tool] = v
		}
	}
	out := struct {
		ID           string    `json:"id"`
		Tools        []McpTool `json:"tools"`
		MetadataHash string    `json:"metadataHash,omitempty"`
		FetchedAt    string    `json:"fetchedAt,omitempty"`
	}{ID: p.ID, Tools: []McpTool{}}
	if m != nil {
		out.MetadataHash, out.FetchedAt = m.Hash, rfc3339(&m.FetchedAt)
		for _, t := range m.Tools {
			pv := pins[t.Name]
			out.Tools = append(out.Tools, McpTool{Name: t.Name, Title: t.Title, Description: t.Description, Risk: pv.Risk, PinState: pv.State, Hash: t.Hash})
		}
	}
	return out, nil
}

func (c *connection) getTool(ctx context.Context, p *toolParams) (any, *Error) {
	var d struct {
		engine.DescribeResult
	}
	if err := c.gateway(ctx, engine.GatewayInput{Action: "describe", Server: p.ID, Tool: p.Name}, &d); err != nil {
		return nil, err
	}
	r := d.DescribeResult
	return McpToolDetail{ID: p.ID, Name: r.Tool, Title: r.Title, Description: r.Description, Risk: string(r.Risk), RiskReason: r.RiskReason,
		InputSchema: r.InputSchema, OutputSchema: r.OutputSchema, TaskSupport: r.TaskSupport, Annotations: r.Annotations,
		MetadataHash: r.MetadataHash, Warning: r.Warning}, nil
}

func (c *connection) listResources(ctx context.Context, p *pageParams) (any, *Error) {
	var d struct {
		Resources  []engine.Resource         `json:"resources"`
		Templates  []engine.ResourceTemplate `json:"templates"`
		NextCursor string                    `json:"nextCursor"`
	}
	if err := c.gateway(ctx, engine.GatewayInput{Action: "list_resources", Server: p.ID, Cursor: p.Cursor}, &d); err != nil {
		return nil, err
	}
	out := struct {
		ID         string        `json:"id"`
		Resources  []McpResource `json:"resources"`
		Templates  []McpResource `json:"templates"`
		NextCursor string        `json:"nextCursor,omitempty"`
	}{ID: p.ID, Resources: []McpResource{}, Templates: []McpResource{}, NextCursor: d.NextCursor}
	for _, r := range d.Resources {
		out.Resources = append(out.Resources, McpResource{URI: r.URI, Name: r.Name, Title: r.Title, Description: r.Description, MIMEType: r.MIMEType, Size: r.Size})
	}
	for _, t := range d.Templates {
		out.Templates = append(out.Templates, McpResource{URITemplate: t.URITemplate, Name: t.Name, Title: t.Title, Description: t.Description, MIMEType: t.MIMEType})
	}
	return out, nil
}

// shaped is the gateway's answer of a read or a fetch.
type shaped struct {
	Content    string             `json:"content"`
	Truncation *engine.Truncation `json:"truncation"`
	Cache      *engine.CacheRef   `json:"cache"`
}

func (s shaped) wire(id string) McpContent {
	return McpContent{ID: id, Content: s.Content, Truncation: truncationOf(s.Truncation), Cache: cacheOf(s.Cache)}
}

func truncationOf(t *engine.Truncation) *McpTruncation {
	if t == nil {
		return nil
	}
	return &McpTruncation{Truncated: t.Truncated, ReturnedBytes: t.ReturnedBytes, TotalBytes: t.TotalBytes, ReturnedLines: t.ReturnedLines, TotalLines: t.TotalLines}
}

func cacheOf(r *engine.CacheRef) *McpCacheRef {
	if r == nil {
		return nil
	}
	return &McpCacheRef{ID: r.ID, Read: r.Read, Offset: r.Offset}
}

func (c *connection) readResource(ctx context.Context, p *readResourceParams) (any, *Error) {
	var d shaped
	if err := c.gateway(ctx, engine.GatewayInput{Action: "read_resource", Server: p.ID, ResourceURI: p.URI}, &d); err != nil {
		return nil, err
	}
	return d.wire(p.ID), nil
}

func (c *connection) listPrompts(ctx context.Context, p *pageParams) (any, *Error) {
	var d struct {
		Prompts    []engine.Prompt `json:"prompts"`
		NextCursor string          `json:"nextCursor"`
	}
	if err := c.gateway(ctx, engine.GatewayInput{Action: "list_prompts", Server: p.ID, Cursor: p.Cursor}, &d); err != nil {
		return nil, err
	}
	out := struct {
		ID         string      `json:"id"`
		Prompts    []McpPrompt `json:"prompts"`
		NextCursor string      `json:"nextCursor,omitempty"`
	}{ID: p.ID, Prompts: []McpPrompt{}, NextCursor: d.NextCursor}
	for _, pr := range d.Prompts {
		w := McpPrompt{Name: pr.Name, Title: pr.Title, Description: pr.Description}
		for _, a := range pr.Arguments {
			w.Arguments = append(w.Arguments, McpPromptArgument{Name: a.Name, Description: a.Description, Required: a.Required})
		}
		out.Prompts = append(out.Prompts, w)
	}
	return out, nil
}

func (c *connection) getPrompt(ctx context.Context, p *promptParams) (any, *Error) {
	var d shaped
	if err := c.gateway(ctx, engine.GatewayInput{Action: "get_prompt", Server: p.ID, Prompt: p.Name, Arguments: p.Arguments}, &d); err != nil {
		return nil, err
	}
	return d.wire(p.ID), nil
}

func (c *connection) callTool(ctx context.Context, p *callParams) (any, *Error) {
	var d engine.CallResult
	if err := c.gateway(ctx, engine.GatewayInput{Action: "call", Server: p.ID, Tool: p.Tool, Arguments: p.Arguments}, &d); err != nil {
		return nil, err
	}
	return McpCallResult{ID: p.ID, Tool: d.Tool, Status: d.Status, Risk: string(d.Risk), Content: d.Content, Structured: d.Structured,
		Truncation: truncationOf(d.Truncation), Cache: cacheOf(d.Cache), Notes: d.Notes}, nil
}

func (c *connection) listPins(ctx context.Context, p *serverParams) (any, *Error) {
	list, err := c.s.eng.Pins(ctx, p.ID)
	if err != nil {
		return nil, serverError(p.ID, err)
	}
	out := struct {
		ID          string   `json:"id"`
		Quarantined bool     `json:"quarantined"`
		Pins        []McpPin `json:"pins"`
	}{ID: p.ID, Pins: []McpPin{}}
	for _, v := range list {
		out.Quarantined = out.Quarantined || v.Quarantined
		w := McpPin{Tool: v.Tool, State: v.State, Risk: v.Risk, Hash: v.Hash, PinnedAt: rfc3339(&v.PinnedAt)}
		if pc := v.Pending; pc != nil {
			w.Pending = &McpPendingChange{Severity: pc.Severity, Held: pc.Held, Details: pc.Details, Hash: pc.Hash, SeenAt: rfc3339(&pc.SeenAt), Diff: pc.Diff}
		}
		out.Pins = append(out.Pins, w)
	}
	sort.Slice(out.Pins, func(i, j int) bool { return out.Pins[i].Tool < out.Pins[j].Tool })
	return out, nil
}

func (c *connection) logout(ctx context.Context, p *serverParams) (any, *Error) {
	r, err := c.s.eng.Logout(ctx, p.ID)
	if err != nil {
		return nil, serverError(p.ID, err)
	}
	return struct {
		ID          string `json:"id"`
		Removed     bool   `json:"removed"`
		Revoked     bool   `json:"revoked"`
		RevokeError string `json:"revokeError,omitempty"`
	}{p.ID, r.Removed, r.Revoked, r.RevokeError}, nil
}

// needAuth is the auth methods' check: a broker, and a server that uses
// OAuth.
func (c *connection) needAuth(id string) *Error {
	if c.s.opts.Auth == nil {
		return errorf(CodeNotAvailable, "authorization is not available: this server was started without an authorization broker (rpc.Options.Auth)")
	}
	if _, err := c.s.eng.AuthStatus(id); err != nil {
		return serverError(id, err)
	}
	return nil
}

func (c *connection) startAuth(ctx context.Context, p *serverParams) (any, *Error) {
	if err := c.needAuth(p.ID); err != nil {
		return nil, err
	}
	v, err := c.s.opts.Auth.start(ctx, c.s.eng, p.ID, c.s.opts.Remote)
	if err != nil {
		return nil, err
	}
	return c.authView(v), nil
}

// authView is a flow's view as the connection's client may see it: a
// remote client's error text scrubbed.
func (c *connection) authView(v McpAuthFlow) McpAuthFlow {
	if sc := c.remote(); sc != nil {
		v.Error = remoteText(sc, v.Error)
	}
	return v
}

func (c *connection) pollAuth(_ context.Context, p *serverParams) (any, *Error) {
	if err := c.needAuth(p.ID); err != nil {
		return nil, err
	}
	if f := c.s.opts.Auth.flow(p.ID); f != nil {
		return c.authView(c.s.opts.Auth.view(f)), nil
	}
	info, _ := c.s.eng.AuthStatus(p.ID)
	state := "required"
	if info.State == engine.AuthAuthenticated || info.State == engine.AuthExpired {
		state = flowAuthenticated
	}
	return McpAuthFlow{ID: p.ID, State: state}, nil
}

func (c *connection) cancelAuth(_ context.Context, p *serverParams) (any, *Error) {
	if err := c.needAuth(p.ID); err != nil {
		return nil, err
	}
	v, ok := c.s.opts.Auth.cancelFlow(p.ID)
	if !ok {
		return nil, errorf(CodeFailed, "no authorization of server %s was started", p.ID)
	}
	return c.authView(v), nil
}

func (c *connection) completeAuth(ctx context.Context, p *completeAuthParams) (any, *Error) {
	if err := c.needAuth(p.ID); err != nil {
		return nil, err
	}
	v, err := c.s.opts.Auth.complete(ctx, p.ID, p.CallbackURL)
	if err != nil {
		return nil, err
	}
	return v, nil
}

// recentCalls lists the recent calls of one server, or of every server
// when no id is given, newest first.
func (c *connection) recentCalls(_ context.Context, p *recentParams) (any, *Error) {
	ids := []string{p.ID}
	if p.ID == "" {
		ids = ids[:0]
		for _, s := range c.s.eng.Servers() {
			ids = append(ids, s.ID)
		}
	}
	var all []engine.RecentCall
	for _, id := range ids {
		list, err := c.s.eng.RecentCalls(id)
		if err != nil {
			return nil, serverError(id, err)
		}
		all = append(all, list...)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Timestamp.After(all[j].Timestamp) })
	return map[string]any{"calls": recentCallsOf(all)}, nil
}

// subscribe starts, or restarts, the connection's event subscription.
func (c *connection) subscribe(_ context.Context, p *subscribeParams) (any, *Error) {
	var since uint64
	if p.SinceSeq != nil {
		since = *p.SinceSeq
	}
	c.unsubscribe()
	ch, stop := c.s.eng.SubscribeSince(since, c.s.opts.EventBuffer)
	remote := c.s.opts.Remote
	c.mu.Lock()
	c.stopEvent = stop
	c.mu.Unlock()
	// The events go out after the answer: the subscription's goroutine
	// starts once the answer is queued (see dispatch).
	start := func() {
		c.subs.Add(1)
		go func() {
			defer c.subs.Done()
			for ev := range ch {
				var sc *redact.Scrubber
				if remote {
					sc = c.remote()
				}
				if !c.notify("mcp_event", eventOf(ev, sc)) {
					stop()
					return
				}
			}
		}()
	}
	return subscription{Subscribed: true, Schema: EventSchema, start: start}, nil
}

// subscription is subscribe_mcp_events' answer; start starts the
// delivery of the events, once the answer is queued.
type subscription struct {
	Subscribed bool   `json:"subscribed"`
	Schema     string `json:"schema"`
	start      func()
}

// unsubscribe ends the connection's subscription; false when there was
// none.
func (c *connection) unsubscribe() bool {
	c.mu.Lock()
	stop := c.stopEvent
	c.stopEvent = nil
	c.mu.Unlock()
	if stop == nil {
		return false
	}
	stop()
	return true
}
