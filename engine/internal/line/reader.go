package line

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/voltmcp/voltmcp/engine/internal/jsonwire"
)

// reader is the state of reading a connection: whichever goroutine
// holds it is the connection's reader (Conn.lane).
//
// It reads MCP's framing, one message a line, a line at a time: a line
// that is exactly one JSON value is checked with json.Valid and its
// envelope read without reflection (jsonwire.DecodeMessage). Anything
// else (a value spread over lines, two on one line, a message whose
// newline has not come when the peer stops writing) switches the
// connection for good to encoding/json's stream decoder, which reads
// all of those as the go-sdk's transport does. Both ways bound a
// message by max.
//
// On a client connection it also admits the server's requests
// ([PeerRequests]): a request past the bound is refused from the bytes
// read, before its params are copied or decoded, so that refusing costs
// nothing beyond the read buffer.
type reader struct {
	src  io.Reader
	max  int           // bytes of one message; <= 0 means no bound
	peer *PeerRequests // nil admits every request

	buf  []byte // read but not yet consumed: buf[off:]
	off  int
	seen int   // bytes of buf[off:] already searched for a newline
	err  error // the read error that ends the stream, once buf is drained

	// dec, once set, reads the rest of the stream (slow mode).
	dec *json.Decoder
	lim *frameLimit

	// spare keeps a large buffer let go of once empty for the next long
	// line (Spare).
	spare Spare
}

// Bounds of reader's buffer.
const (
	readSize = 8 << 10  // the least it asks the source for
	keepBuf  = 64 << 10 // a larger buffer is dropped once empty
)

func newReader(src io.Reader, max int, peer *PeerRequests) *reader {
	return &reader{src: src, max: max, peer: peer}
}

// message returns the next message, io.EOF at a clean end of stream, or
// the error that ends the stream; or, when a request of the server's is
// past the bound of r.peer, the id of that request, refused and not
// decoded (msg is nil).
func (r *reader) message() (msg jsonrpc.Message, refused *Refused, err error) {
	for r.dec == nil {
		rest := r.buf[r.off:]
		if i := bytes.IndexByte(rest[r.seen:], '\n'); i >= 0 {
			i += r.seen
			r.seen = 0
			line := jsonwire.TrimSpace(rest[:i])
			if len(line) == 0 {
				r.off += i + 1
				continue
			}
			if r.max > 0 && len(line) > r.max {
				return nil, nil, ErrMessageTooLarge
			}
			if !json.Valid(line) {
				break // the decoder reads it, and says what is wrong
			}
			r.off += i + 1
			return r.decodeLine(line)
		}
		// A long line comes in many reads: each is searched once.
		r.seen = len(rest)
		if r.max > 0 && len(rest) > r.max {
			return nil, nil, ErrMessageTooLarge
		}
		if r.err != nil {
			if len(jsonwire.TrimSpace(rest)) == 0 {
				return nil, nil, r.err
			}
			break // a last message without its newline
		}
		if t := jsonwire.TrimSpace(rest); len(t) > 0 {
			// What came has no newline yet. When it may end a whole
			// message, the peer may be waiting for an answer to a
			// message it sent without one: the decoder reads it
			// without waiting for more.
			if c := t[len(t)-1]; c == '}' || c == ']' || c == '"' || c == 'e' || c == 'l' {
				break
			}
		}
		r.fill()
	}
	if r.dec == nil {
		r.slow()
	}
	msg, err = r.decode()
	if err != nil {
		return nil, nil, err
	}
	return r.admit(msg)
}

// decodeLine decodes line, one valid JSON value in the read buffer. The
// usual envelope is read in place: a request of the server's past the
// bound is refused from the buffer, nothing copied (as [PeerCall]
// reads it); anything else is copied out of the buffer, which the
// message then keeps.
func (r *reader) decodeLine(line []byte) (jsonrpc.Message, *Refused, error) {
	var w jsonwire.Envelope
	if !w.FastDecode(line) {
		msg, err := jsonwire.DecodeMessage(bytes.Clone(line))
		if err != nil {
			return nil, nil, err
		}
		return r.admit(msg)
	}
	if id, method, n, ok := envelopeCall(&w); ok && r.peer != nil {
		if why := r.peer.Admit(id, method, n); why != nil {
			return nil, &Refused{id, why}, nil
		}
	}
	c := bytes.Clone(line)
	w.Params, w.Result = rebase(c, line, w.Params), rebase(c, line, w.Result)
	msg, err := w.Message()
	return msg, nil, err
}

// rebase returns the slice of c, a copy of line, that sub is of line.
func rebase(c, line, sub []byte) []byte {
	if sub == nil {
		return nil
	}
	off := cap(line) - cap(sub)
	return c[off : off+len(sub) : off+len(sub)]
}

// admit refuses msg, a decoded message, when it is a request of the
// server's past the bound of r.peer.
func (r *reader) admit(msg jsonrpc.Message) (jsonrpc.Message, *Refused, error) {
	if req := peerRequest(msg); req != nil && r.peer != nil {
		if why := r.peer.Admit(req.ID, req.Method, len(req.Params)); why != nil {
			return nil, &Refused{req.ID, why}, nil
		}
	}
	return msg, nil, nil
}

// fill reads more into the buffer, first moving what is left of it to
// its start.
func (r *reader) fill() {
	rest := len(r.buf) - r.off
	switch {
	case rest == 0 && cap(r.buf) > keepBuf:
		r.spare.Keep(r.buf, keepBuf)
		r.buf = nil
	case r.off > 0:
		r.buf = r.buf[:copy(r.buf, r.buf[r.off:])]
	}
	r.off = 0
	if cap(r.buf)-len(r.buf) < readSize {
		if sp := r.spare.Take(len(r.buf) + readSize); sp != nil {
			r.buf = append(sp[:0], r.buf...)
		} else {
			r.buf = append(r.buf, make([]byte, max(readSize, cap(r.buf)))...)[:len(r.buf)]
		}
	}
	n, err := r.src.Read(r.buf[len(r.buf):cap(r.buf)])
	r.buf = r.buf[:len(r.buf)+n]
	if err != nil {
		r.err = err
	}
}

// slow hands the rest of the stream, what is buffered first, to
// encoding/json's decoder.
func (r *reader) slow() {
	src := io.Reader(bytes.NewReader(bytes.Clone(r.buf[r.off:])))
	if r.err != nil {
		src = io.MultiReader(src, errReader{r.err})
	} else {
		src = io.MultiReader(src, r.src)
	}
	r.buf, r.off = nil, 0
	if r.max > 0 {
		r.lim = &frameLimit{r: src, n: r.max}
		src = r.lim
	}
	r.dec = json.NewDecoder(src)
}

// errReader returns err.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// decode reads the next message with the decoder.
func (r *reader) decode() (jsonrpc.Message, error) {
	var w jsonwire.Envelope
	err := r.dec.Decode(&w)
	if r.lim != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) && r.lim.hit {
			return nil, ErrMessageTooLarge
		}
		r.lim.reset(r.dec.Buffered())
	}
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		return nil, jsonwire.WireError(err)
	}
	return w.Message()
}

// frameLimit bounds the bytes read for one message once reader has
// handed the stream to encoding/json's decoder. The decoder reads
// ahead, so the count is of bytes read from the stream since the end of
// the previous message, including any of the next message already
// buffered: the bound is exact to within the decoder's read size.
type frameLimit struct {
	r   io.Reader
	n   int // the bound
	got int // bytes read for the current message
	hit bool
}

func (f *frameLimit) Read(p []byte) (int, error) {
	if f.got >= f.n {
		f.hit = true
		return 0, io.ErrUnexpectedEOF
	}
	if len(p) > f.n-f.got {
		p = p[:f.n-f.got]
	}
	n, err := f.r.Read(p)
	f.got += n
	return n, err
}

// reset starts the count of a new message, crediting the bytes the
// decoder has already buffered past the previous one.
func (f *frameLimit) reset(buffered io.Reader) {
	rest := 0
	if b, ok := buffered.(*bytes.Reader); ok {
		rest = b.Len()
	}
	f.got = rest
}
