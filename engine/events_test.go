package engine

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voltmcp/voltmcp/internal/oauthtest"
	"github.com/voltmcp/voltmcp/internal/testwait"
)

// nextEvent reads one event, failing the test when none comes.
func nextEvent(t *testing.T, ch <-chan Event) Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("the event channel closed")
		}
		return ev
	case <-time.After(time.Until(testwait.Deadline(t))):
		t.Fatal("no event came")
	}
	return Event{}
}

// eventsUntil reads events until one satisfies done, and returns all it
// read, that one included.
func eventsUntil(t *testing.T, ch <-chan Event, what string, done func(Event) bool) []Event {
	t.Helper()
	var evs []Event
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("the event channel closed before %s", what)
			}
			evs = append(evs, ev)
			if done(ev) {
				return evs
			}
		case <-time.After(time.Until(testwait.Deadline(t))):
			t.Fatalf("no %s among %d events: %s", what, len(evs), eventTypes(evs))
		}
	}
}

func eventTypes(evs []Event) string {
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "\n  %d %s %s %s %s %s", ev.Seq, ev.Type, ev.Server, ev.Status, ev.CallStatus, ev.Outcome)
	}
	return b.String()
}

// contiguous checks that evs continue the sequence after seq: each next
// event has the next seq, or is a gap that counts exactly the seqs it
// skips. It returns the last seq.
func contiguous(t *testing.T, seq uint64, evs []Event) uint64 {
	t.Helper()
	for _, ev := range evs {
		switch {
		case ev.Type == EventGap && ev.Missed > 0 && ev.Seq+1-ev.Missed == seq+1:
			seq = ev.Seq
		case ev.Type != EventGap && ev.Seq == seq+1:
			seq++
		default:
			t.Fatalf("after seq %d: %+v", seq, ev)
		}
	}
	return seq
}

// TestSpecEventsArePublished runs a real server and an OAuth server
// through what the spec's seven events report, and checks that each is
// published where it happens, numbered one after another: status moves,
// discovery, a call's start and end with one id, a refused call's too,
// enable and disable (a reload), an authorization and a logout.
func TestSpecEventsArePublished(t *testing.T) {
	t.Parallel()
	f := oauthtest.New(t, nil)
	opts2 := workspace(t, map[string]server{"s": stdio("behave", nil),
		"o": {"url": f.MCPURL, "transport": "streamable-http", "connectTimeoutMs": 5000, "auth": loopbackOK}}, nil)
	opts2.AgentDir = filepath.Join(opts2.Home, ".volt", "agent")
	var calls atomic.Int32
	opts2.Authorize = headless(t, &calls)
	e := start(t, opts2)
	// Nothing was subscribed before this: the events published at start
	// are numbered all the same, and replayed from the first.
	events, stop := e.SubscribeSince(0, 4096)
	defer stop()
	ctx := testwait.Context(t)
	seq := e.bus.b.Seq()

	if err := e.Connect(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	evs := eventsUntil(t, events, "s ready", func(ev Event) bool {
		return ev.Type == EventServerStatusChanged && ev.Server == "s" && ev.Status == StatusReady
	})
	var moves []string
	for _, ev := range evs {
		if ev.Type == EventServerStatusChanged {
			moves = append(moves, string(ev.Previous)+">"+string(ev.Status))
		}
	}
	if want := "[cold>connecting connecting>connected connected>discovering discovering>ready]"; fmt.Sprint(moves) != want {
		t.Errorf("status moves %v, want %s", moves, want)
	}
	seq = contiguous(t, seq, evs)
	evs = eventsUntil(t, events, "servers changed by the discovery", func(ev Event) bool { return ev.Type == EventServersChanged && ev.Server == "s" })
	seq = contiguous(t, seq, evs)

	// A call, and calls refused before they reach the server: each has a
	// start and an end with its id, the spec's status and voltmcp's.
	for _, tc := range []struct {
		name    string
		in      GatewayInput
		tool    string
		risk    Risk
		status  string
		outcome string
	}{
		{"completed", GatewayInput{Action: "call", Server: "s", Tool: "echo", Arguments: map[string]any{"text": "hi"}}, "echo", "", "completed", ""},
		{"tool error", GatewayInput{Action: "call", Server: "s", Tool: "fail", Arguments: map[string]any{}}, "fail", "", "failed", ""},
		{"unknown tool", GatewayInput{Action: "call", Server: "s", Tool: "nope\x1b[31m", Arguments: map[string]any{}}, "nope", RiskUnknown, "failed", "invalid"},
		{"bad arguments", GatewayInput{Action: "call", Server: "s", Tool: "echo", ArgumentsJSON: "[1]"}, "echo", RiskUnknown, "failed", "invalid"},
	} {
		r := gw(t, e, tc.in)
		evs := eventsUntil(t, events, tc.name+" call end", func(ev Event) bool { return ev.Type == EventCallEnd })
		seq = contiguous(t, seq, evs)
		var start, end Event
		for _, ev := range evs {
			switch ev.Type {
			case EventCallStart:
				start = ev
			case EventCallEnd:
				end = ev
			}
		}
		if start.CallID == "" || start.CallID != end.CallID || !strings.HasPrefix(end.CallID, "call_") || start.Seq >= end.Seq {
			t.Errorf("%s: start %+v, end %+v", tc.name, start, end)
		}
		if end.Server != "s" || end.Tool != tc.tool || end.CallStatus != tc.status || end.Outcome != tc.outcome || start.CallStatus != "started" {
			t.Errorf("%s: end %+v (answer %.200q)", tc.name, end, r.Text)
		}
		if end.Risk == "" || start.Risk != end.Risk || (tc.risk != "" && end.Risk != tc.risk) {
			t.Errorf("%s: risk %q at start, %q at end, want %q", tc.name, start.Risk, end.Risk, tc.risk)
		}
	}
	// A call of no server there is has no events: there is no server to
	// tell of (the audit log records it).
	gw(t, e, GatewayInput{Action: "call", Server: "nowhere", Tool: "echo"})

	// Disable and enable: a reload, with the status moves.
	if err := e.SetEnabled(ctx, "s", false); err != nil {
		t.Fatal(err)
	}
	evs = eventsUntil(t, events, "servers changed by disable", func(ev Event) bool { return ev.Type == EventServersChanged && ev.Server == "" })
	seq = contiguous(t, seq, evs)
	// The server moves from the old supervisor's status to the new
	// one's, once; the old one's moves as it stops are not the server's.
	statusMoves := func(evs []Event) []string {
		var out []string
		for _, ev := range evs {
			if ev.Type == EventServerStatusChanged && ev.Server == "s" {
				out = append(out, string(ev.Previous)+">"+string(ev.Status))
			}
		}
		return out
	}
	if got := statusMoves(evs); fmt.Sprint(got) != "[ready>disabled]" {
		t.Errorf("disabling s moved %v: %s", got, eventTypes(evs))
	}
	if err := e.SetEnabled(ctx, "s", true); err != nil {
		t.Fatal(err)
	}
	evs = eventsUntil(t, events, "servers changed by enable", func(ev Event) bool { return ev.Type == EventServersChanged && ev.Server == "" })
	seq = contiguous(t, seq, evs)
	if got := statusMoves(evs); fmt.Sprint(got) != "[disabled>cold]" {
		t.Errorf("enabling s moved %v: %s", got, eventTypes(evs))
	}

	// An authorization, then a logout.
	if err := e.Connect(ctx, "o"); err != nil {
		t.Fatal(err)
	}
	evs = eventsUntil(t, events, "o ready", func(ev Event) bool {
		return ev.Type == EventServerStatusChanged && ev.Server == "o" && ev.Status == StatusReady
	})
	seq = contiguous(t, seq, evs)
	var auth []string
	for _, ev := range evs {
		if ev.Type == EventAuthRequest || ev.Type == EventAuthUpdate {
			auth = append(auth, string(ev.Type)+":"+ev.AuthStatus)
		}
	}
	if fmt.Sprint(auth) != "[mcp_auth_request: mcp_auth_update:authorized]" {
		t.Errorf("auth events %v", auth)
	}
	if res, err := e.Logout(ctx, "o"); err != nil || !res.Removed {
		t.Fatalf("logout: %+v %v", res, err)
	}
	evs = eventsUntil(t, events, "the logout's auth update", func(ev Event) bool { return ev.Type == EventAuthUpdate })
	contiguous(t, seq, evs)
	if last := evs[len(evs)-1]; last.Server != "o" || last.AuthStatus != "logged_out" {
		t.Errorf("logout event %+v", last)
	}

	// The wire form of an event names its seq.
	b, _ := json.Marshal(evs[len(evs)-1])
	if !strings.Contains(string(b), fmt.Sprintf(`"seq":%d,"type":"mcp_auth_update"`, evs[len(evs)-1].Seq)) {
		t.Errorf("json %s", b)
	}
}

// TestSubscribeSinceUnderConcurrentCalls: while calls through the
// gateway publish events, subscribers come back with a seq they saw (or
// a later one) and get every event after it once and in order, the kept
// ones replayed then the live ones, with no hole and no repeat between
// the two; a subscriber that asks for events no longer kept gets one gap
// that counts them first.
func TestSubscribeSinceUnderConcurrentCalls(t *testing.T) {
	t.Parallel()
	opts := workspace(t, map[string]server{"s": stdio("behave", nil)}, nil)
	opts.EventBuffer = 64 // small, so that some since values are gone
	e := start(t, opts)
	ctx := testwait.Context(t)
	if err := e.Connect(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	const callers, each = 4, 40
	var wg sync.WaitGroup
	var done atomic.Bool
	for range callers {
		wg.Go(func() {
			for range each {
				if r := e.Gateway(ctx, GatewayInput{Action: "call", Server: "s", Tool: "echo", Arguments: map[string]any{"text": "x"}}); r.IsError {
					t.Errorf("call: %s", r.Text)
					return
				}
			}
		})
	}
	type result struct {
		since uint64
		evs   []Event
	}
	results := make(chan result, 64)
	var subs sync.WaitGroup
	for i := range 24 {
		subs.Go(func() {
			// Each comes in at another point of the calls.
			testwait.For(t, "the calls to publish", func() bool { return e.bus.b.Seq() >= uint64(i*12) })
			since := e.bus.b.Seq()
			switch i % 3 {
			case 1:
				since -= min(since, 20) // kept, most likely
			case 2:
				since -= min(since, 200) // gone, most likely
			}
			if since == 0 {
				since = 1 // 0 would mean "live only"
			}
			ch, stop := e.SubscribeSince(since, 8)
			defer stop()
			var evs []Event
			// Read until the calls are done and every event published
			// until then was seen.
			for {
				ev := nextEvent(t, ch)
				evs = append(evs, ev)
				if done.Load() && ev.Seq >= e.bus.b.Seq() && ev.Type != EventGap {
					break
				}
			}
			results <- result{since, evs}
		})
	}
	wg.Wait()
	done.Store(true)
	// One more event, so that every subscriber reads past the calls.
	e.bus.publish(Event{Type: EventServersChanged})
	subs.Wait()
	close(results)
	gaps := 0
	for r := range results {
		contiguous(t, r.since, r.evs)
		for _, ev := range r.evs {
			if ev.Type == EventGap {
				gaps++
			}
		}
	}
	if gaps == 0 {
		t.Error("no subscriber asked for events no longer kept")
	}
}

// TestSlowSubscriberNeverSlowsPublishing: a subscriber that never reads
// while 10,000 events are published does not hold up the engine; when it
// reads it gets the events its buffer held, one gap that counts the ones
// lost, the last kept ones in order, then a call's events live.
func TestSlowSubscriberNeverSlowsPublishing(t *testing.T) {
	t.Parallel()
	opts := workspace(t, map[string]server{"s": stdio("behave", nil)}, nil)
	e := start(t, opts)
	ctx := testwait.Context(t)
	if err := e.Connect(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	slow, stop := e.Subscribe(16)
	defer stop()
	first := e.bus.b.Seq() + 1
	for range 10000 {
		e.bus.publish(Event{Type: EventServersChanged, Server: "s"})
	}
	// Publishing went on: a call is answered with the subscriber full.
	if r := gw(t, e, GatewayInput{Action: "call", Server: "s", Tool: "echo", Arguments: map[string]any{"text": "x"}}); r.IsError {
		t.Fatal(r.Text)
	}
	evs := eventsUntil(t, slow, "the call's end", func(ev Event) bool { return ev.Type == EventCallEnd })
	contiguous(t, first-1, evs)
	var gaps []Event
	for _, ev := range evs {
		if ev.Type == EventGap {
			gaps = append(gaps, ev)
		}
	}
	if len(gaps) != 1 {
		t.Fatalf("gaps %+v, want one", gaps)
	}
	// 10,000 events: 16 in the buffer, at most one in hand, 1,000 kept.
	if g := gaps[0]; g.Missed < 10000-DefaultEventBuffer-17 || g.Missed > 10000-DefaultEventBuffer || g.Time.IsZero() {
		t.Errorf("gap %+v", g)
	}
	b, _ := json.Marshal(gaps[0])
	if !strings.Contains(string(b), fmt.Sprintf(`{"seq":%d,"type":"gap",`, gaps[0].Seq)) || !strings.Contains(string(b), fmt.Sprintf(`"missed":%d`, gaps[0].Missed)) {
		t.Errorf("gap json %s", b)
	}
	// What follows the gap is what the engine kept: the last of the
	// 10,000, then the call's.
	after := evs[slices.IndexFunc(evs, func(ev Event) bool { return ev.Type == EventGap })+1:]
	if len(after) != DefaultEventBuffer {
		t.Errorf("%d kept events after the gap, want %d", len(after), DefaultEventBuffer)
	}
}

// TestEventsAfterCloseAreKept: the events a subscriber's channel holds
// stay readable after the engine closes, then the channel closes.
func TestEventsAfterCloseAreKept(t *testing.T) {
	t.Parallel()
	e := start(t, workspace(t, map[string]server{"s": stdio("behave", nil)}, nil))
	events, stop := e.Subscribe(64)
	defer stop()
	for range 10 {
		e.bus.publish(Event{Type: EventServersChanged})
	}
	e.Close()
	var seqs []uint64
	for ev := range events {
		seqs = append(seqs, ev.Seq)
	}
	if len(seqs) < 10 || !sort.SliceIsSorted(seqs, func(i, j int) bool { return seqs[i] < seqs[j] }) {
		t.Errorf("after close: %v", seqs)
	}
}

// BenchmarkPublish measures publishing one call event: numbering,
// stamping and keeping it, with no subscriber (serve's case) and with
// subscribers that read.
func BenchmarkPublish(b *testing.B) {
	ev := Event{Type: EventCallEnd, Server: "github", Tool: "search_issues", CallID: "call_0123456789abcdef01234567",
		Risk: RiskRead, CallStatus: "completed", DurationMs: 12}
	for _, readers := range []int{0, 1, 4} {
		b.Run(fmt.Sprintf("subscribers=%d", readers), func(b *testing.B) {
			bus := newBus(0)
			var wg sync.WaitGroup
			var stops []func()
			for range readers {
				ch, stop := bus.subscribe(0, 256)
				stops = append(stops, stop)
				wg.Go(func() {
					for range ch {
					}
				})
			}
			b.ReportAllocs()
			for b.Loop() {
				bus.publish(ev)
			}
			b.StopTimer()
			for _, stop := range stops {
				stop()
			}
			wg.Wait()
		})
	}
}

// BenchmarkEventLatency measures the time from publishing an event to a
// subscriber's receiving it, one event at a time, and reports the median
// and the 99th percentile.
func BenchmarkEventLatency(b *testing.B) {
	bus := newBus(0)
	ch, stop := bus.subscribe(0, 256)
	defer stop()
	took := make([]time.Duration, 0, b.N)
	got := make(chan time.Duration)
	go func() {
		for ev := range ch {
			got <- time.Since(ev.Time)
		}
	}()
	for b.Loop() {
		bus.publish(Event{Type: EventCallStart, Server: "github", Tool: "search_issues", CallID: "call_0123456789abcdef01234567", Time: time.Now()})
		took = append(took, <-got)
	}
	b.StopTimer()
	slices.Sort(took)
	if len(took) > 0 {
		b.ReportMetric(float64(took[len(took)/2].Nanoseconds())/1e3, "p50-µs")
		b.ReportMetric(float64(took[len(took)*99/100].Nanoseconds())/1e3, "p99-µs")
	}
}
