package bound

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ValidName reports whether name is a tool name voltmcp accepts: 1 to 64
// bytes, each an ASCII letter, digit, '_' or '-'. A name that fails is
// dropped, never repaired: a repaired name would not be the name anyone
// allowed or the server knows.
func ValidName(name string) bool {
	if len(name) == 0 || len(name) > maxNameLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Report counts what cleaning and bounding removed or changed. The zero
// Report means nothing was. Reports add up with [Report.Add].
type Report struct {
	// Escapes is the number of terminal escape sequences (CSI, OSC, DCS
	// and the like) removed.
	Escapes int `json:"escapes,omitempty"`
	// Controls is the number of C0 and C1 control characters removed,
	// other than the tab, newline and carriage return.
	Controls int `json:"controls,omitempty"`
	// Invisible is the number of invisible characters removed: format
	// characters such as zero-width spaces and joiners, bidi embeddings,
	// overrides and isolates, the tags block, excess variation selectors.
	Invisible int `json:"invisible,omitempty"`
	// InvalidUTF8 is the number of runs of bytes that were not UTF-8,
	// each replaced by one U+FFFD.
	InvalidUTF8 int `json:"invalidUTF8,omitempty"`
	// Whitespace is the number of white-space characters removed from
	// over-long runs.
	Whitespace int `json:"whitespace,omitempty"`
	// Clipped is the number of characters cut off at a length limit.
	Clipped int `json:"clipped,omitempty"`
	// EnumValues is the number of enum values dropped from schemas.
	EnumValues int `json:"enumValues,omitempty"`
	// Refs is the number of $ref, $dynamicRef and $recursiveRef keywords
	// seen in schemas; they are kept as written and never followed.
	Refs int `json:"refs,omitempty"`
	// Notes says in words what was clipped or dropped inside a tool's
	// metadata, such as "annotations dropped: …", at most maxNotes.
	Notes []string `json:"notes,omitempty"`
}

// maxNotes bounds Report.Notes.
const maxNotes = 16

// Add adds the counts and notes of o to r.
func (r *Report) Add(o Report) {
	r.Escapes += o.Escapes
	r.Controls += o.Controls
	r.Invisible += o.Invisible
	r.InvalidUTF8 += o.InvalidUTF8
	r.Whitespace += o.Whitespace
	r.Clipped += o.Clipped
	r.EnumValues += o.EnumValues
	r.Refs += o.Refs
	for _, n := range o.Notes {
		r.note(n)
	}
}

// note adds a note, up to maxNotes.
func (r *Report) note(s string) {
	if len(r.Notes) < maxNotes {
		r.Notes = append(r.Notes, s)
	}
}

// Changed reports whether anything was removed or clipped. Refs, which
// are only counted, do not count as a change.
func (r Report) Changed() bool {
	return r.Escapes+r.Controls+r.Invisible+r.InvalidUTF8+r.Whitespace+r.Clipped+r.EnumValues > 0 || len(r.Notes) > 0
}

// String says what was changed, for status lines and events: for example
// "removed 2 escape sequences, 14 invisible characters; clipped 310
// characters". It is "" when nothing was.
func (r Report) String() string {
	var removed, parts []string
	add := func(list *[]string, n int, one, many string) {
		switch {
		case n == 1:
			*list = append(*list, "1 "+one)
		case n > 1:
			*list = append(*list, fmt.Sprintf("%d %s", n, many))
		}
	}
	add(&removed, r.Escapes, "escape sequence", "escape sequences")
	add(&removed, r.Controls, "control character", "control characters")
	add(&removed, r.Invisible, "invisible character", "invisible characters")
	add(&removed, r.Whitespace, "excess white-space character", "excess white-space characters")
	add(&removed, r.EnumValues, "enum value", "enum values")
	if len(removed) > 0 {
		parts = append(parts, "removed "+strings.Join(removed, ", "))
	}
	if r.InvalidUTF8 > 0 {
		parts = append(parts, fmt.Sprintf("replaced %d invalid UTF-8 sequences", r.InvalidUTF8))
	}
	if r.Clipped > 0 {
		parts = append(parts, fmt.Sprintf("clipped %d characters", r.Clipped))
	}
	parts = append(parts, r.Notes...)
	return strings.Join(parts, "; ")
}

// Text cleaning limits.
const (
	// maxSpaceRun is the longest run of spaces and tabs kept.
	maxSpaceRun = 8
	// maxNewlineRun is the most consecutive line breaks kept: two blank
	// lines.
	maxNewlineRun = 3
	// ellipsis marks clipped text.
	ellipsis = '…'
)

// SanitizeText cleans text from an untrusted server for people and models
// and clips it to maxChars characters (runes), ellipsis included; maxChars
// below 1 means no clipping. In order:
//
//   - terminal escape sequences are removed whole: CSI (ESC [ or U+009B,
//     up to its final byte), OSC, DCS, SOS, PM and APC strings (ESC ], P,
//     X, ^, _ or their C1 forms, up to BEL, ESC \ or U+009C, else to the
//     end of the text), and two- and three-byte escapes;
//   - C0 and C1 control characters and DEL are removed, except tab and
//     newline; a carriage return becomes a newline, or disappears before
//     one (Windows line ends are not counted as changes);
//   - invisible characters are removed: every format character (Unicode
//     category Cf: zero-width space and joiners, U+200E/U+200F marks, bidi
//     embeddings, overrides and isolates, U+061C, U+2060–U+2064 word
//     joiner and invisible operators, U+FEFF, soft hyphen, interlinear
//     annotations, the tags block U+E0000–U+E007F), the combining grapheme
//     joiner, Hangul fillers, Mongolian variation selectors, the
//     ideographic variation selectors U+E0100–U+E01EF, and any variation
//     selector U+FE00–U+FE0F that does not directly follow a visible
//     character (one after a character is kept, so that emoji still
//     render; a run of them, which can smuggle data, is not);
//   - invalid UTF-8 is replaced, one U+FFFD per run of bad bytes: a
//     visible mark rather than silent splicing of the text around it;
//   - Unicode spaces become ASCII spaces and the line and paragraph
//     separators newlines; runs of spaces and tabs are cut to 8, runs of
//     line breaks to 3, spaces before a line break and at either end of
//     the text are dropped;
//   - the result is clipped on a character boundary, ending in "…".
//
// The output is valid UTF-8. Report counts what went; once the text is
// clipped, cleaning stops, and Report.Clipped counts the rest of the input
// as it came.
func SanitizeText(s string, maxChars int) (string, Report) {
	var r Report
	if isPlain(s) && (maxChars < 1 || len(s) <= maxChars) {
		return s, r
	}
	c := cleaner{max: maxChars, cut: -1}
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
			// One U+FFFD for the whole run of invalid bytes.
			for i < len(s) {
				if ru, size = utf8.DecodeRuneInString(s[i:]); ru != utf8.RuneError || size > 1 {
					break
				}
				i++
			}
			r.InvalidUTF8++
			c.rune(utf8.RuneError, utf8.RuneLen(utf8.RuneError))
			prevVisible = true
			continue
		}
		i += size
		switch {
		case ru == 0x9b: // C1 CSI
			i = skipCSI(s, i)
			r.Escapes++
		case ru == 0x9d || ru == 0x90 || ru == 0x98 || ru == 0x9e || ru == 0x9f: // C1 OSC, DCS, SOS, PM, APC
			i = skipString(s, i)
			r.Escapes++
		case ru < 0xa0: // other C1 controls
			r.Controls++
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
		case isInvisible(ru):
			r.Invisible++
		case unicode.Is(unicode.Zs, ru):
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

// isPlain reports whether s is printable ASCII, tabs and single newlines
// with no white space at either end: text SanitizeText leaves alone.
func isPlain(s string) bool {
	if s == "" {
		return true
	}
	if s[0] == ' ' || s[0] == '\t' || s[0] == '\n' || s[len(s)-1] == ' ' || s[len(s)-1] == '\t' || s[len(s)-1] == '\n' {
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
			if i > 0 && (s[i-1] == ' ' || s[i-1] == '\t' || s[i-1] == '\n') {
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

// cleaner builds the output of SanitizeText: it holds white space back
// until the next visible character, so that runs can be shortened and
// trailing white space dropped, and clips at max characters.
type cleaner struct {
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
func (c *cleaner) space(ru rune, r *Report) {
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
func (c *cleaner) rune(ru rune, size int) {
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
func (c *cleaner) ascii(run string) {
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
func (c *cleaner) put(ru rune, size int) {
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
	// nF escapes: intermediates 0x20–0x2F, then one final byte.
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

// isInvisible reports whether ru renders as nothing (or is meant to
// change how what follows renders) and is dropped.
func isInvisible(ru rune) bool {
	switch {
	case ru == 0x034f, // combining grapheme joiner
		ru == 0x115f, ru == 0x1160, ru == 0x3164, ru == 0xffa0, // Hangul fillers
		ru >= 0x180b && ru <= 0x180f,   // Mongolian variation selectors and vowel separator
		ru >= 0xe0000 && ru <= 0xe007f, // tags block, assigned or not
		ru >= 0xe0100 && ru <= 0xe01ef: // ideographic variation selectors
		return true
	}
	return unicode.Is(unicode.Cf, ru)
}
