package wasm

import (
	"strings"
	"unicode/utf8"

	"github.com/voltmcp/voltmcp/sanitize"
)

// Cap applies the hard output cap to content: the text items together keep
// at most limits.MaxBytes UTF-8 bytes and limits.MaxLines lines, each text
// item starting on a new line. A byte cut falls at the end of a line when
// one ends in the second half of what fits, else on a UTF-8 boundary, so a
// character is never split. Text items past the cap are dropped; non-text
// items are kept. cut reports whether anything was removed. Cap never
// modifies content.
func Cap(content []Content, limits Limits) (out []Content, cut bool) {
	bytesLeft, linesLeft := limits.MaxBytes, limits.MaxLines
	capBytes, capLines := bytesLeft > 0, linesLeft > 0
	out = make([]Content, 0, len(content))
	for _, c := range content {
		if c.Type != "text" {
			out = append(out, c)
			continue
		}
		if (capBytes && bytesLeft <= 0) || (capLines && linesLeft <= 0) {
			cut = cut || c.Text != ""
			continue
		}
		text := c.Text
		if capLines {
			if i := nthNewline(text, linesLeft); i >= 0 && i < len(text)-1 {
				text, cut = text[:i], true
			}
			linesLeft -= lineCount(text)
		}
		if capBytes && len(text) > bytesLeft {
			end := bytesLeft
			if text[end] != '\n' {
				if i := strings.LastIndexByte(text[:end], '\n'); i >= end/2 && i > 0 {
					end = i
				} else {
					for end > 0 && !utf8.RuneStart(text[end]) {
						end--
					}
				}
			}
			text, cut = text[:end], true
		}
		if capBytes {
			bytesLeft -= len(text)
		}
		if text == "" && c.Text != "" {
			continue
		}
		c.Text = text
		out = append(out, c)
	}
	return out, cut
}

// nthNewline returns the index of the n-th newline of s, or -1.
func nthNewline(s string, n int) int {
	off := 0
	for ; n > 0; n-- {
		i := strings.IndexByte(s[off:], '\n')
		if i < 0 {
			return -1
		}
		off += i + 1
	}
	return off - 1
}

// lineCount counts the lines of s; a final newline ends a line rather than
// starting one.
func lineCount(s string) int {
	if s == "" {
		return 0
	}
	n := strings.Count(s, "\n")
	if !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// cut shortens s to at most n bytes on a UTF-8 boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// cleanText makes guest-supplied text safe to log and display with the
// one list every untrusted text goes through (package sanitize): escape
// sequences, control characters other than newline and tab, invisible
// characters and invalid UTF-8 go, and the result is cut to max bytes on
// a character boundary. Unless multiline, newlines and tabs become spaces,
// runs of white space are shortened and the ends are trimmed.
func cleanText(s string, max int, multiline bool) string {
	var out string
	if multiline {
		out, _ = sanitize.Output(s)
	} else {
		out = sanitize.Display(s)
	}
	if len(out) <= max {
		return out
	}
	cut := 0
	for i := range out {
		if i > max {
			break
		}
		cut = i
	}
	if !multiline {
		return strings.TrimSpace(out[:cut])
	}
	return out[:cut]
}
