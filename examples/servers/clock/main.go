// Command clock is a tiny MCP server over stdio with two read-only tools:
// now, the current time in a time zone, and add_duration, a time plus a
// duration.
package main

import (
	"context"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voltmcp/voltmcp/engine/pollio"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("clock: ")
	// Stdio through Go's poller: a goroutine blocked reading stdin can
	// stall the Go 1.26 and 1.27 runtimes for up to a minute (package pollio).
	in, out, restore := pollio.Stdio()
	err := newServer(time.Now).Run(context.Background(), &mcp.IOTransport{Reader: in, Writer: out})
	restore()
	if err != nil {
		log.Fatal(err)
	}
}

type nowInput struct {
	Timezone string `json:"timezone,omitempty" jsonschema:"an IANA time zone such as Europe/Paris; default UTC"`
}

type addInput struct {
	Time     string `json:"time" jsonschema:"an RFC 3339 time such as 2025-03-01T09:30:00Z, or now"`
	Duration string `json:"duration" jsonschema:"a Go duration such as 90m, 1h30m or -2h45m"`
}

type timeOutput struct {
	Time     string `json:"time"`
	Timezone string `json:"timezone"`
	Weekday  string `json:"weekday"`
	Unix     int64  `json:"unix"`
	// Note explains a fallback to UTC.
	Note string `json:"note,omitempty"`
}

func output(t time.Time, note string) timeOutput {
	zone := t.Location().String()
	if zone == "" { // a fixed offset parsed from the input
		zone = t.Format("UTC-07:00")
	}
	return timeOutput{Time: t.Format(time.RFC3339), Timezone: zone, Weekday: t.Weekday().String(), Unix: t.Unix(), Note: note}
}

// loadLocation is time.LoadLocation; tests replace it.
var loadLocation = time.LoadLocation

// location loads a time zone. When the time zone database is missing, so
// that no name but UTC loads, it returns UTC with a note rather than fail.
func location(name string) (*time.Location, string, error) {
	if name == "" {
		return time.UTC, "", nil
	}
	loc, err := loadLocation(name)
	if err == nil {
		return loc, "", nil
	}
	if _, probe := loadLocation("Europe/London"); probe != nil {
		return time.UTC, fmt.Sprintf("the time zone database is missing on this machine, so %q cannot be loaded; showing UTC", name), nil
	}
	return nil, "", fmt.Errorf("unknown time zone %q: use an IANA name such as America/New_York", name)
}

func readOnly() *mcp.ToolAnnotations {
	return &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)}
}

// newServer returns the clock server; now reads the current time.
func newServer(now func() time.Time) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "clock", Title: "Clock", Version: "0.1.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "now",
		Description: "The current date and time in a time zone (default UTC), in RFC 3339, with the weekday and Unix time.",
		Annotations: readOnly(),
	}, func(_ context.Context, _ *mcp.CallToolRequest, in nowInput) (*mcp.CallToolResult, timeOutput, error) {
		loc, note, err := location(strings.TrimSpace(in.Timezone))
		if err != nil {
			return nil, timeOutput{}, err
		}
		return nil, output(now().In(loc), note), nil
	})
	mcp.AddTool(s, &mcp.Tool{
		Name:        "add_duration",
		Description: "Adds a duration (such as 90m or -2h) to a time given in RFC 3339 (or now) and returns the result in the same offset.",
		Annotations: readOnly(),
	}, func(_ context.Context, _ *mcp.CallToolRequest, in addInput) (*mcp.CallToolResult, timeOutput, error) {
		t := now().UTC()
		if s := strings.TrimSpace(in.Time); s != "now" {
			var err error
			if t, err = time.ParseInLocation(time.RFC3339, s, time.UTC); err != nil {
				return nil, timeOutput{}, fmt.Errorf("time %q is not RFC 3339 (like 2025-03-01T09:30:00Z) nor now", in.Time)
			}
		}
		d, err := time.ParseDuration(strings.TrimSpace(in.Duration))
		if err != nil {
			return nil, timeOutput{}, fmt.Errorf("duration %q is not a Go duration such as 90m, 1h30m or -45s", in.Duration)
		}
		return nil, output(t.Add(d), ""), nil
	})
	return s
}
