package rpc

import (
	"net/url"
	"strings"

	"github.com/voltmcp/voltmcp/cue"
	"github.com/voltmcp/voltmcp/redact"
)

// What a remote client (Options.Remote) sees of the servers' config.
// The owner's answers show a stdio server's command and an HTTP server's
// URL as configured (its credentials hidden, redact.URL); a remote
// client's show the command without its arguments and the URL by its
// origin (scheme://host:port), and every text the answers and events
// carry (an error, a reason, a fix, an event's message) has its URLs cut
// to their origins and is scrubbed of the configured arguments,
// environment and header values and the URLs' paths, queries and user
// info: what a process of this machine was started with, or
// authenticates with, does not leave it. It is applied where the wire
// types are built (summaryOf, the methods' errors, eventOf's callers),
// never by a second type.

// remoteHidden replaces what a remote client may not see in a text.
const remoteHidden = "[hidden]"

// remoteScrubber is the scrubber of a remote client's texts, made from
// the current config: every server's arguments, environment and header
// values and its URL's path, query and user info (each of at least
// [redact.MinValueLen] bytes, as the one redactor removes them, in their
// encoded forms too).
func remoteScrubber(cfg *cue.Config) *redact.Scrubber {
	s := redact.NewScrubber(remoteHidden)
	if cfg == nil {
		return s
	}
	var values []string
	for _, srv := range cfg.Servers {
		values = append(values, srv.Args...)
		for _, v := range srv.Env {
			values = append(values, v)
		}
		for _, v := range srv.Headers {
			values = append(values, v)
		}
		if a := srv.Auth; a != nil {
			values = append(values, a.Token, a.ClientSecret)
		}
		values = append(values, urlSecrets(srv.URL)...)
	}
	return s.With(values...)
}

// urlSecrets are the parts of u past its origin: its user info, its path,
// its query and each query value, and its fragment.
func urlSecrets(u string) []string {
	if u == "" {
		return nil
	}
	p, err := url.Parse(u)
	if err != nil {
		// Unparsed, the whole URL past its scheme is hidden.
		_, rest, _ := strings.Cut(u, "://")
		return []string{u, rest}
	}
	var out []string
	if p.User != nil {
		out = append(out, p.User.String(), p.User.Username())
		if pw, ok := p.User.Password(); ok {
			out = append(out, pw)
		}
	}
	if p.Path != "" && p.Path != "/" {
		out = append(out, p.EscapedPath(), p.Path)
	}
	if p.RawQuery != "" {
		out = append(out, p.RawQuery)
		for _, vs := range p.Query() {
			out = append(out, vs...)
		}
	}
	if p.Fragment != "" {
		out = append(out, p.Fragment)
	}
	return out
}

// originOf is u's origin, scheme://host[:port], with no user info, path,
// query or fragment; "" when u has no scheme and host.
func originOf(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Scheme == "" || p.Host == "" {
		return ""
	}
	return p.Scheme + "://" + p.Host
}

// remoteURLs replaces each URL in t by its origin: a message may quote a
// URL the scrubber does not know (a redirect's, a discovered endpoint's).
func remoteURLs(t string) string {
	if !strings.Contains(t, "://") {
		return t
	}
	var b strings.Builder
	for t != "" {
		i := strings.Index(t, "://")
		if i < 0 {
			b.WriteString(t)
			break
		}
		// The scheme: the letters before "://".
		s := i
		for s > 0 && isSchemeByte(t[s-1]) {
			s--
		}
		// The URL runs to the first space, quote, parenthesis or brace.
		e := i + 3
		for e < len(t) && !strings.ContainsRune(" \t\r\n\"'<>(){}`", rune(t[e])) {
			e++
		}
		b.WriteString(t[:s])
		switch u, o := t[s:e], originOf(t[s:e]); {
		case s == i || u == o || u == o+"/":
			b.WriteString(u)
		case o == "":
			b.WriteString(t[s:i+3] + remoteHidden)
		default:
			b.WriteString(o + "/" + remoteHidden)
		}
		t = t[e:]
	}
	return b.String()
}

func isSchemeByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'
}

// remoteText is a text of a remote client's answer: scrubbed, and its
// URLs cut to their origins.
func remoteText(sc *redact.Scrubber, t string) string {
	if t == "" {
		return t
	}
	return sc.Text(remoteURLs(t))
}
