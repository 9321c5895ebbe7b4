package engine

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/voltmcp/voltmcp/engine/internal/output"
)

// ServerSummary is what every surface shows of a server. It carries no
// secret: env and header values, URLs' credentials and the command line
// are not part of it.
type ServerSummary struct {
	ID          string `json:"id"`
	DisplayName string `json:"displayName"`
	// SourceScope is "user" or "project"; SourceLabel names the layer and
	// file whose definition is in effect.
	SourceScope string    `json:"sourceScope"`
	SourceLabel string    `json:"sourceLabel"`
	Enabled     bool      `json:"enabled"`
	Transport   string    `json:"transport"`
	Lifecycle   string    `json:"lifecycle"`
	Status      Status    `json:"status"`
	ToolCounts  ToolCount `json:"toolCounts"`
	Resources   int       `json:"resourceCount"`
	Prompts     int       `json:"promptCount"`
	// Reason says why a server that does not run does not: its project
	// is not trusted (status untrusted), it is disabled, and where, its
	// definition has errors, the first with its file:line:col, or an
	// environment variable its config references is not set (named with
	// the field, never its value; the server cannot start or connect
	// until it is). Fix is what the user can do about it, such as running
	// voltmcp trust or exporting the variable.
	Reason string `json:"reason,omitempty"`
	Fix    string `json:"fix,omitempty"`
	// LastError is the reason of the last failure, scrubbed of secrets.
	LastError       string     `json:"lastError,omitempty"`
	LastConnectedAt *time.Time `json:"lastConnectedAt,omitempty"`
	// MetadataFetchedAt is when the cached metadata was listed; Stale
	// says it is older than metadataRefreshMs. CacheError says why a
	// cache file was not used.
	MetadataFetchedAt *time.Time `json:"metadataFetchedAt,omitempty"`
	MetadataStale     bool       `json:"metadataStale,omitempty"`
	MetadataNotes     []string   `json:"metadataNotes,omitempty"`
	CacheError        string     `json:"cacheError,omitempty"`
	// Dropped lists what the last discovery left out of the server's
	// metadata (invalid tool names, schemas over the limits, tools over
	// maxTools), and Cleaned what it kept after removing hidden
	// characters or clipping, each with the reason.
	Dropped []DroppedItem `json:"dropped,omitempty"`
	Cleaned []DroppedItem `json:"cleaned,omitempty"`
	// PendingChanges counts the tools whose change since they were pinned
	// waits for approval (see voltmcp pins). PinError says why the pins
	// cannot be read or written; while it is set, every tool of the
	// server counts as changed.
	PendingChanges int    `json:"pendingChanges,omitempty"`
	PinError       string `json:"pinError,omitempty"`
	// Quarantined is set while the server waits for `voltmcp approve
	// SERVER`: it was first seen while a policy held new servers for
	// review, and its tools are listed as pending and cannot be called.
	Quarantined bool `json:"quarantined,omitempty"`
	// Stderr is the tail of what a stdio server wrote to stderr (at most
	// 4 KiB, scrubbed); StderrBytes counts all it ever wrote.
	Stderr string `json:"stderr,omitempty"`
	// Log is the server's log file (engine/serverlog), under the home
	// directory shortened to "~", which `voltmcp logs` shows; LogError
	// says why the last write to it failed.
	Log         string `json:"log,omitempty"`
	LogError    string `json:"logError,omitempty"`
	StderrBytes int64  `json:"stderrBytes,omitempty"`
	// ConfigError is, for a server defined in a file whose last change
	// was not applied because it does not validate, why (see
	// [Engine.Reload]): the server runs as the last good config says.
	ConfigError  string         `json:"configError,omitempty"`
	Capabilities SummaryActions `json:"capabilities"`
	// RecentCalls are the server's latest calls through this Engine,
	// newest first: all it keeps from [Engine.Server], the last
	// [SummaryRecentCalls] from [Engine.Servers]. Never nil.
	RecentCalls []RecentCall `json:"recentCalls"`
}

// ToolCount counts a server's tools.
type ToolCount struct {
	// Cached is how many tools the cached listing holds (the live
	// session's listing is cached as it is made).
	Cached int `json:"cached"`
	// Enabled is how many of them an agent can find and call: those the
	// tool policy exposes, and none of a disabled or untrusted server's.
	// It is absent (nil) where the summary does not count it: a server
	// never listed, and the gateway's own summaries.
	Enabled *int `json:"enabled,omitempty"`
}

// SummaryActions says which management actions apply to a server now.
type SummaryActions struct {
	CanEnable         bool `json:"canEnable"`
	CanConnect        bool `json:"canConnect"`
	CanDisconnect     bool `json:"canDisconnect"`
	CanRefresh        bool `json:"canRefresh"`
	CanPersistChanges bool `json:"canPersistChanges"`
}

// Servers summarizes every configured server, sorted by id: those the
// engine runs, and those of an untrusted project, which it does not
// (status untrusted, with the Reason and the Fix).
func (e *Engine) Servers() []ServerSummary {
	return e.summaries(true)
}

// summaries is Servers, with each server's latest calls when withCalls
// is set: the gateway's own uses (counts, list_servers, hints) need none,
// and so never wait for the redactor that reading a call's reason may.
func (e *Engine) summaries(withCalls bool) []ServerSummary {
	e.mu.Lock()
	sups := make([]*supervisor, 0, len(e.servers))
	for _, s := range e.servers {
		sups = append(sups, s)
	}
	untrusted := e.untrustedLocked()
	persist := e.opts.Config == nil
	invalid := e.invalid
	e.mu.Unlock()
	var exposed map[string]int
	if withCalls {
		exposed = e.exposedCounts()
	}
	out := make([]ServerSummary, 0, len(sups)+len(untrusted))
	for _, s := range sups {
		sum := s.summary(persist)
		if withCalls {
			sum.countEnabled(exposed)
		}
		sum.PendingChanges, sum.Quarantined, sum.PinError = s.pinSummary()
		sum.ConfigError = invalid.forFile(s.cfg.File)
		if withCalls {
			sum.RecentCalls = e.recentCalls(s.cfg.ID, SummaryRecentCalls)
		} else {
			sum.RecentCalls = []RecentCall{}
		}
		out = append(out, sum)
	}
	for _, sum := range untrusted {
		sum.RecentCalls = []RecentCall{}
		out = append(out, sum)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Server summarizes one server, which may be one of an untrusted project
// (see [Engine.Servers]).
func (e *Engine) Server(id string) (ServerSummary, error) {
	if sum, ok := e.untrustedServer(id); ok {
		sum.RecentCalls = []RecentCall{}
		return sum, nil
	}
	s, err := e.supervisor(id)
	if err != nil {
		return ServerSummary{}, err
	}
	sum := s.summary(e.opts.Config == nil)
	sum.countEnabled(e.exposedCounts())
	sum.PendingChanges, sum.Quarantined, sum.PinError = s.pinSummary()
	e.mu.Lock()
	sum.ConfigError = e.invalid.forFile(s.cfg.File)
	e.mu.Unlock()
	sum.RecentCalls = e.recentCalls(s.cfg.ID, e.recent.size)
	return sum, nil
}

// exposedCounts counts the exposed tools of each server in the search
// index, which holds the exposed tools of every server with a listing
// that is neither disabled nor untrusted, decided once per listing.
func (e *Engine) exposedCounts() map[string]int {
	_, tools, _ := e.index(context.Background())
	n := map[string]int{}
	for k := range tools {
		server, _, _ := strings.Cut(k, "\x00")
		n[server]++
	}
	return n
}

// countEnabled sets sum.ToolCounts.Enabled from exposed (see
// [Engine.exposedCounts]) when the server has a cached listing.
func (sum *ServerSummary) countEnabled(exposed map[string]int) {
	if sum.MetadataFetchedAt == nil {
		return
	}
	n := exposed[sum.ID]
	sum.ToolCounts.Enabled = &n
}

func (s *supervisor) summary(persist bool) ServerSummary {
	var reason, fix string
	if s.getStatus() == StatusDisabled {
		reason, fix = s.whyDisabled() // before s.mu: it takes the Engine's lock
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.cfg
	sum := ServerSummary{
		ID: c.ID, DisplayName: c.Title, SourceScope: "user", SourceLabel: string(c.Layer) + " " + c.File,
		Enabled: c.Enabled, Transport: c.Transport, Lifecycle: c.Lifecycle, Status: s.status,
		LastError: s.lastErr, CacheError: s.cacheErr, StderrBytes: s.stderr.Total(), Log: s.logFile(),
	}
	if err := s.serverLog.Err(); err != nil {
		sum.LogError = err.Error()
	}
	envUnset := false
	switch s.status {
	case StatusDisabled:
		sum.Reason, sum.Fix = reason, fix
	case StatusUntrusted:
	default:
		// An enabled server that references an unset variable cannot
		// start or connect: say which, and the fix, before anyone tries.
		sum.Reason, sum.Fix, envUnset = envCause(c, s.e.lookup)
	}
	if sum.DisplayName == "" {
		sum.DisplayName = c.ID
	}
	if c.Layer.IsProject() {
		sum.SourceScope = "project"
	}
	if s.transport != "" {
		sum.Transport = s.transport
	} else if c.TransportAuto {
		sum.Transport = "auto"
	}
	if !s.lastConnectedAt.IsZero() {
		t := s.lastConnectedAt.UTC()
		sum.LastConnectedAt = &t
	}
	if m := s.meta; m != nil {
		sum.ToolCounts.Cached, sum.Resources, sum.Prompts = len(m.Tools), len(m.Resources), len(m.Prompts)
		t := m.FetchedAt
		sum.MetadataFetchedAt = &t
		sum.MetadataStale = m.Stale(ms(c.MetadataRefreshMs), time.Now())
		sum.MetadataNotes = m.Notes
		sum.Dropped, sum.Cleaned = m.Dropped, m.Cleaned
	}
	if tail := s.stderr.Bytes(); len(tail) > 0 {
		if len(tail) > stderrShow {
			tail = tail[len(tail)-stderrShow:]
		}
		// Cleaned, then scrubbed: an escape inside a secret must not
		// hide it from the scrubber.
		clean, _ := output.Clean(string(tail))
		sum.Stderr = s.scrub.Text(clean)
	}
	active := s.status == StatusReady || s.status == StatusConnected || s.status == StatusDiscovering
	usable := s.status != StatusDisabled && s.status != StatusUntrusted && !envUnset
	sum.Capabilities = SummaryActions{
		CanEnable: !c.Invalid && persist, CanConnect: usable && !active, CanDisconnect: active,
		CanRefresh: usable, CanPersistChanges: persist,
	}
	return sum
}
