package wasm_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/voltmcp/voltmcp/wasm"
)

func text(s ...string) []wasm.Content {
	var c []wasm.Content
	for _, t := range s {
		c = append(c, wasm.Content{Type: "text", Text: t})
	}
	return c
}

func TestCap(t *testing.T) {
	t.Parallel()
	img := wasm.Content{Type: "image", MIMEType: "image/png", Size: 1 << 20}
	tests := []struct {
		name   string
		in     []wasm.Content
		limits wasm.Limits
		want   []wasm.Content
		cut    bool
	}{
		{"no limits", text("a\nb"), wasm.Limits{}, text("a\nb"), false},
		{"fits", text("a\nb"), wasm.Limits{MaxBytes: 3, MaxLines: 2}, text("a\nb"), false},
		{"trailing newline is not a line", text("a\nb\n"), wasm.Limits{MaxLines: 2}, text("a\nb\n"), false},
		{"lines", text("a\nb\nc"), wasm.Limits{MaxLines: 2}, text("a\nb"), true},
		{"lines across items", text("a\nb", "c\nd"), wasm.Limits{MaxLines: 3}, text("a\nb", "c"), true},
		{"bytes at a line end", text("line one\nline two\nline three"), wasm.Limits{MaxBytes: 20}, text("line one\nline two"), true},
		{"bytes on a rune boundary", text("ééééé"), wasm.Limits{MaxBytes: 5}, text("éé"), true},
		{"early newline is not worth it", text("a\n" + strings.Repeat("x", 30)), wasm.Limits{MaxBytes: 20}, text("a\n" + strings.Repeat("x", 18)), true},
		{"bytes across items", text("abc", "defg", "h"), wasm.Limits{MaxBytes: 5}, text("abc", "de"), true},
		{"non-text items stay", []wasm.Content{img, {Type: "text", Text: "abc"}, img}, wasm.Limits{MaxBytes: 1}, []wasm.Content{img, {Type: "text", Text: "a"}, img}, true},
		{"exact fit at newline", text("ab\ncd"), wasm.Limits{MaxBytes: 2}, text("ab"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			orig := append([]wasm.Content(nil), tt.in...)
			got, cut := wasm.Cap(tt.in, tt.limits)
			if cut != tt.cut || len(got) != len(tt.want) {
				t.Fatalf("got %+v cut %v; want %+v cut %v", got, cut, tt.want, tt.cut)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("item %d: got %+v; want %+v", i, got[i], tt.want[i])
				}
			}
			for i := range orig {
				if orig[i] != tt.in[i] {
					t.Errorf("Cap modified its input")
				}
			}
		})
	}
}

// FuzzCap checks Cap's promises on any input: the limits hold and text
// stays valid UTF-8 when it was.
func FuzzCap(f *testing.F) {
	f.Add("héllo\nwörld\n", "x\ny", 7, 2)
	f.Fuzz(func(t *testing.T, a, b string, maxBytes, maxLines int) {
		if !utf8.ValidString(a) || !utf8.ValidString(b) {
			t.Skip()
		}
		out, _ := wasm.Cap(text(a, b), wasm.Limits{MaxBytes: maxBytes, MaxLines: maxLines})
		total, lines := 0, 0
		for _, c := range out {
			total += len(c.Text)
			lines += strings.Count(strings.TrimSuffix(c.Text, "\n"), "\n") + 1
			if !utf8.ValidString(c.Text) {
				t.Errorf("invalid UTF-8 %q", c.Text)
			}
		}
		if maxBytes > 0 && total > maxBytes {
			t.Errorf("%d bytes over %d", total, maxBytes)
		}
		if maxLines > 0 && lines > maxLines {
			t.Errorf("%d lines over %d: %+v", lines, maxLines, out)
		}
	})
}
