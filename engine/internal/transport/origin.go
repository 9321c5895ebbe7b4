package transport

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/voltmcp/voltmcp/engine/internal/line"
)

// Origin is the scheme, host and port of a URL: what a server's
// configured headers and token are bound to. Two URLs are of one origin
// when their origins are equal (==). The zero Origin is of no URL. Make
// one with [OriginOf], which writes each field in its one canonical
// form.
type Origin struct {
	Scheme, Host string // in lower case; an IP address in its canonical form
	Port         uint16 // explicit, never 0
}

// OriginOf returns the origin of an http or https URL: the scheme and
// host in lower case, an IP address in its canonical form, and the port
// explicit. It reports false for any other URL, or one without a host or
// with an unusable port.
func OriginOf(u *url.URL) (Origin, bool) {
	if u == nil {
		return Origin{}, false
	}
	o := Origin{Scheme: strings.ToLower(u.Scheme), Host: strings.ToLower(u.Hostname())}
	switch o.Scheme {
	case "http":
		o.Port = 80
	case "https":
		o.Port = 443
	default:
		return Origin{}, false
	}
	if o.Host == "" {
		return Origin{}, false
	}
	if a, err := netip.ParseAddr(o.Host); err == nil {
		o.Host = a.String()
	}
	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 {
			return Origin{}, false
		}
		o.Port = uint16(n)
	}
	return o, true
}

// String writes the origin as scheme://host:port, with an IPv6 address
// in brackets: never a user, path or query.
func (o Origin) String() string {
	if o == (Origin{}) {
		return "(not an http or https url)"
	}
	host := o.Host
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return o.Scheme + "://" + host + ":" + strconv.Itoa(int(o.Port))
}

// sameOrigin reports whether two URLs are of one origin.
func sameOrigin(a, b *url.URL) bool {
	oa, ok := OriginOf(a)
	if !ok {
		return false
	}
	ob, ok := OriginOf(b)
	return ok && oa == ob
}

// CrossOriginError is the refusal of a request to another origin than a
// server's configured URL: such a request is never sent, so no
// configured header or token reaches a host the user did not name.
type CrossOriginError struct {
	Server string // the server's name
	To     Origin // the origin refused (the zero Origin for a URL of none)
}

func (e *CrossOriginError) Error() string {
	return fmt.Sprintf("server %s: refused to send a request to %q, another origin than the configured url's (%s); nothing was sent there",
		e.Server, e.To.String(), "scheme, host and port must match")
}

// eventFilter passes an event stream through, except the events keep
// refuses. Events are read as the go-sdk reads them: lines end at LF, a
// blank line ends an event. Each event is held until its end, whole,
// and keep sees it so (the lines as they came); the boundedBody
// underneath bounds how long that can be. An event it keeps it passes
// on from the same buffer, without a copy; a buffer of a large event is
// kept for the next event for a second, then dropped.
type eventFilter struct {
	r     *bufio.Reader
	c     io.Closer
	keep  func(event []byte) bool
	event []byte // the lines of the event being read
	out   []byte // what Read has still to return, of passed
	held  []byte // the buffer of the event being passed on
	err   error  // the error of the body, once it ended

	// spare is a buffer for the next event (line.Spare).
	spare line.Spare
}

// keepEventBuf is the largest event buffer an eventFilter keeps while
// it waits on the server.
const keepEventBuf = 64 << 10

func newEventFilter(rc io.ReadCloser, keep func(event []byte) bool) *eventFilter {
	return &eventFilter{r: bufio.NewReader(rc), c: rc, keep: keep}
}

// newEndpointFilter passes an event stream through, except each
// endpoint event after the first: a legacy SSE server names the
// endpoint for its POSTs once, at the start. The go-sdk reads only the
// first, and would take a later one as a malformed message and end the
// session.
func newEndpointFilter(rc io.ReadCloser) *eventFilter {
	return newEventFilter(rc, endpointOnce())
}

// endpointOnce returns the keep func of [newEndpointFilter].
func endpointOnce() func(event []byte) bool {
	seen := false
	return func(event []byte) bool {
		if name, _ := eventFields(event); name != "endpoint" {
			return true
		}
		if seen {
			return false
		}
		seen = true
		return true
	}
}

// eventFields returns the name of event (its last "event:" field,
// trimmed) and its data as the go-sdk reads it: the values of its data
// fields, trimmed, joined by LFs. Data of one field is a slice of event.
func eventFields(event []byte) (name string, data []byte) {
	fields := 0
	for len(event) > 0 {
		var line []byte
		line, event, _ = bytes.Cut(event, []byte{'\n'})
		field, value, ok := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte{':'})
		if !ok {
			continue
		}
		switch string(field) {
		case "event":
			name = string(bytes.TrimSpace(value))
		case "data":
			value = bytes.TrimSpace(value)
			if fields++; fields == 1 {
				data = value
			} else {
				data = append(append(bytes.Clone(data), '\n'), value...)
			}
		}
	}
	return name, data
}

func (f *eventFilter) Read(p []byte) (int, error) {
	for len(f.out) == 0 {
		if f.err != nil {
			return 0, f.err
		}
		if f.event == nil {
			f.event = f.spare.Take(0)
		}
		line, err := f.r.ReadSlice('\n')
		f.event = append(f.event, line...)
		if err == bufio.ErrBufferFull {
			continue
		}
		// The whole line is in f.event now (at the end of the body, one
		// without its LF): look at it there.
		var text []byte
		if n := len(f.event); n > 0 {
			end := n
			if f.event[n-1] == '\n' {
				end--
			}
			start := bytes.LastIndexByte(f.event[:end], '\n') + 1
			text = bytes.TrimRight(f.event[start:], "\r\n")
		}
		if err != nil {
			f.err = err
			f.endEvent()
			break
		}
		if len(text) == 0 {
			f.endEvent()
		}
	}
	n := copy(p, f.out)
	f.out = f.out[n:]
	if len(f.out) == 0 {
		f.spare.Keep(f.held, keepEventBuf)
		f.out, f.held = nil, nil
		if f.err != nil {
			return n, f.err
		}
	}
	return n, nil
}

// endEvent decides on the event read, and hands it to Read when it is
// kept.
func (f *eventFilter) endEvent() {
	event := f.event
	f.event = nil
	if len(event) > 0 && f.keep(event) {
		f.out, f.held = event, event
		return
	}
	f.spare.Keep(event, keepEventBuf)
}

func (f *eventFilter) Close() error { return f.c.Close() }
