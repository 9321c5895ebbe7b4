package transport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/internal/testwait"
)

// TestSSECloseEndsAnUnansweredPost closes a legacy SSE session while
// the client's reply to the server's ping is being posted to a server
// that never answers that POST, as the reference servers do for a
// session they have dropped: EndSession ends the POST, and the close,
// which waits for it, returns.
func TestSSECloseEndsAnUnansweredPost(t *testing.T) {
	events := make(chan string, 8)
	replyPosted := make(chan struct{})
	release := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "event: endpoint\ndata: /message\n\n")
			w.(http.Flusher).Flush()
			for {
				select {
				case e := <-events:
					fmt.Fprintf(w, "event: message\ndata: %s\n\n", e)
					w.(http.Flusher).Flush()
				case <-r.Context().Done():
					return
				}
			}
		case http.MethodPost:
			body, _ := io.ReadAll(r.Body)
			var msg struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			_ = json.Unmarshal(body, &msg)
			switch {
			case msg.Method == "initialize":
				w.WriteHeader(http.StatusAccepted)
				events <- `{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`
			case msg.Method == "notifications/initialized":
				w.WriteHeader(http.StatusAccepted)
				events <- `{"jsonrpc":"2.0","id":"ping-1","method":"ping"}`
			case bytes.Contains(body, []byte(`"ping-1"`)):
				// The reply to the ping: never answered.
				close(replyPosted)
				select {
				case <-release:
				case <-r.Context().Done():
				}
			default:
				w.WriteHeader(http.StatusAccepted)
			}
		}
	}))
	defer ts.Close()
	defer close(release) // before the server's close, which waits for its handlers
	ctx := testwait.Context(t)
	// Only EndSession can end the POST before the test's deadline.
	ht := &HeaderTransport{Base: http.DefaultTransport, Server: "s", SSEPostWait: time.Hour}
	client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
	cs, _, err := ConnectHTTP(ctx, client, ts.URL+"/sse", SSE, ht, nil, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-replyPosted:
	case <-ctx.Done():
		t.Fatal("the client did not reply to the ping")
	}
	// As the engine closes a session.
	closed := make(chan error, 1)
	go func() {
		ht.EndSession()
		closed <- cs.Close()
	}()
	select {
	case <-closed:
	case <-ctx.Done():
		t.Fatal("closing the session waited on a POST the server never answers")
	}
}
