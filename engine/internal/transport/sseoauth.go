package transport

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/oauth2"
)

// sseOAuth authorizes the requests of a legacy SSE connection (the GET
// of its stream and the POSTs to the endpoint the stream names) through
// an OAuth handler, as the SDK's Streamable HTTP transport does its own
// requests, which its SSE transport does not: each request carries the
// handler's token, and one answered 401, or 403, goes to the handler's
// Authorize and, when that succeeds, is sent once more with the new
// token.
//
// The handler sees the failed request as one to the configured endpoint
// (the SSE URL), whatever the URL it was sent to: the MCP server's
// canonical URI, its resource, is the URL the user configured, not the
// per-session endpoint a POST goes to. Requests go on through next,
// which refuses any other origin than the endpoint's (a
// [HeaderTransport]), so the token never leaves it.
type sseOAuth struct {
	next     http.RoundTripper
	handler  auth.OAuthHandler
	endpoint *url.URL
}

// RoundTrip implements [http.RoundTripper].
func (t *sseOAuth) RoundTrip(req *http.Request) (*http.Response, error) {
	sent, resp, err := t.send(req)
	if err != nil || resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		return resp, err
	}
	if req.Body != nil && req.GetBody == nil {
		return resp, nil // cannot be sent again
	}
	failed := sent.Clone(sent.Context())
	u := *t.endpoint
	failed.URL, failed.Host = &u, u.Host
	if err := t.handler.Authorize(req.Context(), failed, resp); err != nil {
		return nil, err
	}
	_, resp, err = t.send(req)
	return resp, err
}

// send sends a copy of req, with its body anew, carrying the handler's
// token when it has one.
func (t *sseOAuth) send(req *http.Request) (*http.Request, *http.Response, error) {
	r := req.Clone(req.Context())
	if req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return nil, nil, err
		}
		r.Body = body
	}
	ts, err := t.handler.TokenSource(req.Context())
	if err != nil {
		return nil, nil, err
	}
	if ts != nil {
		tok, err := ts.Token()
		var re *oauth2.RetrieveError
		switch {
		case err == nil && tok != nil:
			r.Header.Set("Authorization", "Bearer "+tok.AccessToken)
		case err != nil && (!errors.As(err, &re) || re.ErrorCode != "invalid_grant"):
			return nil, nil, fmt.Errorf("oauth token: %w", err)
		}
		// invalid_grant: no token can be had; the request goes without
		// one, and its 401 starts an authorization (as the SDK does).
	}
	resp, err := t.next.RoundTrip(r)
	return r, resp, err
}
