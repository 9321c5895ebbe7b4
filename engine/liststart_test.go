package engine

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/engine/audit"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// TestListUnlistedThenActAtOnce: actions on a server made the moment its
// listing at start is queued (before it begins, while it runs, or as the
// lazy server is being stopped again) each succeed, decided on what the
// listing found, and none is refused because the listing raced it
// (errListedMeanwhile). Many calls at once share the one listing.
func TestListUnlistedThenActAtOnce(t *testing.T) {
	t.Parallel()
	echo := GatewayInput{Action: "call", Server: "up", Tool: "echo", Arguments: map[string]any{"text": "hi"}}
	for _, tt := range []struct {
		name string
		in   GatewayInput
		n    int
	}{
		{"call", echo, 1},
		{"calls", echo, 8},
		{"describe", GatewayInput{Action: "describe", Server: "up", Tool: "echo"}, 1},
		{"list_resources", GatewayInput{Action: "list_resources", Server: "up"}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for round := range 3 {
				e := start(t, workspace(t, map[string]server{"up": stdio("behave", nil)}, nil))
				if got := e.ListUnlisted(testwait.Context(t)); !slices.Equal(got, []string{"up"}) {
					t.Fatalf("queued %v", got)
				}
				results := make(chan GatewayResult, tt.n)
				for range tt.n {
					go func() { results <- e.Gateway(testwait.Context(t), tt.in) }()
				}
				for range tt.n {
					if r := <-results; r.IsError {
						t.Errorf("round %d: %s", round, r.Text)
					}
				}
				e.Close()
			}
		})
	}
}

// TestListUnlistedCallDecidedAsTheListingEnds: a call whose decision is
// still being made when the listing at start ends (a Decide hook that
// waits for that end) is sent on the session the listing opened: the
// lazy server is not stopped under it, and the call is not refused as
// listed meanwhile.
func TestListUnlistedCallDecidedAsTheListingEnds(t *testing.T) {
	t.Parallel()
	opts := workspace(t, map[string]server{"up": stdio("behave", nil)}, nil)
	var e *Engine
	opts.Decide = func(in ToolInput) ToolDecision {
		if in.Quarantined || e == nil {
			return defaultDecide(in) // the listing's own question
		}
		s, err := e.supervisor(in.Server.ID)
		if err != nil {
			return ToolDecision{Reasons: []string{err.Error()}}
		}
		for ctx := testwait.Context(t); ctx.Err() == nil; time.Sleep(5 * time.Millisecond) {
			s.mu.Lock()
			ended := s.atStart == nil
			s.mu.Unlock()
			if ended {
				break
			}
		}
		return defaultDecide(in)
	}
	e = start(t, opts)
	e.ListUnlisted(testwait.Context(t))
	// The listing begins before the call comes.
	for ctx := testwait.Context(t); ; time.Sleep(5 * time.Millisecond) {
		if sum, _ := e.Server("up"); sum.Status != StatusCold || ctx.Err() != nil {
			break
		}
	}
	r := e.Gateway(testwait.Context(t), GatewayInput{Action: "call", Server: "up", Tool: "echo", Arguments: map[string]any{"text": "hi"}})
	if r.IsError {
		t.Errorf("the call at start: %s", r.Text)
	}
	s, err := e.supervisor("up")
	if err != nil {
		t.Fatal(err)
	}
	if l := s.currentListing(); l.num != 1 || !l.connected {
		t.Errorf("after the call: listing %d, connected %v; want the listing at start's session, still open", l.num, l.connected)
	}
}

// TestListUnlistedStopsLazyServers: a lazy server listed at start is
// stopped again, its tools cached; an eager one stays running; the next
// engine finds the cache and lists nothing.
func TestListUnlistedStopsLazyServers(t *testing.T) {
	t.Parallel()
	opts := workspace(t, map[string]server{"lazy": stdio("behave", nil), "eager": stdio("behave", server{"lifecycle": "eager"})}, nil)
	e := start(t, opts)
	e.ListUnlisted(testwait.Context(t))
	if r := gw(t, e, GatewayInput{Action: "search", Query: "echo"}); r.IsError {
		t.Fatal(r.Text)
	}
	// Cold before its listing too: cold with its tools, after.
	ctx := testwait.Context(t)
	for {
		sum, err := e.Server("lazy")
		if err != nil {
			t.Fatal(err)
		}
		if sum.Status == StatusCold && sum.MetadataFetchedAt != nil && sum.ToolCounts.Cached > 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("lazy server after its listing at start: %+v", sum)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if sum := waitStatus(t, e, "eager", StatusReady); sum.ToolCounts.Cached == 0 {
		t.Errorf("eager server: %+v", sum)
	}
	e.Close()
	e = start(t, opts)
	if got := e.ListUnlisted(testwait.Context(t)); len(got) != 0 {
		t.Errorf("listed again with a cache: %v", got)
	}
}

// TestListUnlistedQueuesOnlyWhatMayStart: only enabled servers of a
// trusted config are listed at start, and nothing is with
// settings.listAtStart or settings.enabled false.
func TestListUnlistedQueuesOnlyWhatMayStart(t *testing.T) {
	t.Parallel()
	servers := map[string]server{"on": stdio("behave", nil), "off": stdio("behave", server{"enabled": false})}
	for _, tt := range []struct {
		name     string
		settings map[string]any
		approve  bool
		want     []string
	}{
		{"trusted", nil, true, []string{"on"}},
		{"untrusted project", nil, false, nil},
		{"listAtStart false", map[string]any{"listAtStart": false}, true, nil},
		{"enabled false", map[string]any{"enabled": false}, true, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opts := workspace(t, servers, tt.settings)
			opts.Approve = tt.approve
			e := start(t, opts)
			if got := e.ListUnlisted(testwait.Context(t)); !slices.Equal(got, tt.want) {
				t.Errorf("queued %v, want %v", got, tt.want)
			}
		})
	}
}

// TestListUnlistedHangingAndFailingServers: a server that hangs in its
// listing holds neither the other servers' listings nor a search beyond
// its bounded wait, which names it as still being listed; a server that
// fails to list says why in its status.
func TestListUnlistedHangingAndFailingServers(t *testing.T) {
	t.Parallel()
	e := start(t, workspace(t, map[string]server{
		"up":   stdio("behave", nil),
		"hang": stdio("hang-init", server{"connectTimeoutMs": 600000}),
		"bad":  {"command": filepath.Join(t.TempDir(), "no-such-server")},
	}, nil))
	e.ListUnlisted(testwait.Context(t))
	ctx := testwait.Context(t)
	for first := true; ; first = false {
		r := e.Gateway(ctx, GatewayInput{Action: "search", Query: "echo"})
		data, _ := r.Data.(map[string]any)
		note, _ := data["note"].(string)
		if i := strings.Index(note, " still being listed"); first && (i < 0 || !strings.Contains(note[:i], "hang")) {
			t.Errorf("the first search's note does not name hang as still being listed: %q", note)
		}
		matches, _ := data["matches"].([]SearchMatch)
		if slices.ContainsFunc(matches, func(m SearchMatch) bool { return m.Server == "up" && m.Tool == "echo" }) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("never found up's echo: %s", r.Text)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if sum := waitStatus(t, e, "bad", StatusError); !strings.Contains(sum.LastError, "no-such-server") {
		t.Errorf("bad's last error: %q", sum.LastError)
	}
	if sum, _ := e.Server("hang"); sum.Status != StatusConnecting {
		t.Errorf("hang: %s", sum.Status)
	}
}

// TestListUnlistedHoldsAPinChange: a server whose metadata cache is gone
// but whose pins are kept is listed at start; a call made at once waits
// for that listing, and the escalation it finds holds the call.
func TestListUnlistedHoldsAPinChange(t *testing.T) {
	t.Parallel()
	srv, write := hintsServer(t, nil, map[string]string{"records": `{"readOnlyHint":true}`})
	opts := workspace(t, map[string]server{"db": srv}, nil)
	opts.PolicyDirs = []string{writePolicy(t, "team.rego", denyDestructive)}
	in := GatewayInput{Action: "call", Server: "db", Tool: "records", Arguments: map[string]any{}}
	e := start(t, opts)
	if r := e.Gateway(testwait.Context(t), in); r.IsError {
		t.Fatalf("first run: %s", r.Text)
	}
	e.Close()
	write(map[string]string{"records": `{"destructiveHint":true}`})
	if err := os.Remove(cachePath(t, opts, "db")); err != nil {
		t.Fatal(err)
	}
	since := time.Now()
	e = start(t, opts)
	if got := e.ListUnlisted(testwait.Context(t)); !slices.Equal(got, []string{"db"}) {
		t.Fatalf("queued %v", got)
	}
	if r := e.Gateway(testwait.Context(t), in); !r.IsError || !strings.Contains(r.Text, "held for approval") {
		t.Errorf("the call at start: %s", r.Text)
	}
	e.Close()
	var kinds []string
	for _, rec := range auditRecords(t, opts, audit.Query{Server: "db", Since: since}) {
		kinds = append(kinds, rec.Kind+"/"+rec.Status)
	}
	if got := strings.Join(kinds, " "); got != "pin_change/held call/denied" {
		t.Errorf("audit: %s", got)
	}
}
