package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os/exec"
	"runtime"
	"sync"
	"time"
)

// The browser half of voltmcp auth: the engine's Options.Authorize. It
// listens on the redirect URI the engine chose (an RFC 8252 loopback
// redirect, http://127.0.0.1:<port>/callback), shows the authorization
// URL (printed always, opened in a browser unless --no-browser), and
// returns the first valid redirect. The engine reads the code, state and
// error from it and runs the token exchange; PKCE is the go-sdk's.

// browserAuth is one voltmcp auth's Authorize.
type browserAuth struct {
	out       io.Writer
	noBrowser bool
	// insecureLoopback is the server's auth.allowInsecureLoopback: a
	// plain http authorization URL to a loopback address may be opened.
	insecureLoopback bool
	// timeout is what bounds the wait, for its error.
	timeout time.Duration
	// open opens a URL in the user's browser; nil: the platform's opener.
	open func(string) error
	// asked reports that the user was asked.
	asked bool
}

// Errors of a browser authorization, by name.
var (
	errAuthTimeout = errors.New("timed out waiting for the authorization")
	errNotOpenable = errors.New("not an absolute https URL with a host")
)

func (b *browserAuth) authorize(ctx context.Context, server, authURL string) (string, error) {
	b.asked = true
	cb, redirect, stop, err := listenCallback(server, authURL)
	if err != nil {
		return "", err
	}
	defer stop()

	fmt.Fprintf(b.out, "To authorize voltmcp for server %s, open this URL in a browser:\n\n  %s\n\n", server, clean(authURL))
	if !b.noBrowser {
		if err := checkOpenable(authURL, b.insecureLoopback); err != nil {
			fmt.Fprintf(b.out, "warning: not opening it in a browser: the authorization URL is %v\n", err)
		} else if err := b.opener()(authURL); err != nil {
			fmt.Fprintf(b.out, "warning: could not open a browser (%v); open the URL yourself\n", err)
		}
	}
	fmt.Fprintf(b.out, "Waiting for the browser to return to %s (up to %s; Ctrl-C to stop) ...\n", redirect, b.timeout)
	select {
	case got := <-cb.done:
		return got, nil
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return "", fmt.Errorf("%w: no redirect to %s within %s (--timeout, or the authTimeoutMs setting)", errAuthTimeout, redirect, b.timeout)
		}
		return "", ctx.Err()
	}
}

// listenCallback listens on the redirect_uri that authURL names, which
// must be http://127.0.0.1:<port>/callback, for the answer with
// authURL's state: the first valid redirect's URL arrives on cb.done.
// stop closes the listener (a later request finds nothing listening),
// letting the page of an answer be sent first.
func listenCallback(server, authURL string) (cb *callback, redirect *url.URL, stop func(), err error) {
	u, err := url.Parse(authURL)
	if err != nil {
		return nil, nil, nil, errors.New("the authorization URL is not a URL")
	}
	q := u.Query()
	state := q.Get("state")
	redirect, err = url.Parse(q.Get("redirect_uri"))
	if err != nil || redirect.Scheme != "http" || redirect.Hostname() != "127.0.0.1" || redirect.Port() == "" ||
		redirect.Path != "/callback" || redirect.RawQuery != "" || state == "" {
		return nil, nil, nil, errors.New("the authorization URL has no loopback redirect_uri http://127.0.0.1:<port>/callback and state")
	}
	ln, err := net.Listen("tcp", redirect.Host)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("listen for the redirect on %s: %w", redirect.Host, errors.Unwrap(err))
	}
	cb = &callback{host: redirect.Host, state: state, server: server, done: make(chan string, 1)}
	srv := &http.Server{Handler: cb, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	stop = func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}
	return cb, redirect, stop, nil
}

func (b *browserAuth) opener() func(string) error {
	if b.open != nil {
		return b.open
	}
	return openBrowser
}

// openBrowser opens u with the platform's opener, by argv, never through
// a shell: xdg-open, open, or rundll32 url.dll,FileProtocolHandler. It
// does not wait for the browser.
func openBrowser(u string) error {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", u)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", u)
	default:
		cmd = exec.Command("xdg-open", u)
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }()
	return nil
}

// checkOpenable refuses to open in a browser anything but an absolute
// https URL with a host, or, when insecureLoopback, a plain http one to
// a loopback IP address or localhost.
func checkOpenable(raw string, insecureLoopback bool) error {
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Hostname() == "" || u.User != nil || u.Opaque != "" {
		return errNotOpenable
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		host := u.Hostname()
		if a, err := netip.ParseAddr(host); insecureLoopback && (host == "localhost" || err == nil && a.Unmap().IsLoopback()) {
			return nil
		}
		if insecureLoopback {
			return fmt.Errorf("%w (plain http is allowed to a loopback address only)", errNotOpenable)
		}
		return fmt.Errorf(`%w (plain http to a loopback authorization server needs "allowInsecureLoopback": true in the server's auth)`, errNotOpenable)
	}
	return errNotOpenable
}

// callback serves the redirect URI. Only a GET of exactly /callback
// with the Host 127.0.0.1:<port>, the authorization's state, and a code
// or an error ends the wait, and only the first one does. Anything else
// gets an error page and the wait goes on: a wrong state is not the
// answer to this authorization (a page that makes the browser call the
// port must not be able to end it), and a second answer finds it
// answered, then nothing listening once the command goes on.
type callback struct {
	host, state, server string
	done                chan string // gets the first valid redirect's URL
	// back is where the user goes on, for the page of the answer; empty:
	// the terminal.
	back string

	mu       sync.Mutex
	answered bool
}

func (c *callback) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	page := func(status int, text string) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Referrer-Policy", "no-referrer")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, text+"\n")
	}
	switch {
	case r.Host != c.host:
		page(http.StatusMisdirectedRequest, "voltmcp: wrong Host: this listener answers http://"+c.host+"/callback only.")
		return
	case r.URL.Path != "/callback":
		page(http.StatusNotFound, "voltmcp: not found.")
		return
	case r.Method != http.MethodGet:
		page(http.StatusMethodNotAllowed, "voltmcp: the callback takes GET only.")
		return
	}
	q := r.URL.Query()
	if q.Get("state") != c.state {
		page(http.StatusBadRequest, "voltmcp: state mismatch: this is not the answer to the authorization voltmcp started; it is ignored and voltmcp goes on waiting.")
		return
	}
	if q.Get("code") == "" && q.Get("error") == "" {
		page(http.StatusBadRequest, "voltmcp: the redirect holds neither a code nor an error; voltmcp goes on waiting.")
		return
	}
	c.mu.Lock()
	first := !c.answered
	c.answered = true
	c.mu.Unlock()
	if !first {
		page(http.StatusConflict, "voltmcp: this authorization was already answered; a second answer is ignored.")
		return
	}
	back := c.back
	if back == "" {
		back = "the terminal"
	}
	if q.Get("error") != "" {
		page(http.StatusOK, "voltmcp: the authorization for server "+c.server+" was refused. You can close this tab; "+back+" says why.")
	} else {
		page(http.StatusOK, "voltmcp: authorization received for server "+c.server+". You can close this tab and return to "+back+".")
	}
	c.done <- "http://" + c.host + r.URL.RequestURI()
}
