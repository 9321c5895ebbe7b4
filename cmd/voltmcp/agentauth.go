package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/voltmcp/voltmcp/engine"
)

// The agent half of a login: the Options.Authorize of voltmcp serve.
// When a call of the agent needs a login to an OAuth server, the
// authorization URL is offered to the agent's client by a URL-mode
// elicitation (engine.OfferURL, MCP 2025-11-25), only after it checks as
// an https URL (or plain http to a loopback authorization server under
// allowInsecureLoopback); serve listens on the redirect URI with the
// callback listener of voltmcp auth, and the login ends when the
// browser comes back to it. The client's "accept" only says that the
// user agreed to open the URL: nothing but the authorization server's
// redirect completes the login. A decline or a cancel ends it at once,
// and so does the auth timeout; the server is then needs_auth, with the
// reason. Without a client that can be offered the URL
// (engine.CanOfferURL, the engine's CanAuthorize), nothing is offered
// and the server's lastError says to run voltmcp auth SERVER.

// agentAuth is one voltmcp serve's Authorize.
type agentAuth struct {
	// eng is the engine it authorizes for, set once it is made (the
	// engine asks only once an agent's call needs a login).
	eng *engine.Engine
}

// Errors of an agent's login, by name.
var (
	errAuthDeclined = errors.New("the login was declined in the client")
	errAuthCanceled = errors.New("the login was cancelled in the client")
)

func (a *agentAuth) authorize(ctx context.Context, server, authURL string) (string, error) {
	insecure := false
	if a.eng != nil {
		if cfg, ok := a.eng.Config().Server(server); ok && cfg.Auth != nil {
			insecure = cfg.Auth.AllowInsecureLoopback
		}
	}
	if err := checkOpenable(authURL, insecure); err != nil {
		return "", fmt.Errorf("the authorization URL is %w, so it was not offered to the client", err)
	}
	u, _ := url.Parse(authURL) // checkOpenable parsed it
	cb, redirect, stop, err := listenCallback(server, authURL)
	if err != nil {
		return "", err
	}
	defer stop()
	cb.back = "your agent"
	msg := fmt.Sprintf("voltmcp: server %s needs you to log in. The URL opens the login page of its authorization server, %s; "+
		"once you approve there, your browser returns to voltmcp on this machine (%s) and the call goes on.", server, u.Host, redirect.Host)
	offer, err := engine.OfferURL(ctx, msg, authURL)
	if err != nil {
		return "", err
	}
	switch offer.Action {
	case "decline":
		return "", fmt.Errorf("%w (the URL-mode elicitation was declined): call again to be offered it again, or log in with `voltmcp auth %s`", errAuthDeclined, server)
	case "cancel":
		return "", fmt.Errorf("%w (the URL-mode elicitation was cancelled): call again to be offered it again, or log in with `voltmcp auth %s`", errAuthCanceled, server)
	}
	select {
	case got := <-cb.done:
		// The user is back: the client may stop showing the URL.
		_ = offer.Complete(ctx)
		return got, nil
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return "", fmt.Errorf("%w: the client accepted the URL, but the browser never returned to %s", errAuthTimeout, redirect)
		}
		return "", ctx.Err()
	}
}
