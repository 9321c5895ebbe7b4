// Package sanitize cleans text that comes from an untrusted MCP server
// before a person or a model sees it: tool names and descriptions, tool
// output, error messages, stderr tails, serverInfo fields. It removes what
// a reader would not see but a model would read, or what a terminal would
// act on, from one list of such characters and sequences, so that every
// surface removes the same things:
//
//   - terminal escape sequences, whole: CSI (ESC [ or U+009B, up to its
//     final byte), OSC, DCS, SOS, PM and APC strings (ESC ], P, X, ^, _ or
//     their C1 forms, up to BEL, ESC \ or U+009C, else to the end of the
//     text), nF escapes (ESC, intermediate bytes 0x20–0x2F, one final
//     byte: ESC ( B goes whole) and the two-byte Fp, Fe and Fs escapes; a
//     lone ESC goes alone;
//   - C0 and C1 control characters and DEL, except tab and newline; a
//     carriage return becomes a newline, or disappears before one;
//   - invisible characters: every format character (Unicode category Cf:
//     zero-width space and joiners, U+200E/U+200F marks, bidi embeddings,
//     overrides and isolates, U+061C, word joiner and invisible operators,
//     U+FEFF, soft hyphen, interlinear annotations, the tags block), the
//     combining grapheme joiner, Hangul fillers, Mongolian variation
//     selectors, the ideographic variation selectors U+E0100–U+E01EF, and
//     any variation selector U+FE00–U+FE0F that does not directly follow
//     a visible character (one after a character is kept, so that emoji
//     still render; a run of them, which can smuggle data, is not);
//   - invalid UTF-8, replaced by one U+FFFD per run of bad bytes (C1
//     controls written as single bytes are invalid UTF-8 and go this way).
//
// [Text] cleans a field shown on its own (a name, a description, an error
// message) and also tidies its white space and clips it; [Output] cleans
// text that must keep its shape (tool output, a stderr tail). Both apply
// the list above; their results are valid UTF-8 and cleaning them again
// changes nothing. Text with nothing to remove is returned as is, without
// copying.
//
// The package uses the standard library only, so that the engine and the
// CLI can share it.
package sanitize

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Report counts what cleaning removed or changed. The zero Report means
// nothing was.
type Report struct {
	// Escapes is the number of terminal escape sequences removed.
	Escapes int `json:"escapes,omitempty"`
	// Controls is the number of C0 and C1 control characters removed,
	// other than the tab, newline and carriage return.
	Controls int `json:"controls,omitempty"`
	// Invisible is the number of invisible characters removed.
	Invisible int `json:"invisible,omitempty"`
	// InvalidUTF8 is the number of runs of bytes that were not UTF-8,
	// each replaced by one U+FFFD.
	InvalidUTF8 int `json:"invalidUTF8,omitempty"`
	// Whitespace is the number of white-space characters [Text] removed
	// from over-long runs.
	Whitespace int `json:"whitespace,omitempty"`
	// Clipped is the number of characters [Text] cut off at its limit.
	Clipped int `json:"clipped,omitempty"`
}

// Removed is the number of escape sequences and characters removed or
// replaced, white space and clipping aside.
func (r Report) Removed() int { return r.Escapes + r.Controls + r.Invisible + r.InvalidUTF8 }

// Changed reports whether anything was removed, replaced or clipped.
func (r Report) Changed() bool { return r.Removed()+r.Whitespace+r.Clipped > 0 }

// Text cleaning limits.
const (
	// maxSpaceRun is the longest run of spaces and tabs Text keeps.
	maxSpaceRun = 8
	// maxNewlineRun is the most consecutive line breaks Text keeps: two
	// blank lines.
	maxNewlineRun = 3
	// ellipsis marks clipped text.
	ellipsis = '…'
)

// Text cleans a field of untrusted text (see the package documentation)
// and clips it to maxChars characters (runes), ellipsis included; maxChars
// below 1 means no clipping. Beyond the list, it tidies white space:
// Unicode spaces become ASCII spaces and the line and paragraph
// separators newlines; runs of spaces and tabs are cut to 8, runs of line
// breaks to 3; spaces before a line break and at either end of the text
// are dropped. The result is clipped on a character boundary, ending in
// "…". Once the text is clipped, cleaning stops, and Report.Clipped counts
// the rest of the input as it came.
func Text(s string, maxChars int) (string, Report) {
	var r Report
	if isPlain(s) && (maxChars < 1 || len(s) <= maxChars) {
		return s, r
	}
	c := textBuilder{max: maxChars, cut: -1}
	grow := len(s)
	if maxChars > 0 {
		grow = min(grow, 4*maxChars+8)
	}
	c.b.Grow(grow)
	prevVisible := false // the last rune kept is visible (for variation selectors)
	i := 0
	for i < len(s) && !c.full {
		b := s[i]
		if b < utf8.RuneSelf {
			switch {
			case b == 0x1b:
				i = skipEscape(s, i+1)
				r.Escapes++
				continue
			case b == '\r':
				i++
				if i < len(s) && s[i] == '\n' {
					continue
				}
				c.space('\n', &r)
				prevVisible = false
				continue
			case b == '\n' || b == '\t' || b == ' ':
				c.space(rune(b), &r)
				prevVisible = false
				i++
				continue
			case b < 0x20 || b == 0x7f:
				r.Controls++
				i++
				continue
			}
			// A run of printable ASCII other than space goes in one piece.
			j := i + 1
			for j < len(s) && s[j] > ' ' && s[j] < 0x7f {
				j++
			}
			c.ascii(s[i:j])
			prevVisible = true
			i = j
			continue
		}
		ru, size := utf8.DecodeRuneInString(s[i:])
		if ru == utf8.RuneError && size <= 1 {
			i = skipInvalid(s, i)
			r.InvalidUTF8++
			c.rune(utf8.RuneError, utf8.RuneLen(utf8.RuneError))
			prevVisible = true
			continue
		}
		i += size
		if ru < 0xa0 {
			i = skipC1(s, i, ru, &r)
			continue
		}
		switch {
		case ru == 0x2028 || ru == 0x2029:
			c.space('\n', &r)
			prevVisible = false
		case isVariationSelector(ru):
			if prevVisible {
				c.rune(ru, size)
				prevVisible = false // only one
			} else {
				r.Invisible++
			}
		case Invisible(ru):
			r.Invisible++
		case isZs(ru):
			c.space(' ', &r)
			prevVisible = false
		default:
			c.rune(ru, size)
			prevVisible = true
		}
	}
	if c.full {
		// What follows the cut is counted as it came, uncleaned.
		r.Clipped = c.clipped + utf8.RuneCountInString(s[i:])
	}
	return c.b.String(), r
}

// Output cleans multi-line untrusted text that keeps its shape, such as
// a tool's output or a stderr tail (see the package documentation): tabs,
// newlines, spaces and runs of them are kept as they are, a carriage
// return becomes a newline (CRLF becomes LF), and nothing is clipped.
func Output(s string) (string, Report) {
	var r Report
	i, prevVisible := firstUnclean(s)
	if i == len(s) {
		return s, r
	}
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[:i])
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == 0x1b:
				i = skipEscape(s, i+1)
				r.Escapes++
			case c == '\r':
				if i+1 >= len(s) || s[i+1] != '\n' {
					b.WriteByte('\n')
				}
				i++
				prevVisible = false
			case c == '\t' || c == '\n' || c == ' ':
				b.WriteByte(c)
				i++
				prevVisible = false
			case c < 0x20 || c == 0x7f:
				r.Controls++
				i++
			default:
				b.WriteByte(c)
				i++
				prevVisible = true
			}
			continue
		}
		ru, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case ru == utf8.RuneError && n <= 1:
			i = skipInvalid(s, i)
			r.InvalidUTF8++
			b.WriteRune(utf8.RuneError)
			prevVisible = true
			continue
		case ru < 0xa0:
			i = skipC1(s, i+n, ru, &r)
			continue
		case isVariationSelector(ru):
			if prevVisible {
				b.WriteString(s[i : i+n])
				prevVisible = false
			} else {
				r.Invisible++
			}
		case Invisible(ru):
			r.Invisible++
		default:
			b.WriteString(s[i : i+n])
			prevVisible = !isSpace(ru)
		}
		i += n
	}
	return b.String(), r
}

// firstUnclean returns the index of the first byte Output would change,
// or len(s), and whether the rune before it is visible (a variation
// selector may follow it). Printable ASCII, tab, newline and visible
// runes pass.
func firstUnclean(s string) (int, bool) {
	prevVisible := false
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if (c < 0x20 && c != '\t' && c != '\n') || c == 0x7f {
				return i, prevVisible
			}
			prevVisible = c != ' ' && c != '\t' && c != '\n'
			i++
			continue
		}
		ru, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case ru == utf8.RuneError && n <= 1, ru < 0xa0, Invisible(ru):
			return i, prevVisible
		case isVariationSelector(ru):
			if !prevVisible {
				return i, prevVisible
			}
			prevVisible = false
		default:
			prevVisible = !isSpace(ru)
		}
		i += n
	}
	return len(s), prevVisible
}

func isSpaceByte(c byte) bool { return c == ' ' || c == '\t' || c == '\n' }

// skipInvalid returns the index past the run of invalid UTF-8 at s[i].
func skipInvalid(s string, i int) int {
	for i < len(s) {
		if ru, size := utf8.DecodeRuneInString(s[i:]); ru != utf8.RuneError || size > 1 {
			break
		}
		i++
	}
	return i
}

// skipC1 handles the C1 control ru (U+0080–U+009F), written as UTF-8 and
// ending before s[i]: the introducers of CSI and control strings skip
// their sequence, the others go alone. It returns the index to go on at.
func skipC1(s string, i int, ru rune, r *Report) int {
	switch ru {
	case 0x9b: // CSI
		r.Escapes++
		return skipCSI(s, i)
	case 0x9d, 0x90, 0x98, 0x9e, 0x9f: // OSC, DCS, SOS, PM, APC
		r.Escapes++
		return skipString(s, i)
	}
	r.Controls++
	return i
}

// isPlain reports whether s is printable ASCII, tabs and single newlines
// with no white space at either end: text Text leaves alone.
func isPlain(s string) bool {
	if s == "" {
		return true
	}
	if isSpaceByte(s[0]) || isSpaceByte(s[len(s)-1]) {
		return false
	}
	run := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			if run++; run > 1 {
				return false
			}
		case c == '\n':
			if i > 0 && isSpaceByte(s[i-1]) {
				return false
			}
			run = 0
		case c < 0x20 || c >= 0x7f:
			return false
		default:
			run = 0
		}
	}
	return true
}

// textBuilder builds the output of Text: it holds white space back until
// the next visible character, so that runs can be shortened and trailing
// white space dropped, and clips at max characters.
type textBuilder struct {
	b       strings.Builder
	max     int // characters; < 1 for no limit
	n       int // characters written
	cut     int // byte length of b when n was max-1; -1 before
	full    bool
	clipped int // characters dropped once full

	newlines int // pending line breaks
	spaces   []byte
}

// space records a white-space character: ' ', '\t' or '\n'.
func (c *textBuilder) space(ru rune, r *Report) {
	if ru == '\n' {
		// Spaces before a line break are dropped, silently.
		c.spaces = c.spaces[:0]
		if c.newlines == maxNewlineRun {
			r.Whitespace++
			return
		}
		c.newlines++
		return
	}
	if len(c.spaces) == maxSpaceRun {
		r.Whitespace++
		return
	}
	c.spaces = append(c.spaces, byte(ru))
}

// rune writes a visible character of size bytes, after the pending white
// space unless this is the start of the text.
func (c *textBuilder) rune(ru rune, size int) {
	if c.n > 0 {
		for range c.newlines {
			c.put('\n', 1)
		}
		for _, sp := range c.spaces {
			c.put(rune(sp), 1)
		}
	}
	c.newlines, c.spaces = 0, c.spaces[:0]
	c.put(ru, size)
}

// ascii writes a run of printable ASCII characters other than space.
func (c *textBuilder) ascii(run string) {
	if c.max > 0 && c.n+c.newlines+len(c.spaces)+len(run) >= c.max {
		for i := 0; i < len(run); i++ {
			c.rune(rune(run[i]), 1)
		}
		return
	}
	if c.n > 0 {
		for range c.newlines {
			c.b.WriteByte('\n')
		}
		c.b.Write(c.spaces)
		c.n += c.newlines + len(c.spaces)
	}
	c.newlines, c.spaces = 0, c.spaces[:0]
	c.b.WriteString(run)
	c.n += len(run)
}

// put writes one character, or, past the limit, clips.
func (c *textBuilder) put(ru rune, size int) {
	if c.full {
		c.clipped++
		return
	}
	if c.max > 0 && c.n == c.max-1 {
		c.cut = c.b.Len()
	}
	if c.max > 0 && c.n == c.max {
		// One character too many: go back to max-1 and end with the
		// ellipsis. Everything written after cut is clipped.
		s := c.b.String()
		dropped := utf8.RuneCountInString(s[c.cut:]) + 1
		trimmed := strings.TrimRight(s[:c.cut], " \t\n")
		dropped += utf8.RuneCountInString(s[len(trimmed):c.cut])
		c.b.Reset()
		c.b.WriteString(trimmed)
		c.b.WriteRune(ellipsis)
		c.full, c.clipped = true, dropped
		return
	}
	if size == 1 {
		c.b.WriteByte(byte(ru))
	} else {
		c.b.WriteRune(ru)
	}
	c.n++
}

// skipEscape returns the index just past the escape sequence whose ESC
// byte precedes s[i].
func skipEscape(s string, i int) int {
	if i >= len(s) {
		return i
	}
	switch s[i] {
	case '[':
		return skipCSI(s, i+1)
	case ']', 'P', 'X', '^', '_':
		return skipString(s, i+1)
	}
	// nF escapes: intermediates 0x20–0x2F, then one final byte; with no
	// intermediate, the two-byte Fp, Fe and Fs escapes.
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
		i++
	}
	if i < len(s) && s[i] >= 0x30 && s[i] <= 0x7e {
		i++
	}
	return i
}

// skipCSI returns the index just past a CSI sequence whose introducer
// ends before s[i]: parameter bytes 0x30–0x3F, intermediate bytes
// 0x20–0x2F, one final byte 0x40–0x7E. A byte outside that grammar ends
// the sequence and is kept.
func skipCSI(s string, i int) int {
	for i < len(s) && s[i] >= 0x30 && s[i] <= 0x3f {
		i++
	}
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
		i++
	}
	if i < len(s) && s[i] >= 0x40 && s[i] <= 0x7e {
		i++
	}
	return i
}

// skipString returns the index just past a control string (OSC, DCS and
// the like) whose introducer ends before s[i]: up to BEL, ESC \ or
// U+009C, or the end of s.
func skipString(s string, i int) int {
	for i < len(s) {
		switch {
		case s[i] == 0x07:
			return i + 1
		case s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\':
			return i + 2
		case s[i] == 0xc2 && i+1 < len(s) && s[i+1] == 0x9c:
			return i + 2
		}
		i++
	}
	return i
}

// isVariationSelector reports whether ru is one of the standard variation
// selectors U+FE00–U+FE0F.
func isVariationSelector(ru rune) bool { return ru >= 0xfe00 && ru <= 0xfe0f }

// IsVariationSelector reports whether ru is one of the standard variation
// selectors U+FE00–U+FE0F, which are kept only directly after a visible
// character, one at a time.
func IsVariationSelector(ru rune) bool { return isVariationSelector(ru) }

// Invisible reports whether ru is on the list of invisible characters
// that are always removed (see the package documentation); the standard
// variation selectors, kept after a visible character, are not.
func Invisible(ru rune) bool {
	if ru < 0x10000 {
		return ru >= 0xa0 && bmpInvisible[ru>>6]&(1<<(ru&63)) != 0
	}
	switch {
	case ru >= 0xe0000 && ru <= 0xe007f, // tags block, assigned or not
		ru >= 0xe0100 && ru <= 0xe01ef: // ideographic variation selectors
		return true
	}
	return unicode.Is(unicode.Cf, ru)
}

// bmpInvisible is the list of invisible characters below U+10000 as a
// bitmap, so that the check costs one load per character: every format
// character (Unicode category Cf), the combining grapheme joiner, the
// Hangul fillers and the Mongolian variation selectors and vowel
// separator. It is built once, from package unicode's tables, and never
// changes.
var bmpInvisible = func() *[1 << 10]uint64 {
	var m [1 << 10]uint64
	set := func(lo, hi rune) {
		for r := lo; r <= hi && r < 0x10000; r++ {
			m[r>>6] |= 1 << (r & 63)
		}
	}
	for _, rg := range unicode.Cf.R16 {
		for r := rune(rg.Lo); r <= rune(rg.Hi); r += rune(rg.Stride) {
			set(r, r)
		}
	}
	set(0x034f, 0x034f) // combining grapheme joiner
	set(0x115f, 0x1160) // Hangul fillers
	set(0x3164, 0x3164)
	set(0xffa0, 0xffa0)
	set(0x180b, 0x180f) // Mongolian variation selectors and vowel separator
	return &m
}()

// isSpace reports whether ru is white space, cheaply for the common
// letters: the only white space above Latin-1 lies in U+1680–U+3000.
func isSpace(ru rune) bool {
	if ru < 0x1680 {
		return ru <= 0xff && unicode.IsSpace(ru)
	}
	return ru <= 0x3000 && unicode.IsSpace(ru)
}

// isZs reports whether ru is a space separator (category Zs), cheaply
// for the common letters.
func isZs(ru rune) bool {
	if ru < 0x1680 {
		return ru == 0xa0
	}
	return ru <= 0x3000 && unicode.Is(unicode.Zs, ru)
}

// Display cleans s for one line or one table cell of a terminal: [Text]
// with no limit, then each line break and tab as a space, so that a
// server's text can neither start a line of its own in voltmcp's output
// nor shift a table's columns.
func Display(s string) string {
	out, _ := Text(s, 0)
	if strings.ContainsAny(out, "\n\t") {
		out = strings.NewReplacer("\n", " ", "\t", " ").Replace(out)
	}
	return out
}

// String says what was removed, for notes: for example "removed 2
// escape sequences, 14 invisible characters". It is "" when nothing was.
func (r Report) String() string {
	var parts []string
	add := func(n int, one, many string) {
		switch {
		case n == 1:
			parts = append(parts, "1 "+one)
		case n > 1:
			parts = append(parts, fmt.Sprintf("%d %s", n, many))
		}
	}
	add(r.Escapes, "escape sequence", "escape sequences")
	add(r.Controls, "control character", "control characters")
	add(r.Invisible, "invisible character", "invisible characters")
	add(r.InvalidUTF8, "invalid UTF-8 sequence", "invalid UTF-8 sequences")
	if len(parts) == 0 {
		return ""
	}
	return "removed " + strings.Join(parts, ", ")
}
