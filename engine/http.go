package engine

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/engine/internal/transport"
)

// setHeaders returns the function that sets a server's configured
// headers and auth on each request its [transport.HeaderTransport]
// sends, resolving ${env:NAME} references at that moment; the values
// read from the environment are added to scrub.
func setHeaders(srv cue.Server, lookup func(string) (string, bool), scrub *transport.Scrubber) func(http.Header) error {
	return func(h http.Header) error {
		for name, raw := range srv.Headers {
			v, err := cue.ExpandEnv(raw, lookup)
			if err != nil {
				return fmt.Errorf("header %s: %w", name, err)
			}
			if cue.HasEnvRef(raw) {
				scrub.Add(v)
			}
			h.Set(name, v)
		}
		a := srv.Auth
		if a == nil {
			return nil
		}
		switch a.Type {
		case "bearer":
			tok, err := cue.ExpandEnv(a.Token, lookup)
			if err != nil {
				return fmt.Errorf("auth token: %w", err)
			}
			scrub.Add(tok)
			h.Set("Authorization", "Bearer "+tok)
		case "env":
			tok, ok := lookup(a.Variable)
			if !ok {
				return fmt.Errorf("auth: %w", &cue.MissingEnvError{Name: a.Variable})
			}
			scrub.Add(tok)
			header, scheme := "Authorization", "Bearer"
			if a.Header != "" {
				header = a.Header
			}
			if a.Scheme != nil {
				scheme = *a.Scheme
			}
			if scheme != "" {
				tok = scheme + " " + tok
			}
			h.Set(header, tok)
		}
		return nil
	}
}

// resolveURL expands the references of a server's URL.
func resolveURL(srv cue.Server, lookup func(string) (string, bool), scrub *transport.Scrubber) (string, error) {
	u, err := cue.ExpandEnv(srv.URL, lookup)
	if err != nil {
		return "", fmt.Errorf("url: %w", err)
	}
	// Go's URL errors quote the whole URL: show it with its credentials
	// redacted, and hide values that came from the environment.
	scrub.Replace(u, cue.RedactURL(u))
	if cue.HasEnvRef(srv.URL) {
		if p, err := url.Parse(u); err == nil && p.RawQuery != "" {
			scrub.Add(p.RawQuery)
		}
	}
	return u, nil
}

// connectHTTP connects to an HTTP server with [transport.ConnectHTTP],
// in the transport its config names (falling back from Streamable HTTP
// to SSE when it names none), and returns the transport that worked, as
// the config names it.
func connectHTTP(ctx context.Context, client *mcp.Client, srv cue.Server, endpoint string, ht *transport.HeaderTransport, oauth auth.OAuthHandler, opts *mcp.ClientSessionOptions) (*mcp.ClientSession, string, error) {
	mode := transport.Streamable
	switch {
	case srv.TransportAuto:
		mode = transport.StreamableOrSSE
	case srv.Transport == cue.TransportSSE:
		mode = transport.SSE
	}
	cs, sse, err := transport.ConnectHTTP(ctx, client, endpoint, mode, ht, oauth, opts)
	if sse {
		return cs, cue.TransportSSE, err
	}
	return cs, cue.TransportStreamableHTTP, err
}
