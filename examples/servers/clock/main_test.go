package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fixed is the time the tests' clock reads.
var fixed = time.Date(2025, time.March, 1, 9, 30, 0, 0, time.UTC)

// call serves a clock server in memory, calls one tool and returns its
// structured output, or the text of a tool error.
func call(t *testing.T, tool string, args map[string]any) (timeOutput, string) {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := newServer(func() time.Time { return fixed }).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cs.Close(); ss.Wait() }()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if res.IsError {
		return timeOutput{}, text
	}
	var out timeOutput
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		t.Fatal(err)
	}
	return out, ""
}

func TestNow(t *testing.T) {
	if out, _ := call(t, "now", map[string]any{}); out.Time != "2025-03-01T09:30:00Z" || out.Weekday != "Saturday" || out.Unix != fixed.Unix() {
		t.Errorf("now: %+v", out)
	}
	if _, err := time.LoadLocation("Asia/Tokyo"); err == nil {
		if out, _ := call(t, "now", map[string]any{"timezone": "Asia/Tokyo"}); out.Time != "2025-03-01T18:30:00+09:00" || out.Timezone != "Asia/Tokyo" {
			t.Errorf("now in Tokyo: %+v", out)
		}
		if _, msg := call(t, "now", map[string]any{"timezone": "Mars/Olympus_Mons"}); !strings.Contains(msg, "unknown time zone") {
			t.Errorf("unknown zone: %q", msg)
		}
	}
}

func TestNowWithoutTZData(t *testing.T) {
	loadLocation = func(string) (*time.Location, error) { return nil, errors.New("no tzdata") }
	t.Cleanup(func() { loadLocation = time.LoadLocation })
	out, msg := call(t, "now", map[string]any{"timezone": "Asia/Tokyo"})
	if msg != "" || out.Timezone != "UTC" || !strings.Contains(out.Note, "time zone database is missing") {
		t.Errorf("now without tzdata: %+v %q", out, msg)
	}
}

func TestAddDuration(t *testing.T) {
	if out, _ := call(t, "add_duration", map[string]any{"time": "2025-03-01T23:00:00+01:00", "duration": "1h30m"}); out.Time != "2025-03-02T00:30:00+01:00" || out.Timezone != "UTC+01:00" || out.Weekday != "Sunday" {
		t.Errorf("add_duration: %+v", out)
	}
	if out, _ := call(t, "add_duration", map[string]any{"time": "now", "duration": "-30m"}); out.Time != "2025-03-01T09:00:00Z" {
		t.Errorf("add_duration now: %+v", out)
	}
	if _, msg := call(t, "add_duration", map[string]any{"time": "tomorrow", "duration": "1h"}); !strings.Contains(msg, "not RFC 3339") {
		t.Errorf("bad time: %q", msg)
	}
	if _, msg := call(t, "add_duration", map[string]any{"time": "now", "duration": "2 days"}); !strings.Contains(msg, "not a Go duration") {
		t.Errorf("bad duration: %q", msg)
	}
}
