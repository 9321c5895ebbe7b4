package engine

import (
	"strings"
	"testing"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/internal/mcptest"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

func TestHTTPTransports(t *testing.T) {
	t.Parallel()
	streamable, sse := mcptest.ServeHTTP(t, mcptest.ModeBehave)
	sseOnly := mcptest.ServeSSEOnly(t, mcptest.ModeBehave)
	opts := workspace(t, map[string]server{
		"streamable": {"url": streamable, "transport": "streamable-http"},
		"sse":        {"url": sse, "transport": "sse"},
		"auto":       {"url": streamable},
		"fallback":   {"url": sseOnly},
	}, nil)
	e := start(t, opts)
	ctx := testwait.Context(t)
	for id, want := range map[string]string{
		"streamable": cue.TransportStreamableHTTP, "sse": cue.TransportSSE,
		"auto": cue.TransportStreamableHTTP, "fallback": cue.TransportSSE,
	} {
		res, err := e.callUngated(ctx, id, "echo", map[string]any{"text": id})
		if err != nil {
			t.Errorf("%s: %v", id, err)
			continue
		}
		if text(res) != id {
			t.Errorf("%s: echo = %q", id, text(res))
		}
		s, _ := e.Server(id)
		if s.Transport != want || s.Status != StatusReady {
			t.Errorf("%s: transport %s status %s, want %s ready", id, s.Transport, s.Status, want)
		}
		// The session outlives the call that opened it.
		if _, err := e.callUngated(ctx, id, "add", map[string]any{"a": 1, "b": 2}); err != nil {
			t.Errorf("%s: second call: %v", id, err)
		}
	}
}

func TestHTTPHeadersFromEnvironment(t *testing.T) {
	t.Parallel()
	const token = "tok_0123456789abcdef"
	u := mcptest.ServeHTTPWithHeaderCheck(t, mcptest.ModeBehave, "Authorization", "Bearer "+token)
	opts := workspace(t, map[string]server{
		"hdr":     {"url": u, "transport": "streamable-http", "headers": map[string]string{"Authorization": "Bearer ${env:API_TOKEN}"}},
		"bearer":  {"url": u, "transport": "streamable-http", "auth": map[string]any{"type": "bearer", "token": "${env:API_TOKEN}"}},
		"envauth": {"url": u, "transport": "streamable-http", "auth": map[string]any{"type": "env", "variable": "API_TOKEN"}},
		"none":    {"url": u, "transport": "streamable-http", "connectTimeoutMs": 3000},
		"missing": {"url": u, "transport": "streamable-http", "headers": map[string]string{"Authorization": "Bearer ${env:UNSET_TOKEN}"}},
	}, nil)
	host := opts.LookupEnv
	opts.LookupEnv = func(k string) (string, bool) {
		if k == "API_TOKEN" {
			return token, true
		}
		return host(k)
	}
	e := start(t, opts)
	ctx := testwait.Context(t)
	for _, id := range []string{"hdr", "bearer", "envauth"} {
		if err := e.Connect(ctx, id); err != nil {
			t.Errorf("%s: %v", id, err)
		}
	}
	if err := e.Connect(ctx, "none"); err == nil || !strings.Contains(err.Error(), "requires authorization") {
		t.Errorf("connect without the header: %v", err)
	}
	if s, _ := e.Server("none"); s.Status != StatusNeedsAuth || !strings.Contains(s.LastError, "401") {
		t.Errorf("without the header: status %s, last error %q", s.Status, s.LastError)
	}
	err := e.Connect(ctx, "missing")
	if err == nil || !strings.Contains(err.Error(), "UNSET_TOKEN is not set") {
		t.Errorf("missing variable: %v", err)
	}
	for _, s := range e.Servers() {
		if strings.Contains(s.LastError, token) {
			t.Errorf("%s: error shows the token: %s", s.ID, s.LastError)
		}
	}
}

func TestHTTPCallTimeoutAndSecretInURL(t *testing.T) {
	t.Parallel()
	streamable, _ := mcptest.ServeHTTP(t, mcptest.ModeHangCall)
	const secret = "qs_secret_0123456789"
	opts := workspace(t, map[string]server{
		"h": {"url": streamable + "?token=${env:QS}", "transport": "streamable-http", "callTimeoutMs": 300},
		// A closed port: the dial error quotes the URL.
		"down": {"url": "http://127.0.0.1:1/mcp?api_key=${env:QS}", "transport": "streamable-http", "connectTimeoutMs": 2000},
	}, nil)
	host := opts.LookupEnv
	opts.LookupEnv = func(k string) (string, bool) {
		if k == "QS" {
			return secret, true
		}
		return host(k)
	}
	e := start(t, opts)
	ctx := testwait.Context(t)
	if _, err := e.callUngated(ctx, "h", "hang", map[string]any{}); err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Errorf("hang over HTTP: %v", err)
	}
	err := e.Connect(ctx, "down")
	if err == nil {
		t.Fatal("connected to a closed port")
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("error shows the secret: %v", err)
	}
	if s, _ := e.Server("down"); strings.Contains(s.LastError, secret) || !strings.Contains(s.LastError, "127.0.0.1") {
		t.Errorf("last error: %q", s.LastError)
	}
}
