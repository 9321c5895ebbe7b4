package engine

import (
	"time"

	"github.com/voltmcp/voltmcp/engine/internal/fanout"
)

// EventType names an engine event. The names are part of the wire
// protocol of every surface (RPC, daemon, TUI). docs/events.md lists
// every type with its fields.
type EventType string

// The spec's seven event types (the mcp_events.v1 stream of the behaviour
// spec).
const (
	// EventServersChanged reports that the set of servers or what is
	// known of one changed: a reload (SetEnabled is one), a discovery that
	// listed a server's metadata (Server names it), an approval.
	EventServersChanged EventType = "mcp_servers_changed"
	// EventServerStatusChanged reports each transition of a server's
	// status: Status, Previous, and Error when the new status is error.
	// A reload that replaces a server's definition is one transition,
	// from the old definition's status to the new one's first; a server
	// the reload adds has no Previous.
	EventServerStatusChanged EventType = "mcp_server_status_changed"
	EventAuthRequest         EventType = "mcp_auth_request"
	EventAuthUpdate          EventType = "mcp_auth_update"
	// EventCallStart, EventCallUpdate and EventCallEnd follow one tool
	// call through the gateway, by its CallID: the start when the call
	// is sent (or, for a call refused before, just before its end), the
	// server's progress, and the end with CallStatus (the spec's
	// completed, failed or cancelled), Outcome (voltmcp's audit status,
	// when it says more: denied, invalid, error) and DurationMs. The
	// CallID is the id of the call in [Engine.RecentCalls] and in its
	// audit record.
	EventCallStart  EventType = "mcp_call_start"
	EventCallUpdate EventType = "mcp_call_update"
	EventCallEnd    EventType = "mcp_call_end"
)

// The event types voltmcp adds to the spec's (EventPinsChanged and
// EventMetadataBounded are declared with the pins and the bounds).
const (
	// EventGap tells a subscriber that it lost events: it fell behind
	// (its buffer was full) or asked, with [Engine.SubscribeSince], for
	// events the replay ring no longer holds. Missed counts them and Seq
	// is the seq of the last one lost; the next event the subscriber gets
	// has seq Seq+1. A subscriber that keeps state from events should
	// read that state again (Servers, RecentCalls). A gap is not an event
	// of the sequence: it is not replayed.
	EventGap EventType = "gap"
	// EventPluginFault reports a plugin that trapped, ran out of time or
	// memory, answered garbage, or did not load; Error names the module.
	EventPluginFault EventType = "mcp_plugin_fault"
	// EventAuditError reports that the audit log cannot be written, once
	// when it starts failing (Error says why), not per record.
	EventAuditError EventType = "mcp_audit_error"
	// EventAuditResumed reports that the audit log is written again; an
	// audit_gap record in the log says how many records were lost.
	EventAuditResumed EventType = "mcp_audit_resumed"
	// EventConfigReloaded reports that a changed config was loaded and
	// applied (live config watching publishes it).
	EventConfigReloaded EventType = "mcp_config_reloaded"
	// EventConfigInvalid reports a config change that does not validate:
	// the last good config stays in effect, and Error says why.
	EventConfigInvalid EventType = "mcp_config_invalid"
)

// Event is one thing that happened in the engine. Fields that do not
// apply to its Type are empty. Events never carry secrets: Error is
// scrubbed of resolved environment values before it is set.
type Event struct {
	// Seq numbers the events of an Engine: 1 for the first, one more for
	// each next, whether anyone subscribes or not. A gap's Seq is the seq
	// of the last event it stands for.
	Seq  uint64    `json:"seq"`
	Type EventType `json:"type"`
	Time time.Time `json:"time"`
	// Missed is set on a gap: how many events the subscriber lost.
	Missed uint64 `json:"missed,omitempty"`
	Server string `json:"server,omitempty"`
	// Status and Previous are set on mcp_server_status_changed.
	Status   Status `json:"status,omitempty"`
	Previous Status `json:"previous,omitempty"`
	// Error is the server's last error, when the new status is error.
	Error string `json:"error,omitempty"`
	// CallID, Tool, Risk, DurationMs, CallStatus and Outcome are set on
	// call events (see [EventCallStart]).
	CallID     string `json:"callId,omitempty"`
	Tool       string `json:"tool,omitempty"`
	Risk       Risk   `json:"risk,omitempty"`
	CallStatus string `json:"callStatus,omitempty"`
	Outcome    string `json:"outcome,omitempty"`
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
	// the device flow, or its Options.CanAuthorize said why not) or
	// "logged_out" ([Engine.Logout] removed the stored token).
	// mcp_auth_request, which
	// comes first, says a server asked for authorization. Neither carries
	// a URL, code or token.
	AuthStatus string `json:"authStatus,omitempty"`
}

// DefaultEventBuffer is how many of the last events an Engine keeps for
// [Engine.SubscribeSince] when Options.EventBuffer is zero.
const DefaultEventBuffer = fanout.DefaultReplay

// bus is the engine's event bus (see [fanout.Bus]): it numbers every
// event, keeps the last ones for replay, and never waits for a
// subscriber.
type bus struct{ b *fanout.Bus[Event] }

// newBus returns a bus that keeps the last replay events (replay <= 0:
// DefaultEventBuffer).
func newBus(replay int) bus {
	return bus{fanout.New(fanout.Options[Event]{
		Replay: replay,
		Stamp: func(ev Event, seq uint64) Event {
			ev.Seq = seq
			if ev.Time.IsZero() {
				ev.Time = time.Now()
			}
			return ev
		},
		Gap: func(last, missed uint64) Event {
			return Event{Type: EventGap, Seq: last, Missed: missed, Time: time.Now()}
		},
	})}
}

// publish numbers ev, stamps it with the time unless it has one, keeps
// it for replay and hands it to the subscribers. It allocates nothing and
// waits for no subscriber.
func (b *bus) publish(ev Event) {
	if b.b != nil {
		b.b.Publish(ev)
	}
}

// listening reports whether anyone subscribes.
func (b *bus) listening() bool { return b.b != nil && b.b.Listening() }

// subscribe subscribes (see [fanout.Bus.SubscribeSince]).
func (b *bus) subscribe(since uint64, buffer int) (<-chan Event, func()) {
	return b.b.SubscribeSince(since, buffer)
}

// closeAll ends every subscription, when the engine closes.
func (b *bus) closeAll() {
	if b.b != nil {
		b.b.CloseAll()
	}
}
