package engine

import (
	"fmt"
	"strings"
)

// Status is where a server's supervisor is in its life. The vocabulary is
// stable: surfaces, events and RPC clients match on these strings.
type Status string

// The statuses.
const (
	StatusDisabled       Status = "disabled"       // enabled: false, or invalid config
	StatusUntrusted      Status = "untrusted"      // from a project layer that is not trusted
	StatusCold           Status = "cold"           // not started; starts on first use
	StatusConnecting     Status = "connecting"     // starting the process or opening the connection, initializing
	StatusConnected      Status = "connected"      // initialized; metadata not yet listed
	StatusDiscovering    Status = "discovering"    // listing tools, resources and prompts
	StatusReady          Status = "ready"          // connected, metadata cached
	StatusNeedsAuth      Status = "needs_auth"     // the server asked for credentials voltmcp lacks
	StatusAuthenticating Status = "authenticating" // an authorization is in progress
	StatusError          Status = "error"          // the last attempt failed; see lastError
	StatusDisconnecting  Status = "disconnecting"  // closing the session and stopping the process
	StatusDisconnected   Status = "disconnected"   // closed on request; starts again on use
)

// legalTransitions lists, for each status, the statuses it may move to.
// A supervisor refuses any other move: a bug shows as a refused
// transition in the log, never as a server in an impossible state.
func legalTransitions(from Status) []Status {
	switch from {
	case StatusDisabled:
		return []Status{StatusCold}
	case StatusUntrusted:
		return nil
	case StatusCold, StatusDisconnected:
		return []Status{StatusConnecting, StatusDisabled}
	case StatusConnecting:
		return []Status{StatusConnected, StatusError, StatusNeedsAuth, StatusDisconnecting}
	case StatusConnected:
		return []Status{StatusDiscovering, StatusError, StatusDisconnecting}
	case StatusDiscovering:
		return []Status{StatusReady, StatusError, StatusDisconnecting}
	case StatusReady:
		return []Status{StatusDiscovering, StatusError, StatusDisconnecting}
	case StatusNeedsAuth:
		return []Status{StatusAuthenticating, StatusConnecting, StatusDisconnecting, StatusDisabled}
	case StatusAuthenticating:
		return []Status{StatusConnecting, StatusNeedsAuth, StatusError, StatusDisconnecting}
	case StatusError:
		return []Status{StatusConnecting, StatusDisconnecting, StatusDisabled, StatusCold}
	case StatusDisconnecting:
		return []Status{StatusDisconnected, StatusCold, StatusError, StatusDisabled}
	}
	return nil
}

// canMove reports whether from → to is legal. Staying put is not a move.
func canMove(from, to Status) bool {
	for _, s := range legalTransitions(from) {
		if s == to {
			return true
		}
	}
	return false
}

// transitionError is an illegal status change; it indicates a bug.
type transitionError struct {
	server   string
	from, to Status
}

func (e *transitionError) Error() string {
	return fmt.Sprintf("server %s: illegal status change %s → %s", e.server, e.from, e.to)
}

// MetadataIssue is what the status action reports of a server whose
// metadata was bounded or whose pins need attention.
type MetadataIssue struct {
	Server string `json:"server"`
	// Dropped and Cleaned are the first items discovery left out or
	// cleaned (see ServerSummary), at most maxIssueItems each.
	Dropped []DroppedItem `json:"dropped,omitempty"`
	Cleaned []DroppedItem `json:"cleaned,omitempty"`
	// More says where to see the rest, when items were left out here.
	More string `json:"more,omitempty"`
	// PendingChanges counts tool changes waiting for approval.
	PendingChanges int    `json:"pendingChanges,omitempty"`
	PinError       string `json:"pinError,omitempty"`
	// Quarantined: the server waits for approval (ServerSummary).
	Quarantined bool `json:"quarantined,omitempty"`
}

// maxIssueItems bounds the items of one server in the status action.
const maxIssueItems = 10

// metadataIssues lists the servers whose last discovery dropped or
// cleaned items, whose tools have changes waiting for approval, which
// wait for approval themselves, or whose pins cannot be used, in the
// order given.
func metadataIssues(servers []ServerSummary) []MetadataIssue {
	var out []MetadataIssue
	for _, s := range servers {
		if len(s.Dropped) == 0 && len(s.Cleaned) == 0 && s.PendingChanges == 0 && s.PinError == "" && !s.Quarantined {
			continue
		}
		is := MetadataIssue{Server: s.ID, Dropped: s.Dropped[:min(len(s.Dropped), maxIssueItems)],
			Cleaned: s.Cleaned[:min(len(s.Cleaned), maxIssueItems)], PendingChanges: s.PendingChanges, PinError: s.PinError, Quarantined: s.Quarantined}
		if len(s.Dropped) > maxIssueItems || len(s.Cleaned) > maxIssueItems {
			is.More = "voltmcp servers --json lists every item of " + s.ID
		}
		if s.PendingChanges > 0 {
			is.More = strings.TrimPrefix(is.More+"; voltmcp pins "+s.ID+" shows the pending changes", "; ")
		}
		if s.Quarantined {
			is.More = strings.TrimPrefix(is.More+"; new servers are held for review: voltmcp approve "+s.ID+" lets its tools be called", "; ")
		}
		out = append(out, is)
	}
	return out
}
