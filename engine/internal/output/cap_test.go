package output

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCapOutput(t *testing.T) {
	lines := func(n int, line string) string { return strings.Repeat(line+"\n", n) }
	for _, c := range []struct {
		name               string
		text               string
		maxBytes, maxLines int
		want               string
	}{
		{name: "empty", text: "", maxBytes: 10, maxLines: 2, want: ""},
		{name: "ascii under", text: "hello\nworld", maxBytes: 100, maxLines: 10, want: "hello\nworld"},
		{name: "ascii bytes, no line in last tenth", text: strings.Repeat("abcdefghij", 10), maxBytes: 35, maxLines: 10, want: strings.Repeat("abcdefghij", 3) + "abcde"},
		{name: "line boundary in last tenth", text: lines(20, "123456789"), maxBytes: 95, maxLines: 100, want: lines(9, "123456789")},
		{name: "line boundary outside last tenth", text: "ab\n" + strings.Repeat("x", 200), maxBytes: 100, maxLines: 10, want: "ab\n" + strings.Repeat("x", 97)},
		{name: "multi-byte not split", text: strings.Repeat("€", 100), maxBytes: 100, maxLines: 10, want: strings.Repeat("€", 33)},
		{name: "four-byte runes", text: strings.Repeat("😀", 10), maxBytes: 7, maxLines: 10, want: "😀"},
		{name: "rune larger than budget", text: "😀", maxBytes: 3, maxLines: 10, want: ""},
		{name: "long single line", text: strings.Repeat("é", 100000), maxBytes: 51200, maxLines: 2000, want: strings.Repeat("é", 25600)},
		{name: "many short lines", text: lines(5000, "ab"), maxBytes: 51200, maxLines: 2000, want: lines(2000, "ab")},
		{name: "lines before bytes", text: lines(100, "x"), maxBytes: 1000, maxLines: 3, want: "x\nx\nx\n"},
		{name: "bytes before lines", text: lines(100, "xxxxxxxxx"), maxBytes: 25, maxLines: 50, want: "xxxxxxxxx\nxxxxxxxxx\nxxxxx"},
		{name: "exactly max bytes", text: strings.Repeat("é", 50), maxBytes: 100, maxLines: 10, want: strings.Repeat("é", 50)},
		{name: "exactly max lines", text: lines(10, "a"), maxBytes: 100, maxLines: 10, want: lines(10, "a")},
		{name: "exactly max lines, no final newline", text: strings.TrimSuffix(lines(10, "a"), "\n"), maxBytes: 100, maxLines: 10, want: strings.TrimSuffix(lines(10, "a"), "\n")},
		{name: "one line over", text: lines(10, "a") + "b", maxBytes: 100, maxLines: 10, want: lines(10, "a")},
		{name: "one byte over", text: strings.Repeat("a", 101), maxBytes: 100, maxLines: 10, want: strings.Repeat("a", 100)},
		{name: "no limits", text: lines(10, "abc"), maxBytes: 0, maxLines: 0, want: lines(10, "abc")},
		{name: "invalid UTF-8 in, bytes out", text: strings.Repeat("\xff", 20), maxBytes: 10, maxLines: 10, want: strings.Repeat("\xff", 10)},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Cap(c.text, c.maxBytes, c.maxLines)
			want := CapResult{
				Text: c.want, Truncated: c.want != c.text,
				ReturnedBytes: len(c.want), TotalBytes: len(c.text),
				ReturnedLines: CountLines(c.want), TotalLines: CountLines(c.text),
			}
			if got != want {
				t.Errorf("Cap = %+v\nwant  %+v", got, want)
			}
			checkCapInvariants(t, c.text, c.maxBytes, c.maxLines, got)
		})
	}
	if got := Cap("a\nb\nc", 100, 10); got.TotalLines != 3 || got.ReturnedLines != 3 {
		t.Errorf("line count of %q: %+v", "a\nb\nc", got)
	}
}

func checkCapInvariants(t *testing.T, text string, maxBytes, maxLines int, got CapResult) {
	t.Helper()
	if !strings.HasPrefix(text, got.Text) {
		t.Fatalf("not a prefix")
	}
	if utf8.ValidString(text) && !utf8.ValidString(got.Text) {
		t.Fatalf("invalid UTF-8 out of valid in: %q", got.Text)
	}
	if maxBytes > 0 && len(got.Text) > maxBytes {
		t.Fatalf("%d bytes over %d", len(got.Text), maxBytes)
	}
	if maxLines > 0 && CountLines(got.Text) > maxLines {
		t.Fatalf("%d lines over %d", CountLines(got.Text), maxLines)
	}
	if got.Truncated != (len(got.Text) < len(text)) || got.ReturnedBytes != len(got.Text) || got.TotalBytes != len(text) ||
		got.ReturnedLines != CountLines(got.Text) || got.TotalLines != CountLines(text) {
		t.Fatalf("counts: %+v", got)
	}
	if !got.Truncated {
		return
	}
	// Cut as late as allowed: on a line boundary in the last tenth of
	// the byte budget, else on the last rune boundary; the line limit
	// cuts right after its last line.
	n := len(got.Text)
	if maxLines > 0 && CountLines(text) > maxLines && (maxBytes <= 0 || n <= maxBytes) && CountLines(got.Text) == maxLines && strings.HasSuffix(got.Text, "\n") {
		return // cut by lines
	}
	if n > 0 && got.Text[n-1] == '\n' && n >= maxBytes-maxBytes/10 {
		return // a line boundary in the last tenth
	}
	if utf8.ValidString(text) && n+utf8.UTFMax <= maxBytes {
		t.Fatalf("cut at %d of a budget of %d", n, maxBytes)
	}
}

func FuzzCapOutput(f *testing.F) {
	f.Add("hello\nworld\n", 8, 1)
	f.Add(strings.Repeat("é😀\n", 50), 37, 7)
	f.Add(strings.Repeat("x", 300), 100, 2)
	f.Add("\xff\xfe\n\x80abc", 3, 1)
	f.Add("", 1, 1)
	f.Fuzz(func(t *testing.T, text string, maxBytes, maxLines int) {
		// Positive limits; the gateway's are at least 1024 and 10.
		maxBytes = 1 + abs(maxBytes)%(len(text)+8)
		maxLines = 1 + abs(maxLines)%(CountLines(text)+3)
		got := Cap(text, maxBytes, maxLines)
		checkCapInvariants(t, text, maxBytes, maxLines, got)
	})
}

func abs(n int) int {
	if n < 0 {
		return -(n + 1) // no overflow at the minimum
	}
	return n
}
