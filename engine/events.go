package engine

import (
	"time"

	"github.com/voltmcp/voltmcp/engine/internal/fanout"
)

// EventType names an engine event. The names are part of the wire
// protocol of every surface (RPC, daemon, TUI).
type EventType string

// The event types.
const (
	EventServersChanged      EventType = "mcp_servers_changed"
	EventServerStatusChanged EventType = "mcp_server_status_changed"
	EventAuthRequest         EventType = "mcp_auth_request"
	EventAuthUpdate          EventType = "mcp_auth_update"
	EventCallStart           EventType = "mcp_call_start"
	EventCallUpdate          EventType = "mcp_call_update"
	EventCallEnd             EventType = "mcp_call_end"
	// EventPluginFault reports a plugin that trapped, ran out of time or
	// memory, answered garbage, or did not load; Error names the module.
	EventPluginFault EventType = "mcp_plugin_fault"
	// EventAuditError reports that the audit log cannot be written, once
	// when it starts failing (Error says why), not per record.
	EventAuditError EventType = "mcp_audit_error"
	// EventAuditResumed reports that the audit log is written again; an
	// audit_gap record in the log says how many records were lost.
	EventAuditResumed EventType = "mcp_audit_resumed"
	// EventConfigReloaded reports a config change applied (a file
	// watched by [Engine.Watch] changed, or [Engine.Reload] ran): Added,
	// Removed and Changed name the servers, Message notes a layer file
	// that is gone or a project that lost its trust.
	EventConfigReloaded EventType = "mcp_config_reloaded"
	// EventConfigInvalid reports a config change that was not applied
	// because it does not validate; the last good config keeps running,
	// and Error names each problem's file:line:col and field.
	EventConfigInvalid EventType = "mcp_config_invalid"
)

// Event is one thing that happened in the engine. Fields that do not
// apply to its Type are empty. Events never carry secrets: Error is
// scrubbed of resolved environment values before it is set.
type Event struct {
	Type   EventType `json:"type"`
	Time   time.Time `json:"time"`
	Server string    `json:"server,omitempty"`
	// Status and Previous are set on mcp_server_status_changed.
	Status   Status `json:"status,omitempty"`
	Previous Status `json:"previous,omitempty"`
	// Error is the server's last error, when the new status is error.
	Error string `json:"error,omitempty"`
	// CallID, Tool, DurationMs and CallStatus are set on call events.
	CallID     string `json:"callId,omitempty"`
	Tool       string `json:"tool,omitempty"`
	CallStatus string `json:"callStatus,omitempty"`
	DurationMs int64  `json:"durationMs,omitempty"`
	// Progress, Total and Message are a server's progress report, on
	// mcp_call_update; Message is bounded and scrubbed. A call asks for
	// progress only if the engine had a subscriber when it started.
	Progress float64 `json:"progress,omitempty"`
	Total    float64 `json:"total,omitempty"`
	Message  string  `json:"message,omitempty"`
	// AuthStatus is set on mcp_auth_update: "authorized" (a token was
	// obtained), "failed" (Error says why) or "required" (no user could
	// be asked: the engine has no Options.Authorize, or DeviceAuthorize in
	// the device flow, or its Options.CanAuthorize said why not).
	// mcp_auth_request, which
	// comes first, says a server asked for authorization. Neither carries
	// a URL, code or token.
	AuthStatus string `json:"authStatus,omitempty"`
	// Added, Removed and Changed are set on mcp_config_reloaded: the ids
	// of the servers the change added, removed (and stopped), and
	// changed (and restarted), each sorted.
	Added   []string `json:"added,omitempty"`
	Removed []string `json:"removed,omitempty"`
	Changed []string `json:"changed,omitempty"`
}

// bus fans events out to subscribers (see [fanout.Bus]). A subscriber
// that does not keep up loses events rather than slowing the engine.
type bus struct{ b fanout.Bus[Event] }

// publish stamps ev with the time, unless it has one, and hands it to
// the subscribers. Publishing to no one (serve's calls, mostly) reads
// no clock.
func (b *bus) publish(ev Event) {
	if !b.b.Listening() {
		return
	}
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	b.b.Publish(ev)
}

// listening reports whether anyone subscribes.
func (b *bus) listening() bool { return b.b.Listening() }

// subscribe subscribes (see [fanout.Bus.Subscribe]).
func (b *bus) subscribe(buffer int) (<-chan Event, func()) { return b.b.Subscribe(buffer) }

// closeAll ends every subscription, when the engine closes.
func (b *bus) closeAll() { b.b.CloseAll() }
