package engine

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestForwardedResult checks what an attached serve answers for the
// daemon's answer to a forwarded call: a well-framed object as it came
// (with resultType for a client of 2026-07-28, as the lean codec writes
// it), and the mcp tool's error result, naming what is wrong, for an
// error or anything that is not one line of one valid JSON object.
func TestForwardedResult(t *testing.T) {
	t.Parallel()
	lean := func(r GatewayResult, complete bool) string {
		b, err := encodeLeanResult(r, complete)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	ok := lean(GatewayResult{Text: "grüße <b>", Data: map[string]any{"a": 1}}, false)
	for _, c := range []struct {
		name     string
		raw      string
		err      error
		complete bool
		want     string // the exact answer, or
		wantErr  string // a part of the error result's text
	}{
		{name: "as it came", raw: ok, want: ok},
		{name: "complete", raw: ok, complete: true, want: lean(GatewayResult{Text: "grüße <b>", Data: map[string]any{"a": 1}}, true)},
		{name: "empty object, complete", raw: `{}`, complete: true, want: `{"resultType":"complete"}`},
		{name: "space around", raw: " " + ok + "\t", want: ok},
		{name: "error", err: errors.New("the voltmcp daemon went away: EOF"), wantErr: "the voltmcp daemon went away: EOF"},
		{name: "error, complete", err: errors.New("gone"), complete: true, wantErr: "gone"},
		{name: "not an object", raw: `[1]`, wantErr: "not a JSON object"},
		{name: "empty", raw: ``, wantErr: "not a JSON object"},
		{name: "two lines", raw: "{\"a\":\n1}", wantErr: "not one line of valid JSON"},
		{name: "two objects", raw: `{"a":1}{"b":2}`, wantErr: "not one line of valid JSON"},
		{name: "invalid", raw: `{"a":}`, wantErr: "not one line of valid JSON"},
	} {
		got := string(forwardedResult(json.RawMessage(c.raw), c.err, c.complete))
		if c.wantErr == "" {
			if got != c.want {
				t.Errorf("%s: got %s, want %s", c.name, got, c.want)
			}
			continue
		}
		var r struct {
			IsError    bool   `json:"isError"`
			ResultType string `json:"resultType"`
			Content    []struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		if err := json.Unmarshal([]byte(got), &r); err != nil || !r.IsError || len(r.Content) != 1 || !strings.Contains(r.Content[0].Text, c.wantErr) {
			t.Errorf("%s: got %s (%v), want an error result saying %q", c.name, got, err, c.wantErr)
		}
		if (r.ResultType == "complete") != c.complete {
			t.Errorf("%s: resultType %q", c.name, r.ResultType)
		}
	}
}
