package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/voltmcp/voltmcp/internal/testwait"
)

// TestRecentCalls follows calls through a server's recent calls: a call
// is there as started while it runs, with the id of its events, and ends
// in place (completed, cancelled); refused calls are there too; the list
// is bounded, newest first, in the summaries, and read back from the
// audit log by an engine that made none of them; nothing secret is in it.
func TestRecentCalls(t *testing.T) {
	t.Parallel()
	const canary = "canary-recent-5f0c2b9e41d7"
	opts := workspace(t, map[string]server{
		"s": stdio("behave", server{"env": map[string]string{"API_TOKEN": "${env:RECENT_CANARY}"}}),
	}, nil)
	opts.LookupEnv = func(name string) (string, bool) {
		if name == "RECENT_CANARY" {
			return canary, true
		}
		return "", false
	}
	opts.RecentCalls = 6
	e := start(t, opts)
	ctx := testwait.Context(t)
	events, stop := e.Subscribe(1024)
	defer stop()

	// A call in flight: started, with its events' id.
	callCtx, cancel := context.WithCancel(ctx)
	done := make(chan GatewayResult, 1)
	go func() {
		done <- e.Gateway(callCtx, GatewayInput{Action: "call", Server: "s", Tool: "slow", Arguments: map[string]any{"ms": 600000}})
	}()
	evs := eventsUntil(t, events, "the slow call's start", func(ev Event) bool { return ev.Type == EventCallStart })
	started := evs[len(evs)-1]
	calls, err := e.RecentCalls("s")
	if err != nil || len(calls) != 1 {
		t.Fatalf("recent calls %+v, %v", calls, err)
	}
	if c := calls[0]; c.ID != started.CallID || c.Status != "started" || c.Tool != "slow" || c.Server != "s" || c.Risk == "" || c.Timestamp.IsZero() {
		t.Errorf("the call in flight: %+v (start event %+v)", c, started)
	}
	// Cancelled by its caller: the same entry, ended.
	cancel()
	<-done
	eventsUntil(t, events, "the slow call's end", func(ev Event) bool { return ev.Type == EventCallEnd })
	calls, _ = e.RecentCalls("s")
	if c := calls[0]; len(calls) != 1 || c.ID != started.CallID || c.Status != "cancelled" || c.Outcome != "error" || c.Reason == "" {
		t.Errorf("the cancelled call: %+v", calls)
	}

	// Completed, failed at the tool, refused (with a secret in the tool
	// name the caller asked for).
	for _, in := range []GatewayInput{
		{Action: "call", Server: "s", Tool: "echo", Arguments: map[string]any{"text": "hello"}},
		{Action: "call", Server: "s", Tool: "fail", Arguments: map[string]any{}},
		{Action: "call", Server: "s", Tool: "tool-" + canary},
		{Action: "call", Server: "s", Tool: "echo", ArgumentsJSON: "[1]"},
	} {
		gw(t, e, in)
	}
	calls, _ = e.RecentCalls("s")
	var got []string
	for _, c := range calls {
		got = append(got, c.Tool+":"+c.Status+":"+c.Outcome)
	}
	if want := "[echo:failed:invalid tool-[REDACTED]:failed:invalid fail:failed: echo:completed: slow:cancelled:error]"; strings.Join(got, " ") != strings.Trim(want, "[]") {
		t.Fatalf("recent calls %v, want %s", got, want)
	}
	if c := calls[3]; c.OutputBytes != int64(len("hello")) || c.DurationMs < 0 || c.Reason != "" {
		t.Errorf("the completed call: %+v", c)
	}
	if c := calls[1]; !strings.Contains(c.Reason, "has no tool") || c.Risk != RiskUnknown {
		t.Errorf("the unknown tool: %+v", c)
	}
	data, _ := json.Marshal(calls)
	evs = eventsUntil(t, events, "the last call's end", func(ev Event) bool { return ev.Type == EventCallEnd && ev.Outcome == "invalid" && ev.Tool == "echo" })
	evData, _ := json.Marshal(evs)
	for what, s := range map[string]string{"recent calls": string(data), "events": string(evData)} {
		if strings.Contains(s, canary) {
			t.Errorf("the %s hold the secret: %s", what, s)
		}
	}
	if strings.Contains(string(data), "hello") {
		t.Errorf("a recent call holds an argument: %s", data)
	}

	// Bounded: the latest 6, newest first.
	for range 3 {
		gw(t, e, GatewayInput{Action: "call", Server: "s", Tool: "echo", Arguments: map[string]any{"text": "x"}})
	}
	calls, _ = e.RecentCalls("s")
	if len(calls) != 6 || calls[0].Tool != "echo" || calls[5].Tool != "fail" || !calls[0].Timestamp.After(calls[5].Timestamp) {
		t.Errorf("after 8 calls, keeping 6: %+v", calls)
	}
	sum, err := e.Server("s")
	if err != nil || len(sum.RecentCalls) != 6 || sum.RecentCalls[0].ID != calls[0].ID {
		t.Errorf("Server's recent calls: %+v %v", sum.RecentCalls, err)
	}
	all := e.Servers()
	if len(all) != 1 || len(all[0].RecentCalls) != SummaryRecentCalls || all[0].RecentCalls[0].ID != calls[0].ID {
		t.Errorf("Servers' recent calls: %+v", all)
	}
	st := gw(t, e, GatewayInput{Action: "status", Server: "s"})
	if s, ok := st.Data.(ServerSummary); !ok || len(s.RecentCalls) != SummaryRecentCalls {
		t.Errorf("the status action's recent calls: %+v", st.Data)
	}
	if _, err := e.RecentCalls("nowhere"); !errors.Is(err, ErrUnknownServer) {
		t.Errorf("an unknown server: %v", err)
	}

	// Another engine made none of them, and reads them from the log:
	// the same ids, newest first.
	e.Close()
	opts.Passive = true
	e2 := start(t, opts)
	if mine, _ := e2.RecentCalls("s"); len(mine) != 0 {
		t.Errorf("a new engine's own calls: %+v", mine)
	}
	logged, err := e2.LoggedRecentCalls("s")
	if err != nil || len(logged) != 6 {
		t.Fatalf("logged recent calls: %+v %v", logged, err)
	}
	for i, c := range logged {
		if c.ID != calls[i].ID || c.Tool != calls[i].Tool || c.Status != calls[i].Status || c.Outcome != calls[i].Outcome {
			t.Errorf("logged %d: %+v, made %+v", i, c, calls[i])
		}
	}
	data, _ = json.Marshal(logged)
	if strings.Contains(string(data), canary) {
		t.Errorf("the logged calls hold the secret: %s", data)
	}
	if _, err := e2.LoggedRecentCalls("nowhere"); !errors.Is(err, ErrUnknownServer) {
		t.Errorf("an unknown server: %v", err)
	}
}
