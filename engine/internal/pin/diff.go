package pin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Diff limits.
const (
	// maxDiffLines bounds the lines of one side that are diffed; longer
	// texts are shown as replaced whole, head only.
	maxDiffLines = 400
	// maxDiffOutput bounds the lines Diff returns.
	maxDiffOutput = 200
	// wrapWidth is the width descriptions are wrapped to before diffing,
	// so that a change shows on the line it is on, not as a whole
	// paragraph.
	wrapWidth = 72
	// diffContext is the number of unchanged lines shown around a change.
	diffContext = 2
)

// Diff returns a readable, line-based diff from old to new of each field
// that differs: title, description (wrapped at 72 columns), risk,
// annotations and input schema (both pretty-printed). Removed lines start
// with "-", added ones with "+", unchanged context with " "; "…" marks
// skipped lines. The result is at most about 200 lines; it is "" when
// nothing differs. Text is shown as stored: callers that print it to a
// terminal should have cleaned it (package bound does).
func Diff(old, new Meta) string {
	var out []string
	field := func(name string, a, b []string) {
		if equalLines(a, b) {
			return
		}
		out = append(out, name+":")
		out = append(out, diffLines(a, b)...)
	}
	if old.Name != new.Name {
		field("name", []string{old.Name}, []string{new.Name})
	}
	field("title", lines(old.Title), lines(new.Title))
	field("description", wrap(old.Description), wrap(new.Description))
	if old.Risk != new.Risk {
		field("risk", []string{orUnknown(old.Risk)}, []string{orUnknown(new.Risk)})
	}
	field("annotations", pretty(old.Annotations), pretty(new.Annotations))
	field("input schema", pretty(old.InputSchema), pretty(new.InputSchema))
	if len(out) > maxDiffOutput {
		n := len(out) - maxDiffOutput
		out = append(out[:maxDiffOutput], fmt.Sprintf("… %d more lines", n))
	}
	if len(out) == 0 {
		return ""
	}
	return strings.Join(out, "\n") + "\n"
}

// equalLines reports whether a and b hold the same lines.
func equalLines(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// lines splits s into lines; "" has none.
func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// wrap splits s into lines and wraps each at wrapWidth bytes, on spaces
// where it can.
func wrap(s string) []string {
	var out []string
	for _, line := range lines(s) {
		for len(line) > wrapWidth {
			cut := strings.LastIndexByte(line[:wrapWidth], ' ')
			if cut <= 0 {
				cut = wrapWidth
				for cut < len(line) && line[cut]&0xc0 == 0x80 { // not inside a rune
					cut++
				}
			}
			out = append(out, line[:cut])
			line = strings.TrimLeft(line[cut:], " ")
		}
		out = append(out, line)
	}
	return out
}

// pretty indents JSON, two spaces a level, and splits it into lines; a
// value that is not JSON is shown as its bytes.
func pretty(raw json.RawMessage) []string {
	if len(raw) == 0 {
		return nil
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return lines(string(raw))
	}
	return lines(b.String())
}

// diffLines returns the lines of a unified-style diff of a and b, with
// diffContext lines of context. Inputs longer than maxDiffLines are shown
// as all removed and all added, head only.
func diffLines(a, b []string) []string {
	if len(a) > maxDiffLines || len(b) > maxDiffLines {
		var out []string
		for _, l := range a[:min(len(a), maxDiffOutput/4)] {
			out = append(out, "- "+l)
		}
		if len(a) > maxDiffOutput/4 {
			out = append(out, fmt.Sprintf("- … %d more lines", len(a)-maxDiffOutput/4))
		}
		for _, l := range b[:min(len(b), maxDiffOutput/4)] {
			out = append(out, "+ "+l)
		}
		if len(b) > maxDiffOutput/4 {
			out = append(out, fmt.Sprintf("+ … %d more lines", len(b)-maxDiffOutput/4))
		}
		return out
	}
	// Longest common subsequence, by dynamic programming over suffixes.
	n, m := len(a), len(b)
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type op struct {
		kind byte // ' ', '-', '+'
		text string
	}
	var ops []op
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			ops = append(ops, op{' ', a[i]})
			i, j = i+1, j+1
		case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
			ops = append(ops, op{'+', b[j]})
			j++
		default:
			ops = append(ops, op{'-', a[i]})
			i++
		}
	}
	// Keep changes and diffContext lines of context around them.
	keep := make([]bool, len(ops))
	for k, o := range ops {
		if o.kind != ' ' {
			for d := max(0, k-diffContext); d <= min(len(ops)-1, k+diffContext); d++ {
				keep[d] = true
			}
		}
	}
	var out []string
	skipped := false
	for k, o := range ops {
		if !keep[k] {
			if !skipped {
				out = append(out, "  …")
				skipped = true
			}
			continue
		}
		skipped = false
		out = append(out, string(o.kind)+" "+o.text)
	}
	return out
}
