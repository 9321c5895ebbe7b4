package rpc

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/engine"
	"github.com/voltmcp/voltmcp/redact"
)

// The wire types: what the methods answer, in the spec's names and
// spellings (docs/rpc.md, docs/rpc.schema.json). They are converted from
// the engine's types here, so that the engine's vocabulary can grow
// without changing the wire. voltmcp's own fields are added after the
// spec's, never in place of one.

// McpServerSummary is the spec's McpServerSummary, and voltmcp's added
// fields.
type McpServerSummary struct {
	ID          string `json:"id"`
	DisplayName string `json:"displayName"`
	// SourceScope is "user", "project" or "temporary".
	SourceScope     string `json:"sourceScope"`
	SourceLabel     string `json:"sourceLabel"`
	Enabled         bool   `json:"enabled"`
	ActiveInSession bool   `json:"activeInSession"`
	// Transport is "stdio", "streamable_http" or "sse".
	Transport string `json:"transport"`
	// Lifecycle is "lazy", "eager" or "keep_alive".
	Lifecycle string `json:"lifecycle"`
	// Status is one of the spec's: disabled, untrusted, cold,
	// connecting, connected, ready, needs_auth, error, disconnected.
	// EngineStatus is the engine's finer one.
	Status string `json:"status"`
	// AuthState is "none", "required", "pending", "authenticated" or
	// "failed".
	AuthState     string                 `json:"authState"`
	ToolCounts    McpToolCounts          `json:"toolCounts"`
	ResourceCount int                    `json:"resourceCount"`
	PromptCount   int                    `json:"promptCount"`
	RecentCalls   []McpRecentCallSummary `json:"recentCalls"`
	// LastError is the last failure, scrubbed of secrets.
	LastError string `json:"lastError,omitempty"`
	// LastConnectedAt is RFC 3339, UTC.
	LastConnectedAt string          `json:"lastConnectedAt,omitempty"`
	Capabilities    McpCapabilities `json:"capabilities"`

	// EngineStatus is the engine's status, which tells apart what the
	// spec's folds together: discovering (spec: connected),
	// authenticating (needs_auth), disconnecting (connected).
	EngineStatus string `json:"engineStatus"`
	// TransportAuto says the server named no transport: Streamable HTTP
	// is tried, then SSE.
	TransportAuto bool `json:"transportAuto,omitempty"`
	// Reason says why a server that does not run does not, and Fix what
	// the user can do about it.
	Reason string `json:"reason,omitempty"`
	Fix    string `json:"fix,omitempty"`
	// MetadataFetchedAt is when the cached listing was made (RFC 3339);
	// MetadataStale says it is older than metadataRefreshMs.
	MetadataFetchedAt string `json:"metadataFetchedAt,omitempty"`
	MetadataStale     bool   `json:"metadataStale,omitempty"`
	// PendingChanges counts the tools whose change since they were
	// pinned waits for approval; Quarantined is a server held for
	// approval; PinError says why its pins cannot be used.
	PendingChanges int    `json:"pendingChanges,omitempty"`
	Quarantined    bool   `json:"quarantined,omitempty"`
	PinError       string `json:"pinError,omitempty"`
	// Log is the server's log file ("~" for the home directory).
	Log string `json:"log,omitempty"`
	// Command is a stdio server's program, without its arguments (and
	// never its environment). URL is an HTTP server's URL: for the owner
	// as configured with its credentials hidden (a password, secret
	// query parameters: redact.URL), for a remote client by its origin
	// (scheme://host:port).
	Command string `json:"command,omitempty"`
	URL     string `json:"url,omitempty"`
}

// McpToolCounts counts a server's tools: Cached in the cached listing,
// Live in the live session when there is one, Enabled those an agent can
// find and call (exposed by the tool policy, of a server neither disabled
// nor untrusted), when there is a cached listing.
type McpToolCounts struct {
	Cached  int  `json:"cached"`
	Live    *int `json:"live,omitempty"`
	Enabled *int `json:"enabled,omitempty"`
}

// McpCapabilities says which management actions apply to a server now.
type McpCapabilities struct {
	CanEnable         bool `json:"canEnable"`
	CanConnect        bool `json:"canConnect"`
	CanDisconnect     bool `json:"canDisconnect"`
	CanRefresh        bool `json:"canRefresh"`
	CanAuthenticate   bool `json:"canAuthenticate"`
	CanPersistChanges bool `json:"canPersistChanges"`
}

// McpRecentCallSummary is the spec's McpRecentCallSummary.
type McpRecentCallSummary struct {
	ID        string `json:"id"`
	Timestamp string `json:"timestamp"`
	Server    string `json:"server"`
	Tool      string `json:"tool"`
	// Risk is "read", "write", "destructive" or "unknown".
	Risk string `json:"risk"`
	// Status is "started", "completed", "failed" or "cancelled".
	Status string `json:"status"`
	// DurationMs, OutputBytes and Truncated are set once the call ended.
	DurationMs  *int64 `json:"durationMs,omitempty"`
	OutputBytes *int64 `json:"outputBytes,omitempty"`
	Truncated   *bool  `json:"truncated,omitempty"`

	// Outcome is voltmcp's audit status when Status does not say it:
	// denied, invalid or error. Reason says why a call that did not
	// complete ended as it did, scrubbed as its audit record is.
	Outcome string `json:"outcome,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// recentCallOf converts one recent call.
func recentCallOf(c engine.RecentCall) McpRecentCallSummary {
	out := McpRecentCallSummary{ID: c.ID, Timestamp: c.Timestamp.UTC().Format(time.RFC3339Nano), Server: c.Server, Tool: c.Tool,
		Risk: string(c.Risk), Status: c.Status, Outcome: c.Outcome, Reason: c.Reason}
	if out.Risk == "" {
		out.Risk = string(engine.RiskUnknown)
	}
	if c.Status != "started" {
		d, n, tr := c.DurationMs, c.OutputBytes, c.Truncated
		out.DurationMs, out.OutputBytes, out.Truncated = &d, &n, &tr
	}
	return out
}

func recentCallsOf(list []engine.RecentCall) []McpRecentCallSummary {
	out := make([]McpRecentCallSummary, 0, len(list))
	for _, c := range list {
		out = append(out, recentCallOf(c))
	}
	return out
}

// spellTransport is a transport in the spec's spelling.
func spellTransport(t string) string {
	switch t {
	case "streamable-http", "auto", "http":
		return "streamable_http"
	}
	return t
}

// spellLifecycle is a lifecycle in the spec's spelling.
func spellLifecycle(l string) string { return strings.ReplaceAll(l, "-", "_") }

// spellStatus is an engine status in the spec's vocabulary.
func spellStatus(s engine.Status) string {
	switch s {
	case engine.StatusDiscovering, engine.StatusDisconnecting:
		return "connected"
	case engine.StatusAuthenticating:
		return "needs_auth"
	case "":
		return ""
	}
	return string(s)
}

func rfc3339(t *time.Time) string {
	if t == nil || t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// summaryOf converts the engine's summary. auth is the server's stored
// authorization (nil when it does not use OAuth); flow is the state of
// an authorization this server runs for it ("" when none); canAuth says
// this server can run one. cfg is the server's definition, when it has
// one in the config. remote, when not nil, is the scrubber of a remote
// client's answer: the URL is then shown by its origin, and the texts
// are scrubbed (see remoteScrubber).
func summaryOf(s engine.ServerSummary, auth *engine.AuthInfo, flow string, canAuth bool, cfg *cue.Server, remote *redact.Scrubber) McpServerSummary {
	active := s.Status == engine.StatusReady || s.Status == engine.StatusConnected || s.Status == engine.StatusDiscovering
	out := McpServerSummary{
		ID: s.ID, DisplayName: s.DisplayName, SourceScope: s.SourceScope, SourceLabel: s.SourceLabel,
		Enabled: s.Enabled, ActiveInSession: active, Transport: spellTransport(s.Transport),
		Lifecycle: spellLifecycle(s.Lifecycle), Status: spellStatus(s.Status), AuthState: authStateOf(s, auth, flow),
		ToolCounts: McpToolCounts{Cached: s.ToolCounts.Cached, Enabled: s.ToolCounts.Enabled}, ResourceCount: s.Resources, PromptCount: s.Prompts,
		RecentCalls: recentCallsOf(s.RecentCalls), LastError: s.LastError, LastConnectedAt: rfc3339(s.LastConnectedAt),
		Capabilities: McpCapabilities{CanEnable: s.Capabilities.CanEnable, CanConnect: s.Capabilities.CanConnect,
			CanDisconnect: s.Capabilities.CanDisconnect, CanRefresh: s.Capabilities.CanRefresh,
			CanAuthenticate:   canAuth && auth != nil && s.Capabilities.CanRefresh,
			CanPersistChanges: s.Capabilities.CanPersistChanges},
		EngineStatus: string(s.Status), TransportAuto: s.Transport == "auto", Reason: s.Reason, Fix: s.Fix,
		MetadataFetchedAt: rfc3339(s.MetadataFetchedAt), MetadataStale: s.MetadataStale,
		PendingChanges: s.PendingChanges, Quarantined: s.Quarantined, PinError: s.PinError, Log: s.Log,
	}
	if active {
		// The live session lists what the cache holds: a listing is
		// cached as it is made.
		n := s.ToolCounts.Cached
		out.ToolCounts.Live = &n
	}
	if cfg != nil {
		out.Command, out.URL = cfg.Command, redact.URL(cfg.URL)
	}
	if remote != nil {
		out.URL = originOf(out.URL)
		for _, t := range []*string{&out.LastError, &out.Reason, &out.Fix, &out.PinError, &out.SourceLabel} {
			*t = remoteText(remote, *t)
		}
		for i := range out.RecentCalls {
			out.RecentCalls[i].Reason = remoteText(remote, out.RecentCalls[i].Reason)
		}
	}
	return out
}

// authStateOf is the spec's authState of a server.
func authStateOf(s engine.ServerSummary, auth *engine.AuthInfo, flow string) string {
	switch flow {
	case flowPending:
		return "pending"
	case flowFailed:
		return "failed"
	}
	if s.Status == engine.StatusAuthenticating {
		return "pending"
	}
	if auth == nil {
		if s.Status == engine.StatusNeedsAuth {
			return "required"
		}
		return "none"
	}
	switch auth.State {
	case engine.AuthAuthenticated, engine.AuthExpired:
		return "authenticated"
	}
	return "required"
}

// McpTool is one tool of a server's cached listing, with its pin.
type McpTool struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// Risk is the risk recorded when the tool was pinned: "read",
	// "write", "destructive" or "unknown" ("" before it is pinned).
	Risk string `json:"risk,omitempty"`
	// PinState is "pinned", "changed" or "missing" ("" before it is
	// pinned).
	PinState string `json:"pinState,omitempty"`
	Hash     string `json:"hash"`
}

// McpToolDetail is one tool as describe shows it, bounded.
type McpToolDetail struct {
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	Risk         string          `json:"risk"`
	RiskReason   string          `json:"riskReason,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	TaskSupport  string          `json:"taskSupport,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
	MetadataHash string          `json:"metadataHash"`
	Warning      string          `json:"warning,omitempty"`
}

// McpResource is one resource, or resource template, of a server.
type McpResource struct {
	URI         string `json:"uri,omitempty"`
	URITemplate string `json:"uriTemplate,omitempty"`
	Name        string `json:"name,omitempty"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MIMEType    string `json:"mimeType,omitempty"`
	Size        int64  `json:"size,omitempty"`
}

// McpPrompt is one prompt of a server.
type McpPrompt struct {
	Name        string              `json:"name"`
	Title       string              `json:"title,omitempty"`
	Description string              `json:"description,omitempty"`
	Arguments   []McpPromptArgument `json:"arguments,omitempty"`
}

// McpPromptArgument is one argument of a prompt.
type McpPromptArgument struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

// McpTruncation says how much of an output was shown.
type McpTruncation struct {
	Truncated     bool `json:"truncated"`
	ReturnedBytes int  `json:"returnedBytes"`
	TotalBytes    int  `json:"totalBytes"`
	ReturnedLines int  `json:"returnedLines"`
	TotalLines    int  `json:"totalLines"`
}

// McpCacheRef points at a full output the gateway kept.
type McpCacheRef struct {
	ID     string `json:"id"`
	Read   string `json:"read"`
	Offset int64  `json:"offset,omitempty"`
}

// McpContent is a resource's, a prompt's or a call's content as the
// gateway shaped it: cleaned, bounded, with what was cut.
type McpContent struct {
	ID         string         `json:"id"`
	Content    string         `json:"content"`
	Truncation *McpTruncation `json:"truncation,omitempty"`
	Cache      *McpCacheRef   `json:"cache,omitempty"`
}

// McpCallResult is call_mcp_tool's answer.
type McpCallResult struct {
	ID   string `json:"id"`
	Tool string `json:"tool"`
	// Status is "completed", or "failed" for a tool-level error.
	Status     string         `json:"status"`
	Risk       string         `json:"risk"`
	Content    string         `json:"content"`
	Structured any            `json:"structuredContent,omitempty"`
	Truncation *McpTruncation `json:"truncation,omitempty"`
	Cache      *McpCacheRef   `json:"cache,omitempty"`
	Notes      []string       `json:"notes,omitempty"`
}

// McpPin is one pinned tool, with its change waiting for approval.
type McpPin struct {
	Tool string `json:"tool"`
	// State is "pinned", "changed" or "missing".
	State    string            `json:"state"`
	Risk     string            `json:"risk,omitempty"`
	Hash     string            `json:"hash"`
	PinnedAt string            `json:"pinnedAt"`
	Pending  *McpPendingChange `json:"pending,omitempty"`
}

// McpPendingChange is a tool's change since it was pinned.
type McpPendingChange struct {
	Severity string   `json:"severity"`
	Held     bool     `json:"held"`
	Details  []string `json:"details,omitempty"`
	Hash     string   `json:"hash"`
	SeenAt   string   `json:"seenAt"`
	Diff     string   `json:"diff"`
}

// McpAuthFlow is the state of an authorization started by
// start_mcp_server_auth.
type McpAuthFlow struct {
	ID string `json:"id"`
	// Flow is "device" or "browser".
	Flow string `json:"flow,omitempty"`
	// State is "pending" (waiting for the user), "authenticated",
	// "failed" (Error says why) or "cancelled"; poll_mcp_server_auth of a
	// server no flow was started for answers "authenticated" or
	// "required", from the stored token.
	State string `json:"state"`
	// VerificationURI and UserCode are the device flow's: the page where
	// the user enters the code.
	VerificationURI         string `json:"verificationUri,omitempty"`
	VerificationURIComplete string `json:"verificationUriComplete,omitempty"`
	UserCode                string `json:"userCode,omitempty"`
	// AuthorizationURL is the browser flow's page; the browser comes back
	// to its redirect_uri, whose full URL complete_mcp_server_auth takes.
	AuthorizationURL string `json:"authorizationUrl,omitempty"`
	ExpiresAt        string `json:"expiresAt,omitempty"`
	Error            string `json:"error,omitempty"`
}

// McpEvent is one event, the params of an mcp_event notification.
type McpEvent struct {
	Schema string `json:"schema"`
	Seq    uint64 `json:"seq"`
	Type   string `json:"type"`
	At     string `json:"at"`
	Server string `json:"server,omitempty"`
	// Status and Previous are in the spec's vocabulary, as in
	// McpServerSummary; EngineStatus is the engine's.
	Status       string `json:"status,omitempty"`
	Previous     string `json:"previous,omitempty"`
	EngineStatus string `json:"engineStatus,omitempty"`
	Error        string `json:"error,omitempty"`
	CallID       string `json:"callId,omitempty"`
	Tool         string `json:"tool,omitempty"`
	// Risk is the called tool's risk; CallStatus the spec's end status
	// (completed, failed, cancelled) and Outcome voltmcp's audit status
	// when it says more (denied, invalid, error).
	Risk       string  `json:"risk,omitempty"`
	CallStatus string  `json:"callStatus,omitempty"`
	Outcome    string  `json:"outcome,omitempty"`
	DurationMs int64   `json:"durationMs,omitempty"`
	Progress   float64 `json:"progress,omitempty"`
	Total      float64 `json:"total,omitempty"`
	Message    string  `json:"message,omitempty"`
	AuthStatus string  `json:"authStatus,omitempty"`
	// Missed is set on a gap event: how many events were lost; its Seq is
	// the last one lost.
	Missed uint64 `json:"missed,omitempty"`
	// Added, Removed and Changed are set on mcp_config_reloaded: the ids
	// of the servers the change added, removed and changed.
	Added   []string `json:"added,omitempty"`
	Removed []string `json:"removed,omitempty"`
	Changed []string `json:"changed,omitempty"`
}

// EventSchema names the event format.
const EventSchema = "mcp_events.v1"

// eventOf converts one event; remote, when not nil, scrubs its texts for
// a remote client, as summaryOf does.
func eventOf(ev engine.Event, remote *redact.Scrubber) McpEvent {
	out := McpEvent{Schema: EventSchema, Seq: ev.Seq, Missed: ev.Missed, Risk: string(ev.Risk), Outcome: ev.Outcome,
		Type: string(ev.Type), At: ev.Time.UTC().Format(time.RFC3339Nano),
		Server: ev.Server, Status: spellStatus(ev.Status), Previous: spellStatus(ev.Previous), EngineStatus: string(ev.Status),
		Error: ev.Error, CallID: ev.CallID, Tool: ev.Tool, CallStatus: ev.CallStatus, DurationMs: ev.DurationMs,
		Progress: ev.Progress, Total: ev.Total, Message: ev.Message, AuthStatus: ev.AuthStatus,
		Added: ev.Added, Removed: ev.Removed, Changed: ev.Changed}
	if remote != nil {
		out.Error, out.Message = remoteText(remote, out.Error), remoteText(remote, out.Message)
	}
	return out
}
