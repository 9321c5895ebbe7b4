package ui

import (
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/voltmcp/voltmcp/sanitize"
)

// clean is a server's string made safe for one cell or line of the
// terminal: sanitize.Display, the one cleaner of the CLI, removes every
// escape sequence, control, bidi override and invisible character, and
// turns line breaks and tabs into spaces.
func clean(s string) string { return sanitize.Display(s) }

// cleanBlock is clean for a block of lines (a schema): the line breaks
// stay, each line is cleaned.
func cleanBlock(s string) string {
	out, _ := sanitize.Output(s)
	return strings.ReplaceAll(out, "\t", "    ")
}

// fit cuts s (cleaned text, no escapes) to w cells with an ellipsis, and
// pads it to w.
func fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if ansi.StringWidth(s) > w {
		s = ansi.Truncate(s, w, "…")
	}
	return s + strings.Repeat(" ", max(0, w-ansi.StringWidth(s)))
}

// cut cuts s to w cells without padding.
func cut(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if ansi.StringWidth(s) > w {
		return ansi.Truncate(s, w, "…")
	}
	return s
}

// wrap breaks cleaned text into lines of at most w cells, at most n
// lines (the last one cut with an ellipsis when more would follow).
func wrap(s string, w, n int) []string {
	if w <= 0 || n <= 0 {
		return nil
	}
	lines := strings.Split(ansi.Hardwrap(ansi.Wordwrap(s, w, " "), w, true), "\n")
	if len(lines) > n {
		lines = lines[:n]
		lines[n-1] = cut(lines[n-1]+" …", w)
	}
	return lines
}
