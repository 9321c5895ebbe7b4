//go:build wasip1

package main

import (
	"strconv"

	"github.com/voltmcp/voltmcp/sanitize"
)

// counts tallies what cleaning removed, for the notes.
type counts struct {
	ansi, controls, invisible, invalid, whitespace int
	arrays                                         []string
}

// shape cleans every text item and summarizes JSON arrays that the host's
// cap would otherwise cut mid-token. Non-text items pass through as they
// came.
func shape(in []byte) []byte {
	v, err := parse(in)
	if err != nil || v.k != kObj {
		return []byte(`{"content":[{"type":"text","text":"(builtin shaper: input is not a JSON object)"}]}`)
	}
	limits := v.get("limits")
	maxBytes, maxLines := intOf(limits.get("max_bytes")), intOf(limits.get("max_lines"))
	var c counts
	out := []byte(`{"content":[`)
	items := v.get("content")
	n := 0
	if items != nil && items.k == kArr {
		for _, it := range items.arr {
			if it == nil || it.k != kObj {
				continue
			}
			if n > 0 {
				out = append(out, ',')
			}
			n++
			typ := it.get("type").str()
			out = append(out, `{"type":`...)
			out = appendString(out, typ)
			if typ == "text" {
				text := clean(it.get("text").str(), &c)
				text = summarize(text, maxBytes, maxLines, &c)
				out = append(out, `,"text":`...)
				out = appendString(out, text)
			} else {
				if m := it.get("mime_type"); m != nil && m.k == kStr {
					out = append(out, `,"mime_type":`...)
					out = appendString(out, m.s)
				}
				if s := it.get("size"); s != nil && s.k == kNum {
					out = append(out, `,"size":`...)
					out = append(out, s.s...)
				}
			}
			out = append(out, '}')
		}
	}
	out = append(out, `],"notes":[`...)
	var notes []string
	add := func(n int, one, many string) {
		switch {
		case n == 1:
			notes = append(notes, one)
		case n > 1:
			notes = append(notes, strconv.Itoa(n)+" "+many)
		}
	}
	add(c.ansi, "stripped 1 ANSI sequence", "ANSI sequences")
	add(c.controls, "stripped 1 control character", "control characters")
	add(c.invisible, "stripped 1 invisible character", "invisible characters")
	add(c.invalid, "replaced 1 invalid UTF-8 byte", "invalid UTF-8 bytes")
	add(c.whitespace, "collapsed 1 whitespace run", "whitespace runs")
	notes = append(notes, c.arrays...)
	for i, s := range notes {
		if i > 0 {
			out = append(out, ',')
		}
		if s[0] >= '0' && s[0] <= '9' { // "3 ANSI sequences" -> "stripped 3 ANSI sequences"
			s = verbFor(s) + " " + s
		}
		out = appendString(out, s)
	}
	return append(out, "]}"...)
}

// verbFor picks the verb of a plural note.
func verbFor(s string) string {
	switch {
	case hasSuffix(s, "invalid UTF-8 bytes"):
		return "replaced"
	case hasSuffix(s, "whitespace runs"):
		return "collapsed"
	}
	return "stripped"
}

func hasSuffix(s, suf string) bool { return len(s) >= len(suf) && s[len(s)-len(suf):] == suf }

func intOf(v *value) int {
	if v == nil || v.k != kNum {
		return 0
	}
	n, err := strconv.Atoi(v.s)
	if err != nil {
		return 0
	}
	return n
}

// clean removes what package sanitize's one list removes (escape
// sequences, controls other than newline and tab, invisible characters,
// invalid UTF-8, a carriage return becoming a newline), as the host
// already did, counting it for the notes; then collapses runaway
// whitespace.
func clean(s string, c *counts) string {
	out, r := sanitize.Output(s)
	c.ansi += r.Escapes
	c.controls += r.Controls
	c.invisible += r.Invisible
	c.invalid += r.InvalidUTF8
	return collapse([]byte(out), c)
}

// maxInnerRun is the longest run of spaces and tabs kept inside a line.
const maxInnerRun = 8

// collapse trims trailing whitespace from lines and blank lines from both
// ends, keeps at most one blank line in a row, and turns a run of more than
// maxInnerRun spaces or tabs after the indentation into one space.
func collapse(b []byte, c *counts) string {
	out := make([]byte, 0, len(b))
	blank := 0
	started := false
	for len(b) > 0 {
		end := 0
		for end < len(b) && b[end] != '\n' {
			end++
		}
		line := b[:end]
		if end < len(b) {
			b = b[end+1:]
		} else {
			b = nil
		}
		for len(line) > 0 && (line[len(line)-1] == ' ' || line[len(line)-1] == '\t') {
			line = line[:len(line)-1]
		}
		if len(line) == 0 {
			blank++
			continue
		}
		if started {
			out = append(out, '\n')
			if blank > 0 {
				out = append(out, '\n')
			}
			if blank > 1 {
				c.whitespace++
			}
		}
		started, blank = true, 0
		indent := 0
		for indent < len(line) && (line[indent] == ' ' || line[indent] == '\t') {
			indent++
		}
		out = append(out, line[:indent]...)
		for i := indent; i < len(line); {
			if line[i] != ' ' && line[i] != '\t' {
				out = append(out, line[i])
				i++
				continue
			}
			j := i
			for j < len(line) && (line[j] == ' ' || line[j] == '\t') {
				j++
			}
			if j-i > maxInnerRun {
				out = append(out, ' ')
				c.whitespace++
			} else {
				out = append(out, line[i:j]...)
			}
			i = j
		}
	}
	return string(out)
}

// summarize replaces a JSON array that would not fit the limits with its
// item count and as many leading items, one a line, as fit in half of
// them, so the host's cap never cuts a token in half.
func summarize(text string, maxBytes, maxLines int, c *counts) string {
	lines := 1
	for i := 0; i < len(text); i++ {
		if text[i] == '\n' {
			lines++
		}
	}
	over := (maxBytes > 0 && len(text) > maxBytes) || (maxLines > 0 && lines > maxLines)
	if !over {
		return text
	}
	start := 0
	for start < len(text) && (text[start] == ' ' || text[start] == '\n' || text[start] == '\t') {
		start++
	}
	if start == len(text) || text[start] != '[' {
		return text
	}
	v, err := parse([]byte(text))
	if err != nil || v.k != kArr {
		return text
	}
	budget, lineBudget := maxBytes/2, maxLines/2
	if maxBytes <= 0 {
		budget = 1 << 30
	}
	if maxLines <= 0 {
		lineBudget = 1 << 30
	}
	total := len(v.arr)
	head := "JSON array of " + strconv.Itoa(total) + " items"
	var body []byte
	shown := 0
	for _, e := range v.arr {
		line := appendValue(nil, e)
		if len(head)+40+len(body)+len(line)+1 > budget || shown+2 > lineBudget {
			break
		}
		body = append(body, '\n')
		body = append(body, line...)
		shown++
	}
	switch shown {
	case total:
		head += ":"
	case 0:
		head += "; none shown, the first alone is over the limit"
	default:
		head += "; the first " + strconv.Itoa(shown) + " follow:"
	}
	c.arrays = append(c.arrays, "summarized a JSON array of "+strconv.Itoa(total)+" items ("+strconv.Itoa(shown)+" shown)")
	return head + string(body)
}
