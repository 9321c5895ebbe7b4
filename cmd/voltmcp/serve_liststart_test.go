package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestServeListsUnlistedServersAtStart runs `voltmcp serve --http` on a
// fresh home with a project whose lazy server was never listed: the
// agent's first search finds its echo tool, listed in the background at
// start, and the server is stopped again (cold) after its listing. With
// settings.listAtStart false the first search finds nothing and says the
// server was never listed.
func TestServeListsUnlistedServersAtStart(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(map[bool]string{true: "on", false: "off"}[on], func(t *testing.T) {
			home, project := t.TempDir(), benchProject(t)
			if !on {
				userSettings(t, home, map[string]any{"listAtStart": false})
			}
			url, tokenFile, stderr := startServeHTTP(t, home, project)
			if url == "" {
				t.Fatalf("serve did not start:\n%s", stderr)
			}
			b, err := os.ReadFile(tokenFile)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url,
				HTTPClient: &http.Client{Transport: headerTransport{"Authorization", "Bearer " + strings.TrimSpace(string(b))}}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			gateway := func(args map[string]any) map[string]any {
				t.Helper()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp", Arguments: args})
				if err != nil || res.IsError || len(res.Content) == 0 {
					t.Fatalf("%v: %v %+v", args, err, res)
				}
				var out map[string]any
				if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &out); err != nil {
					t.Fatalf("%v: %v", args, err)
				}
				return out
			}
			search := map[string]any{"action": "search", "query": "echo"}
			found := func(r map[string]any) bool {
				ms, _ := r["matches"].([]any)
				for _, m := range ms {
					if m, _ := m.(map[string]any); m["server"] == "up" && m["tool"] == "echo" {
						return true
					}
				}
				return false
			}
			r := gateway(search)
			if !on {
				if found(r) || !strings.Contains(r["hint"].(string), "never been listed") {
					t.Fatalf("listAtStart false: the first search %v", r)
				}
				return
			}
			if !found(r) {
				// On a loaded machine the listing may outlast the
				// search's bounded wait: the note must say so, and a
				// later search finds the tool.
				note, _ := r["note"].(string)
				if !strings.Contains(note, "still being listed") {
					t.Fatalf("the first search found nothing and says nothing of a listing: %v", r)
				}
				t.Logf("first search: %s", note)
				for !found(r) {
					if ctx.Err() != nil {
						t.Fatalf("never found echo: %v", r)
					}
					time.Sleep(100 * time.Millisecond)
					r = gateway(search)
				}
			}
			// The lazy server is stopped again after its listing.
			for {
				l := gateway(map[string]any{"action": "list_servers"})
				s := l["servers"].([]any)[0].(map[string]any)
				if s["status"] == "cold" {
					break
				}
				if ctx.Err() != nil {
					t.Fatalf("server after its listing at start: %v", s)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}
