package output

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// CapResult is what [Cap] kept of a text, and how much there was.
type CapResult struct {
	// Text is at most maxBytes bytes and maxLines lines, cut on a line
	// boundary when one exists in the last 10% of the budget, else on a
	// UTF-8 boundary. Always a prefix of the input.
	Text          string
	Truncated     bool // Text is shorter than the input
	ReturnedBytes int  // len(Text)
	TotalBytes    int  // the input's length
	ReturnedLines int  // Text's lines, counted as CountLines does
	TotalLines    int  // the input's lines
}

// Cap caps text to maxBytes bytes and maxLines lines; a non-positive
// limit is no limit. A line is counted with its newline; "a\nb" and
// "a\nb\n" are both two lines. Where the bytes cut, it is [CutPoint].
func Cap(text string, maxBytes, maxLines int) CapResult {
	res := CapResult{TotalBytes: len(text), TotalLines: CountLines(text)}
	end := len(text)
	if maxLines > 0 && res.TotalLines > maxLines {
		// After the maxLines-th newline.
		seen, i := 0, 0
		for seen < maxLines {
			i += strings.IndexByte(text[i:], '\n') + 1
			seen++
		}
		end = i
	}
	if maxBytes > 0 && end > maxBytes {
		end = CutPoint(text, maxBytes)
	}
	res.Text = text[:end]
	res.Truncated = end < len(text)
	res.ReturnedBytes = end
	res.ReturnedLines = CountLines(res.Text)
	return res
}

// CountLines counts the lines of s: its newlines, and a last line without
// one.
func CountLines(s string) int {
	n := strings.Count(s, "\n")
	if len(s) > 0 && s[len(s)-1] != '\n' {
		n++
	}
	return n
}

// countLinesBytes is CountLines of a []byte.
func countLinesBytes(b []byte) int {
	n := bytes.Count(b, []byte{'\n'})
	if len(b) > 0 && b[len(b)-1] != '\n' {
		n++
	}
	return n
}

// CutPoint returns where to cut s to keep at most n bytes of it: after
// the last newline in the last tenth of s[:n] when there is one, else at
// the last UTF-8 boundary at or before n. It looks at s[n], so it knows
// whether n splits a rune. Where s is not UTF-8 around n, it cuts at n.
func CutPoint[T ~string | ~[]byte](s T, n int) int {
	if n >= len(s) {
		return len(s)
	}
	if n <= 0 {
		return 0
	}
	for i := n - 1; i >= n-n/10 && i >= 0; i-- {
		if s[i] == '\n' {
			return i + 1
		}
	}
	for i := n; i >= 0 && i > n-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			// A valid rune starting at i ends at or after n.
			return i
		}
	}
	return n
}

// ClipUTF8 cuts s to at most n bytes on a UTF-8 boundary: the last rune
// start at or before n, looking back at most three bytes (where s is not
// UTF-8 around n, it cuts at n).
func ClipUTF8(s string, n int) string { return s[:cutUTF8(s, n)] }

// cutUTF8 is CutPoint without the preference for line boundaries.
func cutUTF8[T ~string | ~[]byte](s T, n int) int {
	if n >= len(s) {
		return len(s)
	}
	for i := n; i >= 0 && i > n-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			return i
		}
	}
	return n
}
