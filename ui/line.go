package ui

import (
	"context"
	"fmt"
)

// Counts are the figures of the status line and the header.
type Counts struct {
	// Configured counts every server of the config, disabled and
	// untrusted ones too.
	Configured int
	// Connected counts the servers with a live session (status
	// connected or ready).
	Connected int
	// Auth counts the servers that wait for the user to log in: auth
	// state required, pending or failed, or status needs_auth.
	Auth int
	// Errors counts the servers whose status is error.
	Errors int
	// Untrusted counts the servers of a project whose config is not
	// trusted, and so not loaded.
	Untrusted int
}

// Count computes the Counts of servers.
func Count(servers []ServerSummary) Counts {
	c := Counts{Configured: len(servers)}
	for _, s := range servers {
		switch s.Status {
		case "connected", "ready":
			c.Connected++
		case "error":
			c.Errors++
		case "untrusted":
			c.Untrusted++
		}
		if s.Status == "needs_auth" || s.AuthState == "required" || s.AuthState == "pending" || s.AuthState == "failed" {
			c.Auth++
		}
	}
	return c
}

// StatusLine is the spec's one line, "MCP 4 configured / 1 connected / 1
// auth": what `voltmcp status --line` prints and the UI's footer shows.
func StatusLine(servers []ServerSummary) string {
	c := Count(servers)
	return fmt.Sprintf("MCP %d configured / %d connected / %d auth", c.Configured, c.Connected, c.Auth)
}

// ListServers asks c for every configured server (list_mcp_servers).
func ListServers(ctx context.Context, c Client) ([]ServerSummary, error) {
	var res serverList
	if err := c.Call(ctx, mListServers, nil, &res); err != nil {
		return nil, fmt.Errorf("%s: %w", mListServers, err)
	}
	return res.Servers, nil
}
