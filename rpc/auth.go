package rpc

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/voltmcp/voltmcp/engine"
)

// The states of an authorization flow.
const (
	flowPending       = "pending"
	flowAuthenticated = "authenticated"
	flowFailed        = "failed"
	flowCancelled     = "cancelled"
)

// Auth runs the OAuth authorizations that RPC clients start, for the
// auth methods (start_mcp_server_auth, poll, cancel, complete). The
// engine asks a user through two functions of its Options: the process
// that builds the engine for an RPC server makes one Auth and passes its
// [Auth.Authorize] and [Auth.DeviceAuthorize] there, and the Auth in the
// server's [Options]. An authorization runs only when a client started
// it: a call that needs one while none is running gets the engine's
// needs_auth, as without a user to ask. A flow is the engine's Connect of
// the server, run in the background: the device flow's page and code, or
// the browser flow's authorization URL, are handed to the client that
// started it, and the engine polls (device) or waits for the redirect
// URL that complete_mcp_server_auth brings (browser). At most one flow
// runs per server.
type Auth struct {
	mu    sync.Mutex
	flows map[string]*authFlow
}

// authFlow is one server's authorization. Its fields are guarded by
// Auth.mu; shown is closed once what the user needs is known, or the flow
// ended.
type authFlow struct {
	view     McpAuthFlow
	cancel   context.CancelFunc
	shown    chan struct{}
	done     chan struct{}
	callback chan string
	showOnce sync.Once
	// deviceOnly marks a flow a remote client started: the browser flow
	// is refused it (browserRefused then says so), as a redirect to this
	// machine cannot reach the remote client.
	deviceOnly     bool
	browserRefused bool
}

// NewAuth returns an Auth with no flow running.
func NewAuth() *Auth { return &Auth{flows: map[string]*authFlow{}} }

func (f *authFlow) show() { f.showOnce.Do(func() { close(f.shown) }) }

// running is the flow of server that a client started and that waits for
// the user, or nil.
func (a *Auth) running(server string) *authFlow {
	a.mu.Lock()
	defer a.mu.Unlock()
	if f := a.flows[server]; f != nil && f.view.State == flowPending {
		return f
	}
	return nil
}

// errNotStarted is the answer to an engine that asks for a user when no
// RPC client started an authorization of the server.
func errNotStarted(server string) error {
	return fmt.Errorf("no RPC client started an authorization of server %s (start_mcp_server_auth does)", server)
}

// Authorize is the engine's [engine.Options] Authorize: it hands
// authURL to the client that started the flow of server, and waits for
// the redirect URL that complete_mcp_server_auth brings.
func (a *Auth) Authorize(ctx context.Context, server, authURL string) (string, error) {
	f := a.running(server)
	if f == nil {
		return "", errNotStarted(server)
	}
	a.mu.Lock()
	if f.deviceOnly {
		f.browserRefused = true
		a.mu.Unlock()
		return "", errBrowserRefused(server)
	}
	f.view.Flow, f.view.AuthorizationURL = "browser", authURL
	a.mu.Unlock()
	f.show()
	select {
	case u := <-f.callback:
		return u, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// errBrowserRefused is why a remote client's authorization of server
// did not run: the engine chose the browser flow.
func errBrowserRefused(server string) error {
	return fmt.Errorf("server %s would be authorized in the browser flow, which a remote client may not start (its redirect comes back to this machine): "+
		"its authorization server offers no device flow (no device_authorization_endpoint), or this machine has a display and the server's auth.flow is not %q; "+
		"set its auth.flow to %q where the provider offers the device flow, or authorize it on this machine (voltmcp auth %s)", server, engine.AuthFlowDevice, engine.AuthFlowDevice, server)
}

// DeviceAuthorize is the engine's [engine.Options] DeviceAuthorize: it
// hands the page and code to the client that started the flow of
// server; the engine then polls for the token.
func (a *Auth) DeviceAuthorize(_ context.Context, server string, d engine.DeviceAuthorization) error {
	f := a.running(server)
	if f == nil {
		return errNotStarted(server)
	}
	a.mu.Lock()
	f.view.Flow, f.view.VerificationURI, f.view.VerificationURIComplete, f.view.UserCode = "device", d.VerificationURI, d.VerificationURIComplete, d.UserCode
	if !d.Expiry.IsZero() {
		f.view.ExpiresAt = d.Expiry.UTC().Format(time.RFC3339)
	}
	a.mu.Unlock()
	f.show()
	return nil
}

// state is the flow state of server for its summary: "" when none runs
// and the last did not fail.
func (a *Auth) state(server string) string {
	if a == nil {
		return ""
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if f := a.flows[server]; f != nil && (f.view.State == flowPending || f.view.State == flowFailed) {
		return f.view.State
	}
	return ""
}

// start starts the authorization of server by connecting it, unless one
// runs already, and waits until the user's part is known, the flow ended
// or ctx ended. deviceOnly is a remote client's start: the flow is the
// device flow or none, and a browser flow (started by the owner, or the
// one the engine chose) is answered an error that says why.
func (a *Auth) start(ctx context.Context, eng *engine.Engine, server string, deviceOnly bool) (McpAuthFlow, *Error) {
	a.mu.Lock()
	f := a.flows[server]
	if f == nil || f.view.State != flowPending {
		fctx, cancel := context.WithCancel(context.Background())
		f = &authFlow{view: McpAuthFlow{ID: server, State: flowPending}, cancel: cancel, deviceOnly: deviceOnly,
			shown: make(chan struct{}), done: make(chan struct{}), callback: make(chan string, 1)}
		a.flows[server] = f
		go a.run(fctx, eng, server, f)
	}
	a.mu.Unlock()
	select {
	case <-f.shown:
	case <-ctx.Done():
	}
	a.mu.Lock()
	v, refused := f.view, f.browserRefused || (deviceOnly && f.view.Flow == "browser")
	a.mu.Unlock()
	if deviceOnly && refused {
		return McpAuthFlow{}, errorf(CodeFailed, "start_mcp_server_auth: %v", errBrowserRefused(server))
	}
	return v, nil
}

// run is the flow's connection: the engine asks for the user through
// Authorize or DeviceAuthorize, or needs no one (a valid token).
func (a *Auth) run(ctx context.Context, eng *engine.Engine, server string, f *authFlow) {
	defer close(f.done)
	defer f.show()
	defer f.cancel()
	err := eng.Connect(ctx, server)
	var info engine.AuthInfo
	if err == nil {
		info, err = eng.AuthStatus(server)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case f.view.State == flowCancelled:
	case err != nil && errors.Is(ctx.Err(), context.Canceled):
		f.view.State = flowCancelled
	case err != nil:
		f.view.State, f.view.Error = flowFailed, err.Error()
	case info.State == engine.AuthNeedsAuth:
		f.view.State, f.view.Error = flowFailed, "the server connected without an authorization"
	default:
		f.view.State = flowAuthenticated
	}
}

func (a *Auth) view(f *authFlow) McpAuthFlow {
	a.mu.Lock()
	defer a.mu.Unlock()
	return f.view
}

// flow is the last flow of server, or nil.
func (a *Auth) flow(server string) *authFlow {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.flows[server]
}

// cancelFlow ends the flow of server.
func (a *Auth) cancelFlow(server string) (McpAuthFlow, bool) {
	f := a.flow(server)
	if f == nil {
		return McpAuthFlow{}, false
	}
	a.mu.Lock()
	if f.view.State == flowPending {
		f.view.State = flowCancelled
	}
	a.mu.Unlock()
	f.cancel()
	<-f.done
	return a.view(f), true
}

// complete hands the browser's redirect URL to the flow of server, and
// waits for its end (or ctx's).
func (a *Auth) complete(ctx context.Context, server, callbackURL string) (McpAuthFlow, *Error) {
	f := a.running(server)
	if f == nil {
		return McpAuthFlow{}, errorf(CodeFailed, "no authorization of server %s waits for a redirect: start_mcp_server_auth starts one", server)
	}
	a.mu.Lock()
	browser := f.view.Flow == "browser"
	a.mu.Unlock()
	if !browser {
		return McpAuthFlow{}, errorf(CodeFailed, "the authorization of server %s is not a browser flow waiting for its redirect: poll_mcp_server_auth follows a device flow", server)
	}
	select {
	case f.callback <- callbackURL:
	default:
		return McpAuthFlow{}, errorf(CodeFailed, "the authorization of server %s has its redirect already", server)
	}
	select {
	case <-f.done:
	case <-ctx.Done():
	}
	return a.view(f), nil
}
