package mcptest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
)

// ServeRawEvents serves raw mode mode over Streamable HTTP at the
// returned URL as [ServeStreamableOnly] does, but answers each request
// with an event stream: a comment event, the messages the mode sends
// before its answer (the requests of flood-requests), then the answer,
// each as one "message" event. Its modes are ServeStreamableOnly's raw
// ones and flood-requests.
func ServeRawEvents(t testing.TB, mode string) string {
	t.Helper()
	if !isRawHTTPMode(mode) && mode != ModeFloodRequests {
		t.Fatalf("mcptest: mode %q cannot be served by ServeRawEvents", mode)
	}
	srv := &rawServer{mode: mode}
	h := newHTTPHarness(t)
	return h.serve(t, "/mcp", http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
			return
		}
		started := false
		event := func(msg []byte) error {
			if !started {
				started = true
				w.Header().Set("Content-Type", "text/event-stream")
				if _, err := fmt.Fprintf(w, ": mcptest %s\n\n", mode); err != nil {
					return err
				}
			}
			if err := writeEvent(w, msg); err != nil {
				return err
			}
			w.(http.Flusher).Flush()
			return nil
		}
		out, ok := srv.answerBody(w, req, func(msg any) error {
			data, err := marshalRaw(msg)
			if err != nil {
				return err
			}
			return event(data)
		})
		if !ok {
			return
		}
		_ = event(out)
	}))
}

// answerBody reads the message a POST carries and returns the raw
// server's answer, encoded; send writes the messages the mode sends
// before it. It reports false when it has answered the POST itself:
// with an error, or 202 Accepted for a message that needs no answer.
func (s *rawServer) answerBody(w http.ResponseWriter, req *http.Request, send func(any) error) ([]byte, bool) {
	data, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	if err != nil {
		http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
		return nil, false
	}
	resp, ok := s.respond(bytes.TrimSpace(data), send)
	if !ok {
		w.WriteHeader(http.StatusAccepted)
		return nil, false
	}
	out, err := marshalRaw(resp)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return nil, false
	}
	return out, true
}

// rawSSEHandler serves raw mode mode over legacy HTTP+SSE: a GET opens a
// session, whose stream names the endpoint for its POSTs (the URL with
// the session's id in the query) and then carries the answers to them,
// each a "message" event; a POST to it is accepted, and answered on the
// stream. Sessions end with their GET or when the harness stops.
func rawSSEHandler(mode string, stop <-chan struct{}) http.Handler {
	srv := &rawServer{mode: mode}
	var mu sync.Mutex
	sessions := map[string]chan []byte{}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch req.Method {
		case http.MethodGet:
			var b [8]byte
			_, _ = rand.Read(b[:])
			id := hex.EncodeToString(b[:])
			out := make(chan []byte) // a message at a time: a flood is held by the stream, not here
			mu.Lock()
			sessions[id] = out
			mu.Unlock()
			defer func() {
				mu.Lock()
				delete(sessions, id)
				mu.Unlock()
			}()
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = fmt.Fprintf(w, "event: endpoint\ndata: %s?sessionid=%s\n\n", req.URL.Path, id)
			w.(http.Flusher).Flush()
			for {
				select {
				case msg := <-out:
					_ = writeEvent(w, msg)
					w.(http.Flusher).Flush()
				case <-req.Context().Done():
					return
				case <-stop:
					return
				}
			}
		case http.MethodPost:
			mu.Lock()
			out, ok := sessions[req.URL.Query().Get("sessionid")]
			mu.Unlock()
			if !ok {
				http.NotFound(w, req)
				return
			}
			push := func(msg []byte) error {
				select {
				case out <- msg:
					return nil
				case <-req.Context().Done():
					return req.Context().Err()
				case <-stop:
					return errors.New("mcptest: stopped")
				}
			}
			msg, ok := srv.answerBody(w, req, func(m any) error {
				data, err := marshalRaw(m)
				if err != nil {
					return err
				}
				return push(data)
			})
			if !ok {
				return
			}
			select {
			case out <- msg:
				w.WriteHeader(http.StatusAccepted)
			case <-req.Context().Done():
			case <-stop:
			}
		default:
			w.Header().Set("Allow", "GET, POST")
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		}
	})
}

// writeEvent writes msg as one "message" event, without a copy of it (a
// flood of large ones is held by the stream, not by this process).
func writeEvent(w io.Writer, msg []byte) error {
	for _, b := range [][]byte{[]byte("event: message\ndata: "), msg, []byte("\n\n")} {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}
