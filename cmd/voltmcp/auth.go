package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/voltmcp/voltmcp/engine"
)

func authCommand() *command {
	var noBrowser, device, status, asJSON bool
	var timeout time.Duration
	c := &command{
		name:    "auth",
		summary: "log in to an OAuth server (browser or device flow), or list the OAuth servers' state",
		usage: `Usage: voltmcp auth SERVER [--no-browser | --device] [--timeout D]
       voltmcp auth --status [SERVER] [--json]

Logs in to SERVER, a remote server with "auth": {"type": "oauth"}: the
OAuth 2.1 authorization code flow with PKCE (S256), the client and scopes
its auth config gives (a clientId, a clientMetadataUrl, or dynamic
registration). voltmcp prints the authorization URL, opens it in your
browser (with xdg-open, open or rundll32, only when it is an https URL,
or plain http to a loopback authorization server under
"allowInsecureLoopback": true), and waits for the authorization server to
redirect the browser back to http://127.0.0.1:<port>/callback, a port
only this run listens on, until the first valid answer or --timeout (the
authTimeoutMs setting by default, 5 minutes). With --no-browser (which
always means this flow) it only prints the URL: open it on any machine
whose browser can reach the redirect (on a remote shell, forward the
port: ssh -L PORT:127.0.0.1:PORT).
On success it prints that SERVER is authenticated (the scopes asked for,
the expiry) and keeps the tokens in <agent-dir>/mcp/auth/SERVER.json
(0600), where 'voltmcp call', 'voltmcp serve' and the rest find them and
refresh them a minute before they expire (one process at a time). A server that is authenticated already is not asked again:
'voltmcp logout SERVER' first to log in anew. No token, code or client
secret is ever printed.

With --device (or "flow": "device" in the server's auth), it runs the
OAuth device authorization grant (RFC 8628) instead, for a machine
without a browser: the authorization server must offer it
(device_authorization_endpoint). voltmcp prints the verification page
(an https URL only; any other is refused, never shown), its host on a
line of its own (check it before you enter the code), and the user code;
open the page on any device, enter the code and approve. voltmcp polls at
the interval the authorization server asks for (5 s by default, 5 s more
at each slow_down) until you approve, refuse (access_denied), the code
expires (expired_token) or --timeout ends, and keeps the tokens as the
browser flow does. With "flow": "auto", or no flow, the device flow runs
when there is no display (Linux and the BSDs without DISPLAY or
WAYLAND_DISPLAY, or an SSH session without a forwarded display) and the
authorization server offers it; else the browser flow. "flow": "browser"
always runs the browser flow, unless --device; --no-browser always runs
it, whatever the flow.

With --status, lists each OAuth server (or SERVER) with its state:
authenticated (expiry, scopes), expired (a refresh token will renew it at
the next use) or needs_auth, never a token.

Examples:
  voltmcp auth linear
  voltmcp auth linear --no-browser --timeout 10m
  voltmcp auth github --device
  voltmcp auth --status
  voltmcp auth --status --json`,
		flags: func(fs *pflag.FlagSet) {
			fs.BoolVar(&noBrowser, "no-browser", false, "run the browser flow, printing the authorization URL without opening a browser")
			fs.BoolVar(&device, "device", false, "log in with the device flow: print a page and a code to approve on any device")
			fs.DurationVar(&timeout, "timeout", 0, "how long to wait for the authorization (default the authTimeoutMs setting, 5m)")
			fs.BoolVar(&status, "status", false, "list the OAuth servers and their state instead of logging in")
			fs.BoolVar(&asJSON, "json", false, "with --status, print JSON")
		},
	}
	c.run = func(ctx context.Context, e *env, args []string) error {
		if status {
			if noBrowser || device || timeout != 0 {
				return usageErrorf("--status takes no --no-browser, --device or --timeout")
			}
			if len(args) > 1 {
				return usageErrorf("auth --status takes at most one server id")
			}
			return authStatus(ctx, e, args, asJSON)
		}
		if asJSON {
			return usageErrorf("--json goes with --status")
		}
		if len(args) != 1 {
			return usageErrorf("auth takes one server id (or --status)")
		}
		if timeout < 0 {
			return usageErrorf("--timeout %s: want a positive duration", timeout)
		}
		if noBrowser && device {
			return usageErrorf("--no-browser goes with the browser flow, not --device")
		}
		return authLogin(ctx, e, args[0], noBrowser, device, timeout)
	}
	return c
}

// authServerError maps an engine error about a server to an exit code:
// an unknown server or one that does not use OAuth is a usage error.
func authServerError(err error) error {
	if errors.Is(err, engine.ErrUnknownServer) || strings.Contains(err.Error(), "does not use OAuth") {
		return usageErrorf("%w", err)
	}
	return failuref("%w", err)
}

func authLogin(ctx context.Context, e *env, server string, noBrowser, device bool, timeout time.Duration) error {
	b := &browserAuth{out: e.stdout, noBrowser: noBrowser}
	eng, err := openEngine(ctx, e, func(o *engine.Options) {
		o.Authorize = b.authorize
		o.DeviceAuthorize = b.device
		o.AuthTimeout = timeout
		switch {
		case device:
			o.AuthFlow = engine.AuthFlowDevice
		case noBrowser:
			o.AuthFlow = engine.AuthFlowBrowser
		}
	})
	if err != nil {
		return err
	}
	defer eng.Close()
	if _, err := eng.AuthStatus(server); err != nil {
		return authServerError(err)
	}
	if off := eng.TurnedOff(); off != "" {
		return failuref("%s", off)
	}
	cfg, _ := eng.Config().Server(server)
	b.insecureLoopback = cfg.Auth.AllowInsecureLoopback
	b.timeout = timeout
	if b.timeout == 0 {
		b.timeout = 5 * time.Minute
		if n := eng.Config().Settings.AuthTimeoutMs; n > 0 {
			b.timeout = time.Duration(n) * time.Millisecond
		}
	}
	if err := eng.Connect(ctx, server); err != nil {
		return failuref("%w", err)
	}
	info, err := eng.AuthStatus(server)
	if err != nil {
		return failuref("%w", err)
	}
	sum, _ := eng.Server(server)
	what := "is authenticated"
	if !b.asked {
		what = "is authenticated already (voltmcp logout " + shellQuote(info.Server) + " to log in anew)"
	}
	fmt.Fprintf(e.stdout, "Server %s %s: %s; status %s.\n", info.Server, what, authDetail(info), sum.Status)
	return nil
}

// authDetail is an AuthInfo's scopes and expiry, for people.
func authDetail(info engine.AuthInfo) string {
	scopes := "no scopes"
	if len(info.Scopes) > 0 {
		scopes = "scopes " + clean(strings.Join(info.Scopes, " "))
	}
	switch {
	case info.State == engine.AuthNeedsAuth:
		return "no token"
	case info.Expiry == nil:
		return scopes + ", no expiry given"
	case info.State == engine.AuthExpired:
		return scopes + ", expired " + info.Expiry.Local().Format(time.RFC3339) + ", refreshable"
	}
	return scopes + ", expires " + info.Expiry.Local().Format(time.RFC3339)
}

func authStatus(ctx context.Context, e *env, args []string, asJSON bool) error {
	eng, err := openEngine(ctx, e)
	if err != nil {
		return err
	}
	defer eng.Close()
	var list []engine.AuthInfo
	if len(args) == 1 {
		info, err := eng.AuthStatus(args[0])
		if err != nil {
			return authServerError(err)
		}
		list = []engine.AuthInfo{info}
	} else {
		list = eng.AuthServers()
	}
	if asJSON {
		return writeJSONValue(e.stdout, list)
	}
	return writeAuthTable(e.stdout, list)
}

func writeAuthTable(w io.Writer, list []engine.AuthInfo) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tSTATE\tEXPIRES\tSCOPES")
	for _, a := range list {
		exp := "-"
		if a.Expiry != nil && a.State != engine.AuthNeedsAuth {
			exp = a.Expiry.Local().Format(time.RFC3339)
		}
		state := string(a.State)
		if a.State == engine.AuthExpired {
			state += " (refreshable)"
		}
		scopes := clean(strings.Join(a.Scopes, " "))
		if scopes == "" || a.State == engine.AuthNeedsAuth {
			scopes = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", clean(a.Server), state, exp, scopes)
	}
	if len(list) == 0 {
		fmt.Fprintln(tw, "(no server with auth type oauth)")
	}
	return tw.Flush()
}

func logoutCommand() *command {
	var asJSON bool
	c := &command{
		name:    "logout",
		summary: "forget an OAuth server's tokens, revoking them where the server allows",
		usage: `Usage: voltmcp logout SERVER [--json]

Removes SERVER's OAuth tokens (<agent-dir>/mcp/auth/SERVER.json, under its
lock; other servers' tokens are not touched) and then revokes them at the
authorization server when its metadata offers a revocation_endpoint
(RFC 7009). The revocation is best effort: when it fails, the tokens are
removed all the same and a warning says why, never quoting a token. The
next use of SERVER needs 'voltmcp auth SERVER' again.

Examples:
  voltmcp logout linear
  voltmcp logout linear --json`,
		flags: func(fs *pflag.FlagSet) {
			fs.BoolVar(&asJSON, "json", false, "print what was done as JSON")
		},
	}
	c.run = func(ctx context.Context, e *env, args []string) error {
		if len(args) != 1 {
			return usageErrorf("logout takes one server id")
		}
		eng, err := openEngine(ctx, e)
		if err != nil {
			return err
		}
		defer eng.Close()
		res, err := eng.Logout(ctx, args[0])
		if err != nil {
			return authServerError(err)
		}
		if res.RevokeError != "" {
			fmt.Fprintf(e.stderr, "voltmcp logout: warning: the tokens of server %s were removed but not revoked: %s\n", res.Server, clean(res.RevokeError))
		}
		if asJSON {
			return writeJSONValue(e.stdout, res)
		}
		switch {
		case !res.Removed:
			fmt.Fprintf(e.stdout, "Server %s had no stored tokens; nothing to do.\n", res.Server)
		case res.Revoked:
			fmt.Fprintf(e.stdout, "Server %s: tokens revoked at the authorization server and removed.\n", res.Server)
		case res.RevokeError == "":
			fmt.Fprintf(e.stdout, "Server %s: tokens removed (the authorization server offers no revocation).\n", res.Server)
		default:
			fmt.Fprintf(e.stdout, "Server %s: tokens removed.\n", res.Server)
		}
		return nil
	}
	return c
}
