package bound

import (
	"fmt"
	"strings"

	"github.com/voltmcp/voltmcp/sanitize"
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

// SanitizeText cleans text from an untrusted server for people and models
// and clips it to maxChars characters (runes), ellipsis included; maxChars
// below 1 means no clipping. It is [sanitize.Text], whose list of what is
// removed (escape sequences, controls, invisible characters, invalid
// UTF-8) every surface shares, with its counts as a Report.
func SanitizeText(s string, maxChars int) (string, Report) {
	out, sr := sanitize.Text(s, maxChars)
	return out, Report{Escapes: sr.Escapes, Controls: sr.Controls, Invisible: sr.Invisible,
		InvalidUTF8: sr.InvalidUTF8, Whitespace: sr.Whitespace, Clipped: sr.Clipped}
}
