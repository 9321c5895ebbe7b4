package policies

import (
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode/utf8"
)

// A prefilter lets a value pattern skip text that cannot match it. Go's
// regexp runs an NFA over the whole text for patterns without a literal
// prefix, which costs milliseconds per pattern on a 50 KB output. Most
// patterns need one of a few literals ("bearer", "token", "://"); when a
// pattern also cannot match across a line break, it only has to run on the
// lines where such a literal occurs.
type prefilter struct {
	lits      []string // one of these must occur in any match; nil: none known
	fold      bool     // lits are lower case and compared case-insensitively
	lineLocal bool     // no match spans a newline or depends on text edges
}

func newPrefilter(pattern string) prefilter {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return prefilter{}
	}
	re = re.Simplify()
	lits, fold, ok := requiredLiterals(re)
	if !ok {
		return prefilter{}
	}
	return prefilter{lits: lits, fold: fold, lineLocal: !spansLines(re)}
}

// requiredLiterals returns literals one of which occurs in every match.
func requiredLiterals(re *syntax.Regexp) (lits []string, fold, ok bool) {
	switch re.Op {
	case syntax.OpLiteral:
		s := string(re.Rune)
		fold = re.Flags&syntax.FoldCase != 0
		if fold {
			if !isASCII(s) {
				return nil, false, false
			}
			s = lowerASCII(s)
		}
		return []string{s}, fold, s != ""
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLiterals(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredLiterals(re.Sub[0])
		}
	case syntax.OpConcat:
		best := -1
		for _, sub := range re.Sub {
			l, f, k := requiredLiterals(sub)
			if !k {
				continue
			}
			if m := shortest(l); m > best {
				best, lits, fold, ok = m, l, f, true
			}
		}
		return lits, fold, ok
	case syntax.OpAlternate:
		for _, sub := range re.Sub {
			l, f, k := requiredLiterals(sub)
			if !k {
				return nil, false, false
			}
			lits, fold = append(lits, l...), fold || f
		}
		if fold {
			for i, l := range lits {
				if !isASCII(l) {
					return nil, false, false
				}
				lits[i] = lowerASCII(l)
			}
		}
		return lits, fold, len(lits) > 0
	}
	return nil, false, false
}

func shortest(lits []string) int {
	m := -1
	for _, l := range lits {
		if m < 0 || len(l) < m {
			m = len(l)
		}
	}
	return m
}

// spansLines reports whether a match could include a newline or depend
// on where the text begins or ends.
func spansLines(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpAnyChar, syntax.OpBeginText, syntax.OpEndText:
		return true
	case syntax.OpLiteral:
		return slices.Contains(re.Rune, '\n')
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			if re.Rune[i] <= '\n' && '\n' <= re.Rune[i+1] {
				return true
			}
		}
		return false
	}
	return slices.ContainsFunc(re.Sub, spansLines)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// lowerASCII lowers ASCII letters only, so byte offsets stay valid.
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// findAll returns the submatch indexes of re in s like
// FindAllStringSubmatchIndex, using the prefilter to skip text. lower is
// s with ASCII lowered (computed on demand and cached by the caller).
func (f prefilter) findAll(re *regexp.Regexp, s string, lower func() string) [][]int {
	if f.lits == nil {
		return re.FindAllStringSubmatchIndex(s, -1)
	}
	hay := s
	if f.fold {
		hay = lower()
	}
	if !f.lineLocal {
		for _, l := range f.lits {
			if strings.Contains(hay, l) {
				return re.FindAllStringSubmatchIndex(s, -1)
			}
		}
		return nil
	}
	var lines [][2]int
	for _, l := range f.lits {
		for from := 0; from < len(hay); {
			i := strings.Index(hay[from:], l)
			if i < 0 {
				break
			}
			at := from + i
			start := strings.LastIndexByte(s[:at], '\n') + 1
			end := len(s)
			if j := strings.IndexByte(s[at:], '\n'); j >= 0 {
				end = at + j
			}
			lines = append(lines, [2]int{start, end})
			from = end + 1
		}
	}
	if len(lines) == 0 {
		return nil
	}
	slices.SortFunc(lines, func(a, b [2]int) int { return a[0] - b[0] })
	lines = slices.Compact(lines)
	var out [][]int
	for _, ln := range lines {
		for _, m := range re.FindAllStringSubmatchIndex(s[ln[0]:ln[1]], -1) {
			for k := range m {
				if m[k] >= 0 {
					m[k] += ln[0]
				}
			}
			out = append(out, m)
		}
	}
	return out
}
