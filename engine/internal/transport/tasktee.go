package transport

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/voltmcp/voltmcp/engine/internal/tasks"
)

// maxListRequest is the largest POST body read for a tools/list
// request: one carries a cursor at most, and a larger body is taken for
// another method's without reading it.
const maxListRequest = 64 << 10

// listHead is how much of a POST body is read to find the method: the
// go-sdk writes "jsonrpc", "id" and "method" before "params", so that a
// call's arguments are not copied to learn that it is no listing.
const listHead = 512

// noteListing tells t.Listings of the message a POST carries, and
// returns the id of the tools/list request it is, if it is one. It
// reads a copy of the body (GetBody), never the body the request sends.
func (t *HeaderTransport) noteListing(req *http.Request) (jsonrpc.ID, bool) {
	if req.GetBody == nil || req.ContentLength <= 0 || req.ContentLength > maxListRequest {
		return jsonrpc.ID{}, false
	}
	body, err := req.GetBody()
	if err != nil {
		return jsonrpc.ID{}, false
	}
	defer body.Close()
	head := make([]byte, min(req.ContentLength, listHead))
	n, _ := io.ReadFull(body, head)
	if !bytes.Contains(head[:n], []byte(`"tools/list"`)) {
		return jsonrpc.ID{}, false
	}
	rest, err := io.ReadAll(io.LimitReader(body, maxListRequest))
	if err != nil {
		return jsonrpc.ID{}, false
	}
	return t.Listings.Sent(append(head[:n], rest...))
}

// taskTee passes a response body through unchanged, and hands each
// message the body carries to a [tasks.Listings] as the SDK reads it:
// the whole body of a JSON response when it ends, each event of an
// event stream when its empty line is read (its message found by the
// event reader the Caller reads with). It only ever reads what the SDK
// asks for, and sees each byte after the body gave it and before the
// SDK does, so that a listing's task support is noted before the SDK
// can return the listing. It keeps the bytes of one message at a time,
// at most max of them (a longer message, which the boundedBody below
// fails anyway, is not read), and a message that is no listing's
// answer, or malformed, it drops: its errors reach no one.
type taskTee struct {
	rc     io.ReadCloser
	l      *tasks.Listings
	max    int
	events bool        // text/event-stream, else one JSON message
	msg    []byte      // the bytes of the message being read
	over   bool        // the message went past max: it is not read
	text   bool        // the event's current line has a byte other than CR
	ev     eventReader // reads the message of an event
}

// keepCap is the largest buffer a taskTee keeps between messages.
const keepCap = 64 << 10

func (t *taskTee) Read(p []byte) (int, error) {
	n, err := t.rc.Read(p)
	if t.events {
		t.see(p[:n])
	} else {
		t.keep(p[:n])
		if errors.Is(err, io.EOF) {
			t.end()
		}
	}
	return n, err
}

func (t *taskTee) Close() error { return t.rc.Close() }

// keep adds b to the message being read, up to max bytes. A message
// that starts while no listing waits for its answer is not kept: it
// cannot be one (a server's requests and notifications, most of all,
// which may be many and large).
func (t *taskTee) keep(b []byte) {
	switch {
	case t.over:
	case len(t.msg) == 0 && len(b) > 0 && !t.l.Pending():
		t.over = true
	case len(t.msg)+len(b) > t.max:
		t.over, t.msg = true, t.msg[:0]
	default:
		t.msg = append(t.msg, b...)
	}
}

// see reads the bytes of an event stream: an event ends at an empty
// line, one with no byte but CRs before its LF, as the go-sdk (and
// readLine) reads it.
func (t *taskTee) see(b []byte) {
	for len(b) > 0 {
		end := -1
		for i, c := range b {
			if c != '\n' {
				t.text = t.text || c != '\r'
				continue
			}
			empty := !t.text
			t.text = false
			if empty {
				end = i
				break
			}
		}
		if end < 0 {
			t.keep(b)
			return
		}
		t.keep(b[:end+1])
		t.end()
		b = b[end+1:]
	}
}

// end hands the message read to the Listings, and starts the next.
func (t *taskTee) end() {
	if !t.over && len(t.msg) > 0 {
		data := t.msg
		if t.events {
			if t.ev.r == nil {
				t.ev = eventReader{r: bufio.NewReaderSize(bytes.NewReader(t.msg), 4096), max: t.max, tooLarge: errTeeTooLarge}
			} else {
				t.ev.r.Reset(bytes.NewReader(t.msg))
			}
			data, _ = t.ev.next()
		}
		if len(data) > 0 {
			t.l.Received(data)
		}
	}
	t.over = false
	if cap(t.msg) > keepCap || cap(t.ev.data) > keepCap {
		t.msg, t.ev.data = nil, nil
	} else {
		t.msg = t.msg[:0]
	}
}

// errTeeTooLarge ends the reading of an event past the bound; nobody
// sees it.
var errTeeTooLarge = errors.New("an event past the bound")
