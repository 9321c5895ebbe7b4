package transport

import (
	"io"
	"strings"
	"testing"
)

// FuzzEndpointFilter: the filter drops whole events only, and only
// endpoint events after the first one.
func FuzzEndpointFilter(f *testing.F) {
	f.Add("event: endpoint\ndata: /m?s=1\n\nevent: message\ndata: {}\n\nevent: endpoint\ndata: http://evil/\n\n")
	f.Add("data: x\nevent: endpoint\n\n: comment\n\nevent:endpoint\r\ndata: y\r\n\r\n")
	f.Add("event: endpoint\n")
	f.Fuzz(func(t *testing.T, in string) {
		out, err := io.ReadAll(newEndpointFilter(io.NopCloser(strings.NewReader(in))))
		if err != nil {
			t.Fatal(err)
		}
		want, endpoints := "", 0
		for _, ev := range splitEvents(in) {
			if eventName(ev) == "endpoint" {
				if endpoints++; endpoints > 1 {
					continue
				}
			}
			want += ev
		}
		if string(out) != want {
			t.Fatalf("filtered %q to %q, want %q", in, out, want)
		}
	})
}

// splitEvents splits a stream after each blank line (LF-terminated
// lines, as the go-sdk reads them).
func splitEvents(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); {
		j := strings.IndexByte(s[i:], '\n')
		if j < 0 {
			break
		}
		line := s[i : i+j]
		i += j + 1
		if strings.TrimRight(line, "\r") == "" {
			out = append(out, s[start:i])
			start = i
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// eventName is the name the go-sdk gives an event: its last event field.
func eventName(ev string) string {
	name := ""
	for _, line := range strings.Split(ev, "\n") {
		if k, v, ok := strings.Cut(strings.TrimRight(line, "\r"), ":"); ok && k == "event" {
			name = strings.TrimSpace(v)
		}
	}
	return name
}
