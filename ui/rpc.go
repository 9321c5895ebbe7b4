package ui

import (
	"context"
	"encoding/json"
)

// Client is the UI's connection to a voltmcp management RPC: Call sends
// one method with its params (any JSON value) and decodes the answer into
// result (when not nil); Done is closed when the connection ended, and
// Err then says why. daemon.Client is one.
type Client interface {
	Call(ctx context.Context, method string, params, result any) error
	Done() <-chan struct{}
	Err() error
}

// eventQueue bounds the events [Events] holds for the UI.
const eventQueue = 1024

// Events is the inbox of the mcp_event notifications of a connection:
// its [Events.Notify] is the notification function given to the client.
// Notify never blocks the client's reader: when the UI falls
// eventQueue events behind, the rest are dropped and the UI reads the
// whole list again, as it does on a gap event.
type Events struct {
	ch     chan Event
	resync chan struct{}
}

// NewEvents returns an empty inbox.
func NewEvents() *Events {
	return &Events{ch: make(chan Event, eventQueue), resync: make(chan struct{}, 1)}
}

// Notify takes one notification: an mcp_event goes to the inbox, any
// other method is ignored. An event that does not decode asks for a
// resync, as a lost one does.
func (e *Events) Notify(method string, params json.RawMessage) {
	if method != "mcp_event" {
		return
	}
	var ev Event
	if err := json.Unmarshal(params, &ev); err != nil {
		e.lost()
		return
	}
	select {
	case e.ch <- ev:
	default:
		e.lost()
	}
}

func (e *Events) lost() {
	select {
	case e.resync <- struct{}{}:
	default:
	}
}

// The methods the UI calls (docs/rpc.md).
const (
	mListServers   = "list_mcp_servers"
	mGetServer     = "get_mcp_server"
	mSetEnabled    = "set_mcp_server_enabled"
	mConnect       = "connect_mcp_server"
	mDisconnect    = "disconnect_mcp_server"
	mRefresh       = "refresh_mcp_server"
	mListTools     = "list_mcp_tools"
	mGetTool       = "get_mcp_tool"
	mServerLog     = "read_mcp_server_log"
	mSubscribe     = "subscribe_mcp_events"
	mGateway       = "gateway"
	eventServers   = "mcp_servers_changed"
	eventReloaded  = "mcp_config_reloaded"
	eventInvalid   = "mcp_config_invalid"
	eventGap       = "gap"
	eventAuditErr  = "mcp_audit_error"
	eventAuditBack = "mcp_audit_resumed"
)

// ServerSummary is the wire's McpServerSummary: the fields the UI shows.
type ServerSummary struct {
	ID              string             `json:"id"`
	DisplayName     string             `json:"displayName"`
	SourceScope     string             `json:"sourceScope"`
	SourceLabel     string             `json:"sourceLabel"`
	Enabled         bool               `json:"enabled"`
	ActiveInSession bool               `json:"activeInSession"`
	Transport       string             `json:"transport"`
	Lifecycle       string             `json:"lifecycle"`
	Status          string             `json:"status"`
	AuthState       string             `json:"authState"`
	ToolCounts      ToolCounts         `json:"toolCounts"`
	ResourceCount   int                `json:"resourceCount"`
	PromptCount     int                `json:"promptCount"`
	RecentCalls     []RecentCall       `json:"recentCalls"`
	LastError       string             `json:"lastError,omitempty"`
	LastConnectedAt string             `json:"lastConnectedAt,omitempty"`
	Capabilities    ServerCapabilities `json:"capabilities"`
	EngineStatus    string             `json:"engineStatus"`
	Reason          string             `json:"reason,omitempty"`
	Fix             string             `json:"fix,omitempty"`
	PendingChanges  int                `json:"pendingChanges,omitempty"`
	Quarantined     bool               `json:"quarantined,omitempty"`
}

// ToolCounts is the wire's McpToolCounts; Live is there while the server
// is connected, Enabled when the gateway counts the tools it exposes.
type ToolCounts struct {
	Cached  int  `json:"cached"`
	Live    *int `json:"live,omitempty"`
	Enabled *int `json:"enabled,omitempty"`
}

// ServerCapabilities is the wire's McpCapabilities: the actions that
// apply to a server now.
type ServerCapabilities struct {
	CanEnable       bool `json:"canEnable"`
	CanConnect      bool `json:"canConnect"`
	CanDisconnect   bool `json:"canDisconnect"`
	CanRefresh      bool `json:"canRefresh"`
	CanAuthenticate bool `json:"canAuthenticate"`
}

// RecentCall is the wire's McpRecentCallSummary.
type RecentCall struct {
	ID         string `json:"id"`
	Timestamp  string `json:"timestamp"`
	Tool       string `json:"tool"`
	Risk       string `json:"risk"`
	Status     string `json:"status"`
	DurationMs *int64 `json:"durationMs,omitempty"`
}

// Tool is the wire's McpTool: one tool of a server's cached listing.
type Tool struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Risk        string `json:"risk,omitempty"`
	PinState    string `json:"pinState,omitempty"`
}

// ToolDetail is the wire's McpToolDetail: a tool as describe shows it,
// its schemas bounded by the gateway.
type ToolDetail struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	Risk         string          `json:"risk"`
	RiskReason   string          `json:"riskReason,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	TaskSupport  string          `json:"taskSupport,omitempty"`
	Warning      string          `json:"warning,omitempty"`
}

// Event is the wire's McpEvent: the fields the UI acts on.
type Event struct {
	Seq    uint64 `json:"seq"`
	Type   string `json:"type"`
	Server string `json:"server,omitempty"`
	Error  string `json:"error,omitempty"`
}

// serverList is list_mcp_servers' answer.
type serverList struct {
	Servers []ServerSummary `json:"servers"`
}

// toolList is list_mcp_tools' answer.
type toolList struct {
	Tools []Tool `json:"tools"`
}

// gatewayStatus is the part of the gateway's status action the header
// shows: whether MCP is on, and the notes on what did not load.
type gatewayStatus struct {
	StructuredContent struct {
		Enabled *bool    `json:"enabled"`
		Notes   []string `json:"notes"`
	} `json:"structuredContent"`
}
