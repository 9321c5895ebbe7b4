package mcptest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
)

// ServeRawEvents serves raw mode mode over Streamable HTTP at the
// returned URL as [ServeStreamableOnly] does, but answers each request
// with an event stream: a comment event, then the answer as one
// "message" event. Its modes are ServeStreamableOnly's raw ones.
func ServeRawEvents(t testing.TB, mode string) string {
	t.Helper()
	if !isRawHTTPMode(mode) {
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
		out, ok := srv.answerBody(w, req)
		if !ok {
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = fmt.Fprintf(w, ": mcptest %s\n\nevent: message\ndata: %s\n\n", mode, out)
	}))
}

// answerBody reads the message a POST carries and returns the raw
// server's answer, encoded. It reports false when it has answered the
// POST itself: with an error, or 202 Accepted for a message that needs
// no answer.
func (s *rawServer) answerBody(w http.ResponseWriter, req *http.Request) ([]byte, bool) {
	data, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	if err != nil {
		http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
		return nil, false
	}
	resp, ok := s.respond(bytes.TrimSpace(data), func(any) error { return nil })
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
			out := make(chan []byte, 64)
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
					_, _ = fmt.Fprintf(w, "event: message\ndata: %s\n\n", msg)
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
			msg, ok := srv.answerBody(w, req)
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
